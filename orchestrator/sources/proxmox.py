"""Proxmox, reached only through the agents on its nodes.

A zone is one Proxmox cluster: any node answers for the whole cluster, so a read costs one
call per zone, sent to one of the zone's agents and failed over to the next when that one
is unavailable. Zones are asked in parallel, under one deadline for the whole fan-out.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from django.conf import settings

from agentclient import (
    AgentConnectionLost,
    AgentDeadlineExceeded,
    AgentError,
    AgentInfo,
    AgentPool,
    AgentTarget,
    AgentUnavailable,
    ClientTLS,
    ProxmoxError,
    ProxmoxNoAnswer,
    ProxmoxUnreachable,
    host_identity,
)
from orchestrator.errors import Conflict, Unavailable, UpstreamFailure

T = TypeVar("T")

# Proxmox's own codes for "that node is not reachable from here" (pveproxy's 595/596).
_NODE_UNREACHABLE = frozenset({595, 596})


class _NotSent(Unavailable):
    """The call surely never reached Proxmox: safe to send elsewhere."""


@dataclass(frozen=True)
class ZoneTargets:
    """A zone and the agents that can answer for it, in the order to try them."""

    zone: str
    targets: tuple[AgentTarget, ...]


@dataclass
class FanOut(Generic[T]):
    """What each zone answered, and why the others did not."""

    results: dict[str, T] = field(default_factory=dict)
    failures: dict[str, Unavailable] = field(default_factory=dict)


def _worth_another_node(exc: AgentError) -> bool:
    """True when another node of the same zone may well answer."""
    if isinstance(exc, AgentUnavailable | AgentDeadlineExceeded | ProxmoxUnreachable):
        return True
    return isinstance(exc, ProxmoxError) and (exc.status in _NODE_UNREACHABLE or exc.status >= 500)


class ProxmoxSource:
    """Reads from every zone's Proxmox cluster through the agents."""

    def __init__(self, pool: AgentPool, *, call_timeout: float, deadline: float, workers: int = 32) -> None:
        self.pool = pool
        self.call_timeout = call_timeout
        self.deadline = deadline
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zone-fanout")
        self._rotation = itertools.count()

    # ------------------------------------------------------------------ one zone

    def zone_call(
        self,
        zone: ZoneTargets,
        method: str,
        path: str,
        params: dict[str, str] | None = None,
        *,
        deadline_at: float | None = None,
    ) -> Any:
        """One Proxmox call for a zone, failing over across its agents until the deadline."""
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
                if not _worth_another_node(exc):
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
            except _NotSent as exc:
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
            raise _NotSent(zone, str(exc)) from exc
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

    def cluster_resources(self, zones: Sequence[ZoneTargets]) -> FanOut[list[dict[str, Any]]]:
        """``/cluster/resources`` of every zone: VMs and nodes, one call per zone."""

        def read(zone: ZoneTargets, deadline_at: float) -> list[dict[str, Any]]:
            data = self.zone_call(zone, "GET", "/cluster/resources", deadline_at=deadline_at)
            return [item for item in data or [] if isinstance(item, dict)]

        return self.fan_out(zones, read)

    def agent_infos(self, agents: Mapping[str, AgentTarget]) -> FanOut[AgentInfo]:
        """What each agent says about itself (GetInfo), keyed as given (e.g. ``<zone>/<node>``).

        Asked in parallel under the zone deadline: an agent that does not answer in time, or at all,
        is a failure of its key, and the others still count.
        """

        def ask(key: str, target: AgentTarget, deadline_at: float) -> AgentInfo:
            remaining = deadline_at - time.monotonic()
            if remaining <= 0:
                raise Unavailable(key, f"the deadline passed before {target.identity} was asked")
            try:
                return self.pool.info(target, timeout=min(self.call_timeout, remaining))
            except AgentError as exc:
                raise Unavailable(key, str(exc)) from exc

        return self._parallel(
            {key: functools.partial(ask, key, target) for key, target in agents.items()},
            lambda key: f"the agent of {key} did not answer within {self.deadline:g}s",
        )


_source: ProxmoxSource | None = None
_lock = threading.Lock()


