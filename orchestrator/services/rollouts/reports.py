"""What the channel serves a host that reports itself, and what the rollout learns from the report: only
what the host's own agent confirms (GetInfo over the agents' mTLS channel) is written; a report that is
not confirmed changes nothing and is logged, within a budget (forged ones could come in floods)."""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from orchestrator.auth import Principal
from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.models import Host
from orchestrator.models.zones import host_ident
from orchestrator.services import catalog, releases
from orchestrator.services.context import Context, Sources
from orchestrator.services.rollouts import model, records
from orchestrator.services.rollouts.model import HostReport, Rollout

logger = logging.getLogger(__name__)

# Reports not recorded are logged at most this many times a minute (forged ones could come in floods).
LOG_BURST, LOG_WINDOW = 10, 60.0
# Who the channel acts as when it reads the catalog and asks an agent: nothing a role guards.
_CHANNEL = Principal(subject="flexplane-release-channel", name="release channel", email="", roles=frozenset())


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
        records.store(ctx.kube, learnt, read_at)
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
    read = records.read(ctx.kube)
    if read is None or releases.current_pin(ctx.kube) is not None:
        return releases.channel_document(ctx.kube)
    now = model.now()
    rollout = _learn(ctx, *read, report, now)
    version, downgrade = rollout.serves(report, now)
    if not version:  # nothing older was published when it started: this host waits for its wave
        raise NotFound("agent release before the rollout of", rollout.version)
    return releases.channel_document(ctx.kube, version=version, pinned=downgrade)
