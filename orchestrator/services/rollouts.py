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
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.version import InvalidVersion, Version
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

from agentclient.identity import is_dns_label
from orchestrator.auth import Principal
from orchestrator.errors import Conflict, FlexPlaneError, NotFound, ValidationFailed
from orchestrator.models import Host
from orchestrator.models.zones import host_ident
from orchestrator.services import access, catalog, releases
from orchestrator.services.context import Context, Sources, process_kube
from orchestrator.sources.protocols import KubeApi
from orchestrator.sources.proxmox import AgentReport

logger = logging.getLogger(__name__)

KIND, ROLLOUT_ID = releases.PIN_KIND, releases.ROLLOUT_ID
MAX_SOAK_MINUTES = 7 * 24 * 60
DEFAULT_SOAK_MINUTES = 60
# The agent's word (agent.update.state.RESULT_NAMES) for an update whose health check failed.
ROLLED_BACK = "rolled-back"
MAX_REPORT_FIELD = 200
# What a report would change: a halt, or a host counted as running the version.
HALTS, RUNS = "halts", "runs"
# Reports not recorded are logged at most this many times a minute (forged ones could come in floods).
LOG_BURST, LOG_WINDOW = 10, 60.0
# Who the channel acts as when it reads the catalog and asks an agent: nothing a role guards.
_CHANNEL = Principal(subject="flexplane-release-channel", name="release channel", email="", roles=frozenset())

CANARY, SOAKING, ROLLING_OUT, COMPLETE, HALTED = "CANARY", "SOAKING", "ROLLING_OUT", "COMPLETE", "HALTED"
PHASES = (CANARY, SOAKING, ROLLING_OUT, COMPLETE, HALTED)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


@dataclass(frozen=True)
class HostReport:
    """What an agent says of itself when it asks the channel: which host, what it runs, its last update.
    From the query a hint only (anyone may send one); from the agent's GetInfo what is recorded."""

    host: str
    running: str
    result: str = ""
    to_version: str = ""
    message: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> HostReport | None:
        """The report in a channel request's query, or None when it names no host (an older agent)."""
        zone, node = query.get("zone", ""), query.get("node", "")
        if not (is_dns_label(zone) and is_dns_label(node)):
            return None

        def said(name: str) -> str:
            return str(query.get(name, ""))[:MAX_REPORT_FIELD]

        return cls(f"{zone}/{node}", said("running"), said("result"), said("to"), said("message"))

    @classmethod
    def from_agent(cls, host: str, said: AgentReport) -> HostReport:
        """What the host's agent itself answered (GetInfo): the version it runs and its last update."""
        update = said.last_update
        return cls(host, said.version, update.result, update.to_version, update.message[:MAX_REPORT_FIELD])

    @property
    def words(self) -> str:
        """What it says, for a log line (quoted: a query's words are anyone's)."""
        last = f", its last update {self.result!r} (to {self.to_version!r})" if self.to_version else ""
        return f"it runs {self.running!r}{last}"


@dataclass(frozen=True)
class Halt:
    """Where and why a rollout stopped: the host whose health check failed ("" when an admin halted it)."""

    host: str
    message: str
    at: datetime.datetime


