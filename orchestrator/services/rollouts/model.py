"""A staged rollout as values: what an admin started (:class:`Rollout`), where it halted (:class:`Halt`),
and what a host says of itself (:class:`HostReport`). Pure: what the rollout serves a host, what a report
would teach it and its phase are decided here, from the values and the time given, with no call made."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.version import Version

from agentclient.identity import is_dns_label
from orchestrator.services import releases
from orchestrator.sources.proxmox import AgentReport

KIND, ROLLOUT_ID = releases.PIN_KIND, releases.ROLLOUT_ID
MAX_SOAK_MINUTES = 7 * 24 * 60
DEFAULT_SOAK_MINUTES = 60
# The agent's word (agent.update.state.RESULT_NAMES) for an update whose health check failed.
ROLLED_BACK = "rolled-back"
MAX_REPORT_FIELD = 200
# What a report would change: a halt, or a host counted as running the version.
HALTS, RUNS = "halts", "runs"

CANARY, SOAKING, ROLLING_OUT, COMPLETE, HALTED = "CANARY", "SOAKING", "ROLLING_OUT", "COMPLETE", "HALTED"
PHASES = (CANARY, SOAKING, ROLLING_OUT, COMPLETE, HALTED)


def now() -> datetime.datetime:
    """The time a rollout records and is judged at (whole seconds, as it is stored)."""
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
