"""Staged agent rollouts: a version served to canary hosts first, to every host once the canaries have
run it healthy for a soak time, and to no further host once a health check failed anywhere.

An admin starts one (``startAgentRollout``) naming the canaries, or a percentage of the hosts picked
by a hash of the version and the host (stable for a rollout, different from one to the next). From
then on the channel (:func:`channel_document`) answers each agent by who it is:

- a canary, or any host once the rollout is promoted: the rollout's version;
- any other host: the baseline, what the channel served every host when the rollout started (the
  pin, the previous rollout's version, else the highest version published below the new one).

The orchestrator is stateless: the rollout is one ConfigMap of the platform namespace (kind
``agent-release``, id ``rollout``, beside the pin), and what is written there after the start is
learnt from the hosts. Each agent's channel request says which host it is and how its last update went
(``agent.update.channel.report_url``); what a report would change is written once:

- a host running the rollout's version is healthy from the first report that says so (``healthy``);
- a host whose update to that version was rolled back (it failed its health check) halts the
  rollout, naming the host and the agent's own words (``halted``).

The channel has no caller identity, so a report is only a hint: before it changes the rollout, the
orchestrator asks that host's agent (GetInfo, over the agents' mTLS channel, whose certificate names
the host) what it runs and how its last update went, within the agents' call timeout
(FLEXPLANE_AGENT_TIMEOUT). Only what the agent itself says is recorded (its message, not the
query's). A report for a host the catalog does not hold, one the agent contradicts, or one whose agent
cannot be asked changes nothing and is logged (no more than ``LOG_BURST`` lines a minute): the agent
reports again on its next check. A forged report thus neither halts a rollout nor counts a host
healthy early; the channel's answer to it is only what the host it names would be served. Only a
report that would change the rollout costs a call to an agent (a host counted already, or a failure
once the rollout is halted, costs none).

The rollout is promoted when every canary is healthy and the last of them has been for the soak time.
A halted rollout serves its version only to hosts that run it already: it reaches no further host
until an admin resumes it (the failed host is then excused from the canaries) or starts another one.
A completed rollout stays: it holds the fleet at its version, and a newly published version reaches
the hosts only through a rollout of its own (or a pin). Pinning a version ends any rollout.

- ``model``: the rollout, its halt and a host's report, as values (what is served, taught, its phase);
- ``records``: its ConfigMap, read and written at its resource version;
- ``reports``: the channel's answer to a host, and what its confirmed report teaches the rollout;
- ``admin``: start, halt, resume, and the rollout's status as the API and the portal show it.

The metric ``flexplane_agent_rollout_halted`` is the metrics layer's (``orchestrator.metrics_http``).
"""

from orchestrator.services.rollouts.admin import (
    RolloutStatus,
    channel,
    halt_rollout,
    resume_rollout,
    rollout,
    start_rollout,
)
from orchestrator.services.rollouts.model import (
    CANARY,
    COMPLETE,
    DEFAULT_SOAK_MINUTES,
    HALTED,
    HALTS,
    KIND,
    MAX_REPORT_FIELD,
    MAX_SOAK_MINUTES,
    PHASES,
    ROLLED_BACK,
    ROLLING_OUT,
    ROLLOUT_ID,
    RUNS,
    SOAKING,
    Halt,
    HostReport,
    Rollout,
)
from orchestrator.services.rollouts.records import current
from orchestrator.services.rollouts.reports import LOG_BURST, LOG_WINDOW, LogBudget, channel_document

__all__ = [
    "CANARY",
    "COMPLETE",
    "DEFAULT_SOAK_MINUTES",
    "HALTED",
    "HALTS",
    "KIND",
    "LOG_BURST",
    "LOG_WINDOW",
    "MAX_REPORT_FIELD",
    "MAX_SOAK_MINUTES",
    "PHASES",
    "ROLLED_BACK",
    "ROLLING_OUT",
    "ROLLOUT_ID",
    "RUNS",
    "SOAKING",
    "Halt",
    "HostReport",
    "LogBudget",
    "Rollout",
    "RolloutStatus",
    "channel",
    "channel_document",
    "current",
    "halt_rollout",
    "resume_rollout",
    "rollout",
    "start_rollout",
]
