"""The fan-out over zones, and one call through an agent: reads fail over, writes are sent once.

A zone is one Proxmox cluster: any node answers for the whole cluster, so a read costs one
call per zone, sent to one of the zone's agents and failed over to the next when that one
is unavailable. Zones are asked in parallel, under one deadline for the whole fan-out.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agentclient import (
    AgentConnectionLost,
    AgentDeadlineExceeded,
    AgentError,
    AgentPool,
    AgentTarget,
    AgentUnavailable,
    ProxmoxError,
    ProxmoxNoAnswer,
    ProxmoxUnreachable,
)
from orchestrator.errors import Unavailable, UpstreamFailure
from orchestrator.sources.proxmox.agents import HostAgents
from orchestrator.sources.proxmox.sdn import PENDING, VNETS_PATH, VNet, parse_vnets
from orchestrator.sources.proxmox.values import (
    NODE_UNREACHABLE,
    AgentReport,
    ClusterResources,
    Guest,
    ZoneTargets,
    parse_pool_vms,
)
from orchestrator.sources.proxmox.zone import ZoneApi

T = TypeVar("T")

# How Proxmox (PVE/API2/Pool.pm) refuses to read a pool it does not have: a 500, the same on any node.
_NO_SUCH_POOL = "does not exist"


def _no_such_pool(exc: ProxmoxError) -> bool:
    return exc.message.startswith("pool '") and _NO_SUCH_POOL in exc.message


class NotSent(Unavailable):
    """The call surely never reached Proxmox: safe to send elsewhere."""


@dataclass
class FanOut(Generic[T]):
    """What each zone answered, and why the others did not."""

    results: dict[str, T] = field(default_factory=dict)
    failures: dict[str, Unavailable] = field(default_factory=dict)


def _worth_another_node(exc: AgentError) -> bool:
    """True when another node of the same zone may well answer."""
    if isinstance(exc, AgentUnavailable | AgentDeadlineExceeded | ProxmoxUnreachable):
        return True
    return isinstance(exc, ProxmoxError) and (exc.status in NODE_UNREACHABLE or exc.status >= 500)


class ProxmoxSource:
    """Reads from every zone's Proxmox cluster through the agents."""

    def __init__(self, pool: AgentPool, *, call_timeout: float, deadline: float, workers: int = 32) -> None:
        self.pool = pool
        # Its agents' services beyond the proxy (edge gateways, update now), errors made domain errors.
        self.agents = HostAgents(pool)
        self.call_timeout = call_timeout
        self.deadline = deadline
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zone-fanout")
        self._rotation = itertools.count()

    # ------------------------------------------------------------------ one zone

    def zone(self, targets: ZoneTargets) -> ZoneApi:
        """One zone's Proxmox in domain terms, through the agents ``targets`` names."""
        return ZoneApi(self, targets)

    def zone_call(
        self,
        zone: ZoneTargets,
        method: str,
        path: str,
        params: dict[str, str] | None = None,
        *,
        deadline_at: float | None = None,
        definite: Callable[[ProxmoxError], bool] | None = None,
    ) -> Any:
        """One Proxmox call for a zone, failing over across its agents until the deadline; a refusal
        ``definite`` says every node would give alike (e.g. "does not exist") is not asked again."""
        deadline_at = deadline_at if deadline_at is not None else time.monotonic() + self.deadline
        if not zone.targets:
            raise Unavailable(zone.zone, f"zone {zone.zone} has no hosts")
        start = next(self._rotation) % len(zone.targets)
        order = zone.targets[start:] + zone.targets[:start]
        reasons: list[str] = []
        for target in order:
            remaining = deadline_at - time.monotonic()
            if remaining <= 0:
                break
            try:
                return self.pool.proxmox(
                    target, method, path, params, timeout=min(self.call_timeout, remaining)
                )
            except ProxmoxError as exc:
                if not _worth_another_node(exc) or (definite is not None and definite(exc)):
                    # With its status and per-parameter messages: a 400's says what was refused.
                    raise UpstreamFailure(
                        zone.zone,
                        f"Proxmox in zone {zone.zone}: {exc.message}",
                        status=exc.status,
                        errors=exc.errors,
                    ) from exc
                reasons.append(str(exc))
            except AgentError as exc:
                if not _worth_another_node(exc):
                    raise UpstreamFailure(zone.zone, str(exc)) from exc
                reasons.append(str(exc))
        detail = "; ".join(reasons) or "the deadline passed before any host was tried"
        raise Unavailable(zone.zone, f"zone {zone.zone} is unavailable: {detail}")

    def zone_write(
        self,
        zone: ZoneTargets,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """A write through one of the zone's agents, never sent twice.

        It moves to the next agent only when the call surely did not reach Proxmox (the agent could
        not be reached, or could not reach its Proxmox); a deadline, or an answer lost on the way (the
        connection broke), is ambiguous and is not retried.
        """
        if not zone.targets:
            raise Unavailable(zone.zone, f"zone {zone.zone} has no hosts")
        reasons: list[str] = []
        for target in zone.targets:
            try:
                return self.host_call(zone.zone, target, method, path, params, timeout=timeout)
            except NotSent as exc:
                reasons.append(str(exc.__cause__))
        raise Unavailable(zone.zone, f"zone {zone.zone} is unavailable: {'; '.join(reasons)}")

    def host_call(
        self,
        zone: str,
        target: AgentTarget,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """One call through one host's agent, with Proxmox's own message on failure; no retry."""
        try:
            return self.pool.proxmox(target, method, path, params, timeout=timeout or self.call_timeout)
        except ProxmoxError as exc:
            raise UpstreamFailure(zone, exc.message, status=exc.status, errors=exc.errors) from exc
        except (AgentConnectionLost, ProxmoxNoAnswer) as exc:
            raise Unavailable(
                zone, f"the answer of {target.identity} was lost ({exc.detail}); the call may have run"
            ) from exc
        except (AgentUnavailable, ProxmoxUnreachable) as exc:
            raise NotSent(zone, str(exc)) from exc
        except AgentDeadlineExceeded as exc:
            raise Unavailable(
                zone, f"{target.identity} did not answer in time; the call may have run"
            ) from exc
        except AgentError as exc:
            raise UpstreamFailure(zone, str(exc)) from exc

    # ------------------------------------------------------------------ fan-out

    def _parallel(self, calls: Mapping[str, Callable[[float], T]], late: Callable[[str], str]) -> FanOut[T]:
        """Run ``calls[key](deadline_at)`` in parallel under one deadline; ``late(key)`` words a timeout."""
        deadline_at = time.monotonic() + self.deadline
        futures: dict[str, Future[T]] = {
            key: self._executor.submit(call, deadline_at) for key, call in calls.items()
        }
        # A little grace beyond the deadline: the calls themselves stop at it.
        wait_futures(futures.values(), timeout=self.deadline + 0.5)
        out: FanOut[T] = FanOut()
        for key, future in futures.items():
            if not future.done():
                future.cancel()
                out.failures[key] = Unavailable(key, late(key))
                continue
            exc = future.exception()
            if exc is None:
                out.results[key] = future.result()
            elif isinstance(exc, Unavailable):
                out.failures[key] = exc
            elif isinstance(exc, UpstreamFailure):
                out.failures[key] = Unavailable(key, exc.message)
            else:
                raise exc
        return out

    def fan_out(self, zones: Sequence[ZoneTargets], call: Callable[[ZoneTargets, float], T]) -> FanOut[T]:
        """Run ``call(zone, deadline_at)`` for every zone in parallel, under one deadline."""
        return self._parallel(
            {z.zone: functools.partial(call, z) for z in zones},
            lambda zone: f"zone {zone} did not answer within {self.deadline:g}s",
        )

    def cluster_resources(
        self, zones: Sequence[ZoneTargets], kind: str | None = None
    ) -> FanOut[ClusterResources]:
        """``/cluster/resources`` of every zone: guests, nodes and storages, one call per zone; with
        ``kind`` (``vm``, ``node``, ``storage``), those alone."""
        return self.fan_out(zones, functools.partial(self.zone_resources, kind=kind))

    def zone_resources(
        self, zone: ZoneTargets, deadline_at: float, kind: str | None = None
    ) -> ClusterResources:
        """One zone's ``/cluster/resources`` (``cluster_resources``' call for each zone): what a caller's
        own ``fan_out`` reads when it digests each zone's answer as it arrives."""
        params = {"type": kind} if kind else None
        return ClusterResources.parse(
            self.zone_call(zone, "GET", "/cluster/resources", params, deadline_at=deadline_at)
        )

    def vnets(self, zones: Sequence[ZoneTargets]) -> FanOut[tuple[VNet, ...]]:
        """Each zone's SDN VNets (pending ones included): one call per zone, in parallel."""

        def read(zone: ZoneTargets, deadline_at: float) -> tuple[VNet, ...]:
            return parse_vnets(
                self.zone_call(zone, "GET", VNETS_PATH, dict(PENDING), deadline_at=deadline_at)
            )

        return self.fan_out(zones, read)

    def pool_members(
        self, zones: Sequence[ZoneTargets], pools: Mapping[str, Sequence[str]]
    ) -> FanOut[tuple[Guest, ...]]:
        """The VMs of the pools ``pools[zone]`` in each zone (``GET /pools/{pool}?type=qemu``, one call
        per pool, in turn), the zones in parallel, with the deadline, failover and partial answers of
        ``cluster_resources``. Their tags and lock are not in that read (``Guest.from_pool_member``).
        A zone without one of the pools has none of its VMs.
        """

        def read(zone: ZoneTargets, deadline_at: float) -> tuple[Guest, ...]:
            found: list[Guest] = []
            for pool in pools.get(zone.zone, ()):
                try:
                    answer = self.zone_call(
                        zone,
                        "GET",
                        f"/pools/{pool}",
                        {"type": "qemu"},
                        deadline_at=deadline_at,
                        definite=_no_such_pool,
                    )
                except UpstreamFailure as exc:
                    if f"pool '{pool}' {_NO_SUCH_POOL}" in exc.message:
                        continue
                    raise
                found += parse_pool_vms(answer, pool)
            return tuple(found)

        return self.fan_out([z for z in zones if pools.get(z.zone)], read)

    def agent_reports(self, agents: Mapping[str, AgentTarget]) -> FanOut[AgentReport]:
        """What each agent says about itself (GetInfo), keyed as given (e.g. ``<zone>/<node>``).

        Asked in parallel under the zone deadline: an agent that does not answer in time, or at all,
        is a failure of its key, and the others still count.
        """

        def ask(key: str, target: AgentTarget, deadline_at: float) -> AgentReport:
            remaining = deadline_at - time.monotonic()
            if remaining <= 0:
                raise Unavailable(key, f"the deadline passed before {target.identity} was asked")
            try:
                return AgentReport.from_info(
                    self.pool.info(target, timeout=min(self.call_timeout, remaining))
                )
            except AgentError as exc:
                raise Unavailable(key, str(exc)) from exc

        return self._parallel(
            {key: functools.partial(ask, key, target) for key, target in agents.items()},
            lambda key: f"the agent of {key} did not answer within {self.deadline:g}s",
        )