def proxmox() -> ProxmoxSource:
    """The process's Proxmox source, with its pool of mTLS channels to the agents."""
    global _source
    with _lock:
        if _source is None:
            tls = ClientTLS.from_files(
                settings.FLEXPLANE_AGENT_CA, settings.FLEXPLANE_AGENT_CERT, settings.FLEXPLANE_AGENT_KEY
            )
            _source = ProxmoxSource(
                AgentPool(
                    tls,
                    timeout=settings.FLEXPLANE_AGENT_TIMEOUT,
                    max_in_flight=settings.FLEXPLANE_AGENT_MAX_IN_FLIGHT,
                ),
                call_timeout=settings.FLEXPLANE_AGENT_TIMEOUT,
                deadline=settings.FLEXPLANE_ZONE_DEADLINE,
            )
        return _source


# --------------------------------------------------------------------------- one zone, in domain terms

# How Proxmox words a guest's config lock held by something else.
_LOCKED = ("can't lock file", "VM is locked", "is locked (")


def is_lock_message(message: str) -> bool:
    return any(marker in message for marker in _LOCKED)


def _with_field_errors(message: str, errors: Mapping[str, str]) -> str:
    text = message.strip().rstrip(".")
    if errors:
        text += " (" + "; ".join(f"{name}: {error}" for name, error in sorted(errors.items())) + ")"
    return text


def translate(zone: str, node: str | None, exc: UpstreamFailure) -> Exception:
    """Proxmox's refusal in domain terms: an unreachable node is Unavailable, a held lock a Conflict."""
    message = _with_field_errors(exc.message, exc.errors)
    if exc.status in _NODE_UNREACHABLE:
        where = f"{zone}/{node}" if node else zone
        host = f"host {node} of zone {zone}" if node else f"a host of zone {zone}"
        return Unavailable(where, f"{host} is unreachable: {message}")
    if is_lock_message(message):
        return Conflict(f"the VM is locked by another operation: {message}")
    prefix = f"Proxmox in zone {zone}: "
    text = message if message.startswith(prefix) else prefix + message
    return UpstreamFailure(zone, text, status=exc.status, errors=exc.errors)


