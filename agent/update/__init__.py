"""Self-update: check the platform's release channel, verify, install beside, restart into it, roll back.

The serving agent (:class:`Updater`, a task of ``agent.server.serve``), every update_interval:

1. asks the channel (update_channel_url, over HTTPS) for its release and whether an admin pinned
   it: where the site publishes to a registry, the release's digest there, whose OCI manifest
   and signed manifest it pulls by that digest with the node's read-only access
   (update_registry_credentials, :mod:`~agent.update.registry`); else the signed manifest itself
   (:mod:`agent.release`), its artifact served beside the channel. The request says which host
   asks, the version it runs and how its last update went (``report_url``): during a staged
   rollout the channel answers by host, and a rolled-back update halts the rollout;
2. verifies the manifest's signature against release_public_key (and that the registry's zipapp
   layer is the artifact it names) and decides: a newer version, or the pinned one even if older.
   A downgrade without a pin is refused; a version that was rolled back is not tried again (until
   the channel serves other bytes for it);
3. downloads the artifact (from the registry by its digest, or beside the channel) to a temporary
   file in install_dir, never more than the manifest's size, and checks its size, sha256 and the
   version stamped inside: a partial, tampered or mislabelled file is refused;
4. installs it beside the running version (versions/<version>) and hands over to
   ``flexplane-agent update-apply``: a detached process (in a transient systemd unit on a node,
   update_apply_launcher) that outlives the agent's restart.

The apply step (:func:`apply`) runs the old version's code, known to work. It points ``current``
at the new version (``previous`` at the old), runs service_restart_command, and waits up to
health_deadline for the agent on ``listen`` to answer the health check and GetInfo with the new
version, over mTLS with the node's own certificate (agent.auth lets it ask just those). If it
does not, ``current`` goes back, the service restarts again, and the rollback is recorded.

``flexplane-agent update now`` on the node and the orchestrator's ``Agent.UpdateNow`` (an admin's
"update this host now") run the same check at once (:mod:`~agent.update.now`).

Every outcome lands in the state file (update_state_file): GetInfo reports it and it survives
restarts. Refusals leave the running agent alone. A lock file keeps one update at a time.

``flexplane-agent bootstrap`` installs a node's first release with the same steps
(:func:`fetch_channel`, ``verify``, :func:`install_release`), so it refuses what an update would.

The package's modules: :mod:`~agent.update.state` (the state file, the lock, the plan),
:mod:`~agent.update.channel` (steps 1 to 3), :mod:`~agent.update.registry` (the OCI registry:
push, pull by digest), :mod:`~agent.update.updater` (the serving agent's loop, step 4),
:mod:`~agent.update.now` (the node's command) and :mod:`~agent.update.apply` (the apply step).
"""

from agent.update.apply import AGENT_SERVICE, apply, apply_plan
from agent.update.channel import (
    ChannelRelease,
    NoRelease,
    UpdateFailed,
    fetch_channel,
    install_release,
    refuses,
)
from agent.update.state import LOCK_WAIT, RESULT_NAMES, RESULTS, Plan, Result, StateFile, outcome, update_lock
from agent.update.updater import UpdateOff, Updater, Updates, dial_address

__all__ = [
    "AGENT_SERVICE",
    "LOCK_WAIT",
    "RESULTS",
    "RESULT_NAMES",
    "ChannelRelease",
    "NoRelease",
    "Plan",
    "Result",
    "StateFile",
    "UpdateFailed",
    "UpdateOff",
    "Updater",
    "Updates",
    "apply",
    "apply_plan",
    "dial_address",
    "fetch_channel",
    "install_release",
    "outcome",
    "refuses",
    "update_lock",
]