@dataclass(frozen=True)
class Rollout:
    """A rollout as stored: what the admin asked for, and what the hosts reported since."""

    version: str
    baseline: str
    canaries: tuple[str, ...]
    soak_minutes: int
    started_by: str
    started_at: datetime.datetime
    canary_percent: int | None = None
    healthy: Mapping[str, datetime.datetime] = field(default_factory=dict)
    halt: Halt | None = None
    # Hosts whose failed health check an admin excused by resuming: it halts the rollout no more, and
    # a canary among them is not waited for.
    excused: tuple[str, ...] = ()

    # ------------------------------------------------------------------------------ derived

    @property
    def waiting_for(self) -> tuple[str, ...]:
        return tuple(h for h in self.canaries if h not in self.excused)

    @property
    def healthy_since(self) -> datetime.datetime | None:
        """When the last canary waited for became healthy: the soak counts from there."""
        waited = self.waiting_for
        if not all(host in self.healthy for host in waited):
            return None
        return max((self.healthy[host] for host in waited), default=self.started_at)

    @property
    def promotes_at(self) -> datetime.datetime | None:
        since = self.healthy_since
        return None if since is None else since + datetime.timedelta(minutes=self.soak_minutes)

    def promoted(self, now: datetime.datetime) -> bool:
        at = self.promotes_at
        return self.halt is None and at is not None and now >= at

    def phase(self, now: datetime.datetime, hosts: list[str] | None = None) -> str:
        """HALTED, CANARY, SOAKING, ROLLING_OUT, or COMPLETE when every one of ``hosts`` runs it."""
        if self.halt is not None:
            return HALTED
        if self.healthy_since is None:
            return CANARY
        if not self.promoted(now):
            return SOAKING
        if hosts is not None and all(h in self.healthy or h in self.excused for h in hosts):
            return COMPLETE
        return ROLLING_OUT

    def serves(self, report: HostReport | None, now: datetime.datetime) -> tuple[str, bool]:
        """The version the channel offers the reporting host, and whether it may be a downgrade: the
        rollout's version may (an admin chose it), the baseline may not (a host outside the waves that
        runs something newer keeps it)."""
        downgrade = bool(self.baseline) and Version(self.version) < Version(self.baseline)
        if self.halt is not None:
            if report is not None and report.running == self.version:
                return self.version, downgrade
            return self.baseline, False
        if (report is not None and report.host in self.canaries) or self.promoted(now):
            return self.version, downgrade
        return self.baseline, False

    def teaches(self, report: HostReport | None) -> str:
        """What ``report`` would change: HALTS (its update to this version was rolled back, and it is
        not excused), RUNS (the first report of it running this version), or "" (nothing)."""
        if report is None:
            return ""
        failed = report.result == ROLLED_BACK and report.to_version == self.version
        if self.halt is None and failed and report.host not in self.excused:
            return HALTS
        if report.running == self.version and report.host not in self.healthy:
            return RUNS
        return ""

    def observed(self, report: HostReport | None, now: datetime.datetime) -> Rollout:
        """The rollout with what ``report`` teaches (itself when nothing): a host healthy, or the halt."""
        taught = self.teaches(report)
        if report is None or not taught:
            return self
        if taught == HALTS:
            said = f": {report.message}" if report.message else ""
            message = f"{self.version} failed its health check on {report.host} and was rolled back{said}"
            return replace(self, halt=Halt(report.host, message, now))
        return replace(self, healthy={**self.healthy, report.host: now})

    # ----------------------------------------------------------------------------- storage

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "version": self.version,
            "baseline": self.baseline,
            "canaries": list(self.canaries),
            "soakMinutes": self.soak_minutes,
            "startedBy": self.started_by,
            "startedAt": self.started_at.isoformat(),
            "healthy": {host: at.isoformat() for host, at in sorted(self.healthy.items())},
            "excused": list(self.excused),
        }
        if self.canary_percent is not None:
            spec["canaryPercent"] = self.canary_percent
        if self.halt is not None:
            spec["halted"] = {
                "host": self.halt.host,
                "message": self.halt.message,
                "at": self.halt.at.isoformat(),
            }
        return spec

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Rollout:
        """The stored rollout; KeyError, ValueError or TypeError when it is not one."""
        stamp = datetime.datetime.fromisoformat
        halted = spec.get("halted")
        Version(str(spec["version"]))
        return cls(
            version=str(spec["version"]),
            baseline=str(spec.get("baseline", "")),
            canaries=tuple(str(host) for host in spec["canaries"]),
            soak_minutes=int(spec["soakMinutes"]),
            started_by=str(spec.get("startedBy", "")),
            started_at=stamp(str(spec["startedAt"])),
            canary_percent=int(spec["canaryPercent"]) if spec.get("canaryPercent") is not None else None,
            healthy={str(host): stamp(str(at)) for host, at in dict(spec.get("healthy") or {}).items()},
            halt=Halt(str(halted["host"]), str(halted["message"]), stamp(str(halted["at"])))
            if isinstance(halted, Mapping)
            else None,
            excused=tuple(str(host) for host in spec.get("excused") or ()),
        )


def _read(source: KubeApi) -> tuple[Rollout, str] | None:
    """The rollout stored and its resource version, or None (an unreadable one is logged and ignored,
    as the pin is)."""
    entry = source.get_catalog(KIND, ROLLOUT_ID)
    if entry is None:
        return None
    try:
        return Rollout.from_spec(entry.spec), entry.resource_version
    except (KeyError, ValueError, TypeError, InvalidVersion) as exc:
        logger.warning("agent rollout: ignoring the unreadable rollout: %r", exc)
        return None