class ProxmoxZone:
    """One zone's Proxmox in the terms flex.plane uses: guests, their config, power, disks, tasks, pools.

    With the agent's allowlist, the only place that spells Proxmox API paths. Reads fail over across
    the zone's agents; writes go to the guest's own node first and are sent once. Failures are domain
    errors carrying Proxmox's own message (a held lock is a ``Conflict``, an unreachable node
    ``Unavailable``).
    """

    def __init__(self, source: ProxmoxSource, targets: ZoneTargets) -> None:
        self.source = source
        self.targets = targets
        self.zone = targets.zone

    def _node_first(self, node: str | None) -> ZoneTargets:
        """The zone's agents, the one on ``node`` first: a write for a VM goes to its own host."""
        if node is None:
            return self.targets
        identity = host_identity(self.zone, node)
        own = [t for t in self.targets.targets if t.identity == identity]
        others = [t for t in self.targets.targets if t not in own]
        return ZoneTargets(self.zone, tuple(own + others))

    def _read(self, path: str, params: dict[str, str] | None = None, *, node: str | None = None) -> Any:
        """A read, failed over across the zone's agents until the zone deadline."""
        try:
            return self.source.zone_call(self._node_first(node), "GET", path, params)
        except UpstreamFailure as exc:
            raise translate(self.zone, node, exc) from exc

    def _read_once(self, node: str, path: str) -> Any:
        """A read through the node's own agent, not failed over: for answers only that node has (a
        guest agent's), where another node's 500 would be the same refusal."""
        targets = self._node_first(node).targets
        if not targets:
            raise Unavailable(self.zone, f"zone {self.zone} has no hosts")
        try:
            return self.source.host_call(self.zone, targets[0], "GET", path)
        except UpstreamFailure as exc:
            raise translate(self.zone, node, exc) from exc

    def _write(self, node: str | None, method: str, path: str, params: dict[str, Any] | None = None) -> Any:
        """A write, sent once (to another agent only when it surely did not reach Proxmox)."""
        try:
            return self.source.zone_write(self._node_first(node), method, path, params)
        except UpstreamFailure as exc:
            raise translate(self.zone, node, exc) from exc

    # ----------------------------------------------------------- the cluster

    def resources(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The zone's ``/cluster/resources`` now (not a request's memo: callers need it fresh)."""
        data = self._read("/cluster/resources", {"type": kind} if kind else None)
        return [item for item in data or [] if isinstance(item, dict)]

    def next_vmid(self) -> int:
        return int(self._read("/cluster/nextid"))

    # ----------------------------------------------------------- guests

    def clone(self, node: str, vmid: int, newid: int, params: dict[str, Any]) -> Any:
        """Linked-clone guest ``vmid`` of ``node`` as ``newid``; answers the task."""
        return self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/clone", {**params, "newid": newid})

    def config(self, node: str, vmid: int) -> dict[str, Any]:
        return self._read(f"/nodes/{node}/qemu/{vmid}/config", node=node) or {}

    def set_config(self, node: str, vmid: int, params: dict[str, Any]) -> None:
        """Change the config at once (PUT: Proxmox answers when it is written)."""
        self._write(node, "PUT", f"/nodes/{node}/qemu/{vmid}/config", params)

    def change_config(self, node: str, vmid: int, params: dict[str, Any]) -> Any:
        """Change the config in a task (POST); answers the task."""
        return self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/config", params)

    def resize_disk(self, node: str, vmid: int, disk: str, size: str) -> Any:
        """Grow ``disk`` to ``size`` (e.g. ``"20G"``); answers the task (nothing before Proxmox 8)."""
        return self._write(node, "PUT", f"/nodes/{node}/qemu/{vmid}/resize", {"disk": disk, "size": size})

    def power(self, node: str, vmid: int, action: str, params: dict[str, Any] | None = None) -> Any:
        """``start``, ``stop``, ``shutdown`` or ``reboot``; answers the task."""
        return self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/status/{action}", params)

    def destroy(self, node: str, vmid: int) -> Any:
        """Destroy a stopped guest with every disk it has; answers the task."""
        return self._write(
            node, "DELETE", f"/nodes/{node}/qemu/{vmid}", {"purge": True, "destroy-unreferenced-disks": True}
        )

    def guest_interfaces(self, node: str, vmid: int) -> Any:
        """What the guest agent reports of the VM's network interfaces."""
        return self._read_once(node, f"/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces")

    def migration_check(self, node: str, vmid: int) -> dict[str, Any]:
        """Proxmox's precondition of migrating the guest: ``running``, ``local_disks``, ``local_resources``
        and, for a stopped guest, ``allowed_nodes`` and ``not_allowed_nodes`` (node -> why not)."""
        answer = self._read(f"/nodes/{node}/qemu/{vmid}/migrate", node=node)
        return answer if isinstance(answer, dict) else {}

    def migrate(self, node: str, vmid: int, target: str, *, online: bool, with_local_disks: bool) -> Any:
        """Migrate the guest to node ``target`` (live when ``online``, copying its local disks when
        ``with_local_disks``); answers the task."""
        params: dict[str, Any] = {"target": target}
        if online:
            params["online"] = True
        if with_local_disks:
            params["with-local-disks"] = True
        return self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/migrate", params)

    # ----------------------------------------------------------- tasks

    def task_status(self, node: str, upid: str) -> Any:
        return self._read(f"/nodes/{node}/tasks/{upid}/status", node=node)

    def task_log(self, node: str, upid: str, limit: int) -> Any:
        return self._read(f"/nodes/{node}/tasks/{upid}/log", {"start": "0", "limit": str(limit)}, node=node)

    def tasks(self, node: str, params: dict[str, str]) -> Any:
        return self._read(f"/nodes/{node}/tasks", params, node=node)

    # ----------------------------------------------------------- pools

    def create_pool(self, poolid: str, comment: str) -> None:
        self.source.zone_write(self.targets, "POST", "/pools", {"poolid": poolid, "comment": comment})

    def delete_pool(self, poolid: str) -> None:
        self.source.zone_write(self.targets, "DELETE", f"/pools/{poolid}")