def current(source: KubeApi) -> Rollout | None:
    read = _read(source)
    return None if read is None else read[0]


def _store(source: KubeApi, rollout: Rollout, read_at: str | None) -> None:
    """Write the rollout: created, or replaced at the resource version it was read at (Conflict when
    another replica wrote it since: what it learnt is not overwritten)."""
    if read_at is None:
        source.create_catalog(KIND, ROLLOUT_ID, rollout.to_spec())
    else:
        source.replace_catalog(KIND, ROLLOUT_ID, rollout.to_spec(), read_at)


# --------------------------------------------------------------------------------- the channel


class LogBudget:
    """At most ``burst`` lines every ``window`` seconds, the next one let through saying how many were
    dropped: what anyone may send, a flood of forged reports, cannot flood the log. In memory as the
    agents' channel pool is: it keeps no domain state, and each replica counts its own."""

    def __init__(self, burst: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.window, self._clock = burst, window, clock
        self._lock = threading.Lock()
        self._since, self._spent, self._dropped = clock(), 0, 0

    def spend(self) -> int | None:
        """None when the line is over budget (dropped); else how many were dropped before it."""
        with self._lock:
            now = self._clock()
            if now - self._since >= self.window:
                self._since, self._spent = now, 0
            if self._spent >= self.burst:
                self._dropped += 1
                return None
            self._spent += 1
            dropped, self._dropped = self._dropped, 0
            return dropped


_NOT_RECORDED = LogBudget(LOG_BURST, LOG_WINDOW)


def _not_recorded(report: HostReport, why: str, level: int = logging.WARNING) -> None:
    dropped = _NOT_RECORDED.spend()
    if dropped is None:
        return
    more = f" ({dropped} more such reports were not logged)" if dropped else ""
    logger.log(level, "agent rollout: a report for %s was not recorded: %s%s", report.host, why, more)


def _agent_says(ctx: Context, report: HostReport) -> HostReport | None:
    """What the reporting host's own agent says of itself (GetInfo over mTLS, its certificate naming
    the host), or None when the host is not in the catalog or its agent did not answer in time."""
    zone, node = report.host.split("/")
    entry = ctx.kube.get_catalog(catalog.HOST, host_ident(zone, node))
    if entry is None:
        _not_recorded(report, "no such host in the catalog")
        return None
    try:
        host = Host.from_spec(entry.spec)
    except (KeyError, TypeError, ValueError) as exc:
        _not_recorded(report, f"its catalog entry does not parse: {exc!r}")
        return None
    try:
        agents = ctx.proxmox
    except (OSError, ValueError) as exc:  # this process has no client certificate to ask agents with
        _not_recorded(report, f"its agent cannot be asked: {exc}", logging.INFO)
        return None
    said = agents.agent_reports({host.key: host.target})
    if host.key not in said.results:
        problem = said.failures.get(host.key, "no answer")
        _not_recorded(report, f"its agent did not confirm it now: {problem}", logging.INFO)
        return None
    return HostReport.from_agent(host.key, said.results[host.key])


def _learn(
    ctx: Context, rollout: Rollout, read_at: str, report: HostReport | None, now: datetime.datetime
) -> Rollout:
    """Write what the report teaches, once, if the host's agent says so itself: the query is a hint
    that anyone could send. What is written is the agent's word. A report not confirmed, or a write
    that loses a race to another replica, is left to the host's next report, which says the same (its
    last update stays until the next one)."""
    taught = rollout.teaches(report)
    if report is None or not taught:
        return rollout
    told = _agent_says(ctx, report)
    if told is None:
        return rollout
    if rollout.teaches(told) != taught:
        _not_recorded(
            report, f"its agent contradicts it: the query says {report.words}; the agent, {told.words}"
        )
        return rollout
    learnt = rollout.observed(told, now)
    try:
        _store(ctx.kube, learnt, read_at)
    except FlexPlaneError as exc:
        logger.info("agent rollout: %s's report not stored now (%s); its next one will be", told.host, exc)
        return learnt
    if learnt.halt is not None and rollout.halt is None:
        logger.warning("agent rollout: halted: %s", learnt.halt.message)
    else:
        logger.info("agent rollout: %s runs %s", told.host, rollout.version)
    return learnt


def channel_document(sources: Sources, report: HostReport | None) -> dict[str, Any]:
    """``channel.json`` for the reporting host: the rollout's wave decides the version, when a rollout
    holds the channel (and no pin overrides it); else the channel's own choice. ``sources``: the
    process's (the view hands in the management cluster), the agents asked through them."""
    ctx = Context(principal=_CHANNEL, sources=sources)
    read = _read(ctx.kube)
    if read is None or releases.current_pin(ctx.kube) is not None:
        return releases.channel_document(ctx.kube)
    now = _now()
    rollout = _learn(ctx, *read, report, now)
    version, downgrade = rollout.serves(report, now)
    if not version:  # nothing older was published when it started: this host waits for its wave
        raise NotFound("agent release before the rollout of", rollout.version)
    return releases.channel_document(ctx.kube, version=version, pinned=downgrade)


# ------------------------------------------------------------------------------------------ admin


def channel(ctx: Context) -> releases.Channel:
    """What the channel serves (``agentReleaseChannel``), its served version the one hosts outside the
    canaries get now when a rollout holds the channel. ADMIN only."""
    found = releases.channel(ctx)
    rollout = current(ctx.kube)
    if rollout is None or found.pin is not None:
        return found
    version = rollout.version if rollout.promoted(_now()) else rollout.baseline
    served = releases.PublishedRelease(version, {}, "") if version in found.versions else None
    return replace(found, served=served)


@dataclass(frozen=True)
class RolloutStatus:
    """A rollout as the API shows it: stored, and its phase now."""

    rollout: Rollout
    phase: str
    hosts: list[str]

    @property
    def phase_words(self) -> str:
        """The phase as a page says it: "rolling out", "soaking"."""
        return self.phase.lower().replace("_", " ")

    @property
    def updated_hosts(self) -> list[str]:
        return [host for host in self.hosts if host in self.rollout.healthy]


def _status(ctx: Context, rollout: Rollout) -> RolloutStatus:
    hosts = [host.key for host in catalog.hosts(ctx)]
    return RolloutStatus(rollout, rollout.phase(_now(), hosts), hosts)


def rollout(ctx: Context) -> RolloutStatus | None:
    """The rollout and its phase; None when none was started. ADMIN only."""
    access.require_admin(ctx)
    found = current(ctx.kube)
    return None if found is None else _status(ctx, found)


def _draw(version: str, host: str) -> str:
    """A host's place in the draw of a version's canaries: stable for it, different for the next."""
    return hashlib.sha256(f"{version}/{host}".encode()).hexdigest()


def _canaries(hosts: list[str], version: str, named: list[str] | None, percent: int | None) -> list[str]:
    if named and percent is not None:
        raise ValidationFailed("canaryHosts", "name canary hosts or a canary percent, not both")
    if not named and percent is None:
        raise ValidationFailed("canaryHosts", "name canary hosts (zone/host) or a canary percent")
    if percent is not None:
        if not 1 <= percent <= 100:
            raise ValidationFailed("canaryPercent", f"the canary percent must be 1 to 100, not {percent}")
        if not hosts:
            raise ValidationFailed("canaryPercent", "there are no hosts to pick canaries from")
        count = math.ceil(len(hosts) * percent / 100)
        return sorted(hosts, key=lambda host: hashlib.sha256(f"{version}/{host}".encode()).hexdigest())[
            :count
        ]
    assert named is not None
    unknown = [host for host in dict.fromkeys(h.strip() for h in named) if host not in hosts]
    if unknown:
        raise ValidationFailed(
            "canaryHosts",
            f"no such host: {', '.join(unknown)} (hosts are named zone/host: {', '.join(hosts) or 'none'})",
        )
    return list(dict.fromkeys(h.strip() for h in named))


def _baseline(source: KubeApi, version: str, published: list[str], before: Rollout | None) -> str:
    """What every host is served while the canaries try ``version``: see the module's docstring."""
    pin = releases.current_pin(source)
    if pin is not None:
        return pin.version
    if before is not None:
        return before.version if before.halt is None else before.baseline
    older = [v for v in published if Version(v) < Version(version)]
    return older[-1] if older else ""


def start_rollout(
    ctx: Context,
    version: str,
    canary_hosts: list[str] | None,
    canary_percent: int | None,
    soak_minutes: int | None,
) -> RolloutStatus:
    """Serve ``version`` to the canaries now, to every host once they ran it healthy for the soak
    time. ADMIN only. Any pin is removed: the rollout holds the channel instead."""
    access.require_admin(ctx)
    version = version.strip()
    published = [release.version for release in releases.published()]
    if version not in published:
        raise ValidationFailed(
            "version",
            f"version {version} is not published in the release channel "
            f"(published: {', '.join(published) or 'none'})",
        )
    soak = DEFAULT_SOAK_MINUTES if soak_minutes is None else soak_minutes
    if not 0 <= soak <= MAX_SOAK_MINUTES:
        raise ValidationFailed("soakMinutes", f"the soak time must be 0 to {MAX_SOAK_MINUTES} minutes")
    read = _read(ctx.kube)
    before = None if read is None else read[0]
    now = _now()
    if before is not None and before.phase(now) in (CANARY, SOAKING):
        raise Conflict(
            f"the rollout of {before.version} is in its {before.phase(now).lower()} phase: halt it first"
        )
    hosts = [host.key for host in catalog.hosts(ctx)]
    canaries = _canaries(hosts, version, canary_hosts, canary_percent)
    baseline = _baseline(ctx.kube, version, published, before)
    if baseline == version:
        raise ValidationFailed("version", f"the channel already serves {version} to every host")
    started = Rollout(version, baseline, tuple(canaries), soak, ctx.principal.subject, now, canary_percent)
    _store(ctx.kube, started, read[1] if read is not None else _unreadable_at(ctx.kube))
    if ctx.kube.delete_catalog(KIND, releases.PIN_ID):
        logger.info("agent rollout: the pin made way for the rollout")
    logger.info(
        "agent rollout: %s started %s (from %s) on canaries %s, soak %d min",
        started.started_by,
        version,
        baseline or "nothing",
        ", ".join(canaries),
        soak,
    )
    return _status(ctx, started)


def _unreadable_at(source: KubeApi) -> str | None:
    """The resource version of a stored rollout that could not be read (a new one replaces it)."""
    entry = source.get_catalog(KIND, ROLLOUT_ID)
    return None if entry is None else entry.resource_version


def _started(ctx: Context) -> tuple[Rollout, str]:
    read = _read(ctx.kube)
    if read is None:
        raise Conflict("no agent rollout was started")
    return read


def halt_rollout(ctx: Context, reason: str | None) -> RolloutStatus:
    """Stop the rollout where it is: no further host gets its version. ADMIN only."""
    access.require_admin(ctx)
    found, read_at = _started(ctx)
    if found.halt is not None:
        raise Conflict(f"the rollout of {found.version} is halted already: {found.halt.message}")
    why = f": {reason.strip()}" if reason and reason.strip() else ""
    who = ctx.principal.name or ctx.principal.subject
    halted = replace(found, halt=Halt("", f"halted by {who}{why}", _now()))
    _store(ctx.kube, halted, read_at)
    logger.info("agent rollout: %s", halted.halt.message if halted.halt else "")
    return _status(ctx, halted)


def resume_rollout(ctx: Context) -> RolloutStatus:
    """Go on with a halted rollout; the host that failed is excused: its failure no longer halts it, and
    as a canary it is no longer waited for. ADMIN only."""
    access.require_admin(ctx)
    found, read_at = _started(ctx)
    if found.halt is None:
        raise Conflict(f"the rollout of {found.version} is not halted")
    failed = found.halt.host
    excused = found.excused + ((failed,) if failed and failed not in found.excused else ())
    resumed = replace(found, halt=None, excused=excused)
    _store(ctx.kube, resumed, read_at)
    logger.info("agent rollout: %s resumed %s", ctx.principal.subject, found.version)
    return _status(ctx, resumed)


# ------------------------------------------------------------------------------------------ metric


class HaltedCollector(Collector):
    """``flexplane_agent_rollout_halted``, read from the management cluster at each scrape, so every
    replica tells the same: 1 with the version and the host that failed (empty when an admin halted
    it) while halted, 0 while a rollout goes on, nothing without a rollout."""

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The metric's name for the registry, without asking the cluster (as collect would)."""
        yield self._family()

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "flexplane_agent_rollout_halted",
            "Whether the agent rollout is halted, by its version and the host whose health check failed.",
            labels=["version", "host"],
        )

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        try:
            found = current(process_kube())
        except Exception as exc:  # a scrape answers whatever the cluster does
            logger.debug("agent rollout metric: %s", exc)
            found = None
        if found is not None:
            host = found.halt.host if found.halt is not None else ""
            family.add_metric([found.version, host], 1.0 if found.halt is not None else 0.0)
        yield family


COLLECTOR = HaltedCollector()
REGISTRY.register(COLLECTOR)
