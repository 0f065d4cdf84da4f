"""One zone's Proxmox in the terms flex.plane uses: guests, their config, power, disks, tasks, pools,
templates and cloud-init snippets.

With the agent's allowlist, the only place that spells Proxmox API paths. Reads fail over across the
zone's agents; writes go to the guest's own node first and are sent once. Answers are typed values
(``values``, ``qemu_config``); failures are domain errors carrying Proxmox's own message (a held lock
is a ``Conflict``, an unreachable node ``Unavailable``): nothing of ``agentclient`` leaves this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from agentclient import (
    AgentDeadlineExceeded,
    AgentError,
    AgentPool,
    AgentTarget,
    AgentUnavailable,
    ProxmoxError,
    ProxmoxUnreachable,
    TemplatePhase,
    TemplateProgress,
    host_identity,
)
from agentclient.errors import ImageRefused
from agentclient.snippets import check_snippet_name
from orchestrator.errors import (
    Conflict,
    ImagePreparing,
    NotFound,
    Unavailable,
    UpstreamFailure,
    ValidationFailed,
)
from orchestrator.sources.proxmox.sdn import Sdn
from orchestrator.sources.proxmox.usage import VmUsage
from orchestrator.sources.proxmox.values import (
    NODE_UNREACHABLE,
    ClusterResources,
    GuestInterface,
    MigrationCheck,
    TaskEntry,
    TaskStatus,
    Template,
    TemplatePreparing,
    ZoneTargets,
    parse_interfaces,
)
from orchestrator.sources.qemu_config import (
    ConfigChange,
    Drive,
    QemuConfig,
    parse_config,
    render_drive,
    render_size,
    render_tags,
)

T = TypeVar("T")

# Writing or removing a snippet is one small file on the node.
SNIPPET_TIMEOUT = 15.0

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
    if exc.status in NODE_UNREACHABLE:
        where = f"{zone}/{node}" if node else zone
        host = f"host {node} of zone {zone}" if node else f"a host of zone {zone}"
        return Unavailable(where, f"{host} is unreachable: {message}")
    if is_lock_message(message):
        return Conflict(f"the VM is locked by another operation: {message}")
    prefix = f"Proxmox in zone {zone}: "
    text = message if message.startswith(prefix) else prefix + message
    return UpstreamFailure(zone, text, status=exc.status, errors=exc.errors)


class VmidTaken(UpstreamFailure):
    """A clone's new VMID was taken meanwhile (by another create): nothing was made, ask for another."""


def _upid(answer: Any) -> str | None:
    """The UPID of the task a write started (None: it ran synchronously, or answered no task)."""
    return answer if isinstance(answer, str) and answer else None


def with_set(params: Mapping[str, Any], optional: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` and those of ``optional`` that are set (a flag that is true, a text that is not empty):
    for the others Proxmox's default stands."""
    return {**params, **{key: value for key, value in optional.items() if value}}


class ZoneCalls(Protocol):
    """What a zone's API is built on (``source.ProxmoxSource``): a call failed over across the zone's
    agents, a write sent once, a call to one host's agent, and the agents' pool for their services
    beyond the proxy (images, snippets)."""

    pool: AgentPool

    def zone_call(
        self,
        zone: ZoneTargets,
        method: str,
        path: str,
        params: dict[str, str] | None = None,
        *,
        deadline_at: float | None = None,
        definite: Callable[[ProxmoxError], bool] | None = None,
    ) -> Any: ...

    def zone_write(
        self,
        zone: ZoneTargets,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any: ...

    def host_call(
        self,
        zone: str,
        target: AgentTarget,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any: ...


class ZoneApi:
    """One zone's Proxmox, through the agents of its hosts (``targets``, from the catalog)."""

    def __init__(self, source: ZoneCalls, targets: ZoneTargets) -> None:
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

    @property
    def sdn(self) -> Sdn:
        """The cluster's SDN: the VNets tenant networks are."""
        return Sdn(self._read, self._write)

    def resources(self, kind: str | None = None) -> ClusterResources:
        """The zone's ``/cluster/resources`` now (not a request's memo: callers need it fresh);
        ``kind="vm"`` asks for the guests alone."""
        return ClusterResources.parse(self._read("/cluster/resources", {"type": kind} if kind else None))

    def next_vmid(self) -> int:
        return int(self._read("/cluster/nextid"))

    # ----------------------------------------------------------- guests

    def clone(
        self,
        node: str,
        vmid: int,
        newid: int,
        *,
        name: str,
        pool: str,
        description: str,
        target: str | None = None,
        full: bool = False,
    ) -> str | None:
        """Clone guest ``vmid`` of ``node`` as ``newid`` (on ``target`` when it is another node): linked (a
        template's), or ``full`` (a copy of every disk, on the same storage); answers the task."""
        params: dict[str, Any] = {"name": name, "pool": pool, "description": description}
        if target is not None:
            params["target"] = target
        try:
            answer = self._write(
                node, "POST", f"/nodes/{node}/qemu/{vmid}/clone", {**params, "full": full, "newid": newid}
            )
        except UpstreamFailure as exc:
            if "already exists" in exc.message:
                raise VmidTaken(exc.where, exc.message, status=exc.status, errors=exc.errors) from exc
            raise
        return _upid(answer)

    def create_holder(
        self,
        node: str,
        vmid: int,
        *,
        name: str,
        pool: str,
        tags: Iterable[str],
        description: str,
        disk: Drive,
    ) -> str | None:
        """Make a volume's holder: a VM of one new disk ``scsi0`` (``<storage>:<GiB>``), no NIC, never
        started; answers the task."""
        params: dict[str, Any] = {
            "vmid": vmid,
            "name": name,
            "pool": pool,
            "tags": render_tags(tags),
            "description": description,
            "scsihw": "virtio-scsi-single",
            disk.key: render_drive(disk),
        }
        try:
            answer = self._write(node, "POST", f"/nodes/{node}/qemu", params)
        except UpstreamFailure as exc:
            if "already exists" in exc.message:
                raise VmidTaken(exc.where, exc.message, status=exc.status, errors=exc.errors) from exc
            raise
        return _upid(answer)

    def move_disk(self, node: str, vmid: int, disk: str, target_vmid: int, target_disk: str) -> str | None:
        """Move guest ``vmid``'s ``disk`` to guest ``target_vmid`` (on the same node) as ``target_disk``
        (Proxmox's reassignment: the volume becomes the target's); answers the task."""
        params = {"disk": disk, "target-vmid": target_vmid, "target-disk": target_disk}
        return _upid(self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/move_disk", params))

    def config(self, node: str, vmid: int) -> QemuConfig:
        return parse_config(self._read(f"/nodes/{node}/qemu/{vmid}/config", node=node) or {})

    def set_config(self, node: str, vmid: int, change: ConfigChange) -> None:
        """Change the config at once (PUT: Proxmox answers when it is written)."""
        self._write(node, "PUT", f"/nodes/{node}/qemu/{vmid}/config", change.render())

    def change_config(self, node: str, vmid: int, change: ConfigChange) -> str | None:
        """Change the config in a task (POST); answers the task."""
        return _upid(self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/config", change.render()))

    def resize_disk(self, node: str, vmid: int, disk: str, size: int) -> str | None:
        """Grow ``disk`` to ``size`` bytes; answers the task (None before Proxmox 8: it resized at once)."""
        return _upid(
            self._write(
                node, "PUT", f"/nodes/{node}/qemu/{vmid}/resize", {"disk": disk, "size": render_size(size)}
            )
        )

    def power(self, node: str, vmid: int, action: str, *, timeout: int | None = None) -> str | None:
        """``start``, ``stop``, ``shutdown`` or ``reboot``; answers the task. A ``shutdown`` with a
        ``timeout`` gives up after that many seconds, leaving the guest running (no forced stop)."""
        params: dict[str, Any] | None = None
        if action == "shutdown" and timeout is not None:
            params = {"timeout": timeout, "forceStop": False}
        return _upid(self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/status/{action}", params))

    def destroy(self, node: str, vmid: int) -> str | None:
        """Destroy a stopped guest with every disk it has; answers the task."""
        return _upid(
            self._write(
                node,
                "DELETE",
                f"/nodes/{node}/qemu/{vmid}",
                {"purge": True, "destroy-unreferenced-disks": True},
            )
        )

    def guest_interfaces(self, node: str, vmid: int) -> tuple[GuestInterface, ...]:
        """What the guest agent reports of the VM's network interfaces."""
        return parse_interfaces(
            self._read_once(node, f"/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces")
        )

    def usage(self, node: str, vmid: int, timeframe: str) -> VmUsage:
        """The VM's usage over ``timeframe`` (one of usage.TIMEFRAMES), Proxmox's averages: one read."""
        params = {"timeframe": timeframe, "cf": "AVERAGE"}
        return VmUsage.parse(timeframe, self._read(f"/nodes/{node}/qemu/{vmid}/rrddata", params, node=node))

    def migration_check(self, node: str, vmid: int) -> MigrationCheck:
        """Proxmox's precondition of migrating the guest."""
        return MigrationCheck.parse(self._read(f"/nodes/{node}/qemu/{vmid}/migrate", node=node))

    def migrate(
        self, node: str, vmid: int, target: str, *, online: bool, with_local_disks: bool
    ) -> str | None:
        """Migrate the guest to node ``target`` (live when ``online``, copying its local disks when
        ``with_local_disks``); answers the task."""
        params = with_set({"target": target}, {"online": online, "with-local-disks": with_local_disks})
        return _upid(self._write(node, "POST", f"/nodes/{node}/qemu/{vmid}/migrate", params))

    # ----------------------------------------------------------- tasks

    def task_status(self, node: str, upid: str) -> TaskStatus:
        """A task's status; ``NotFound`` when Proxmox knows no such task."""
        try:
            data = self._read(f"/nodes/{node}/tasks/{upid}/status", node=node)
        except UpstreamFailure as exc:
            if "unable to parse worker upid" in exc.message or "no such task" in exc.message:
                raise NotFound("task", upid) from exc
            raise
        return TaskStatus.from_status(data)

    def task_log(self, node: str, upid: str, limit: int) -> list[str]:
        data = self._read(f"/nodes/{node}/tasks/{upid}/log", {"start": "0", "limit": str(limit)}, node=node)
        return [str(line.get("t", "")) for line in data or [] if isinstance(line, dict)]

    def tasks(
        self, node: str, *, limit: int, since: int | None = None, vmid: int | None = None
    ) -> list[TaskEntry]:
        """The node's latest tasks (the running ones with them), of one guest when ``vmid`` is given."""
        params = {"limit": str(limit), "source": "all"}
        if since is not None:
            params["since"] = str(since)
        if vmid is not None:
            params["vmid"] = str(vmid)
        listing = self._read(f"/nodes/{node}/tasks", params, node=node)
        return [
            TaskEntry(str(entry["upid"]), TaskStatus.from_listing(entry))
            for entry in listing or []
            if isinstance(entry, dict) and entry.get("upid")
        ]

    # ----------------------------------------------------------- pools

    def create_pool(self, poolid: str, comment: str) -> None:
        self.source.zone_write(self.targets, "POST", "/pools", {"poolid": poolid, "comment": comment})

    def delete_pool(self, poolid: str) -> None:
        self.source.zone_write(self.targets, "DELETE", f"/pools/{poolid}")

    # ----------------------------------------------------------- a node's own agent

    def _own_agent(self, node: str) -> AgentTarget:
        """The agent of ``node`` itself: a snippet or a template lives on the node, so no failover."""
        identity = host_identity(self.zone, node)
        for target in self.targets.targets:
            if target.identity == identity:
                return target
        raise Unavailable(f"{self.zone}/{node}", f"host {node} of zone {self.zone} is not in the catalog")

    def _agent_call(self, node: str, doing: str, call: Callable[[AgentTarget], T]) -> T:
        where = f"{self.zone}/{node}"
        target = self._own_agent(node)
        try:
            return call(target)
        except (AgentUnavailable, ProxmoxUnreachable, AgentDeadlineExceeded) as exc:
            raise Unavailable(where, f"{doing} on host {node}: {exc}") from exc
        except AgentError as exc:
            raise UpstreamFailure(where, f"{doing} on host {node}: {exc}") from exc

    def write_snippet(self, node: str, name: str, content: bytes) -> str:
        """Write the cloud-init snippet ``name`` on ``node`` (through its own agent); its volume id."""
        return self._agent_call(
            node,
            f"writing cloud-init snippet {name}",
            lambda target: self.source.pool.write_snippet(target, name, content, timeout=SNIPPET_TIMEOUT),
        )

    def delete_snippet(self, node: str, name: str) -> None:
        """Remove the cloud-init snippet ``name`` from ``node``; a missing one is no error, nor is a name
        no snippet could have (none was written under it)."""
        try:
            check_snippet_name(name)
        except ValueError:
            return
        self._agent_call(
            node,
            f"removing cloud-init snippet {name}",
            lambda target: self.source.pool.delete_snippet(target, name, timeout=SNIPPET_TIMEOUT),
        )

    def ensure_template(
        self, node: str, image: str, url: str, checksum: str, storage: str, *, timeout: float
    ) -> Template:
        """The image's template on ``node``, downloaded and imported by the node's agent the first time,
        if it is ready within ``timeout``. One that is not (the agent reported it under way) is
        ``ImagePreparing``, saying how far it is: the agent goes on without the caller, and asking again
        follows the same work. An agent that reported nothing in that time is ``Unavailable``; an image
        the agent refuses (its URL, its checksum) ``ValidationFailed`` on ``image``."""
        return self._ensure(node, image, url, checksum, storage, timeout, _Watch())

    def start_template(
        self, node: str, image: str, url: str, checksum: str, storage: str, *, timeout: float
    ) -> None:
        """Have the node's agent make the image's template ready, without waiting for it: this returns once
        the agent has looked for the template (its first report past that look: done at once when the
        template is there; else the download begun, or a job already under way), which the agent then
        carries to its end on its own. ``Unavailable`` when the agent did not get that far within
        ``timeout``; an image it refuses is ``ValidationFailed`` on ``image``."""
        try:
            self._ensure(node, image, url, checksum, storage, timeout, _Watch(until_looked=True))
        except _TakenOn:
            return

    def _ensure(
        self, node: str, image: str, url: str, checksum: str, storage: str, timeout: float, watch: _Watch
    ) -> Template:
        where = f"{self.zone}/{node}"
        target = self._own_agent(node)
        try:
            ref = self.source.pool.ensure_template(
                target, image, url, checksum, storage, timeout=timeout, on_progress=watch.seen
            )
        except (ValueError, ImageRefused) as exc:
            raise ValidationFailed("image", f"image {image} cannot be used: {exc}") from exc
        except AgentDeadlineExceeded as exc:
            preparing = watch.preparing()
            if preparing is None:
                raise Unavailable(
                    where, f"the image's template could not be made ready on {node}: {exc}"
                ) from exc
            raise ImagePreparing(
                where,
                f"image {image} is not ready on host {node} of zone {self.zone} yet: {describe(preparing)}",
                preparing.seconds_left,
            ) from exc
        except (AgentUnavailable, ProxmoxUnreachable) as exc:
            raise Unavailable(
                where, f"the image's template could not be made ready on {node}: {exc}"
            ) from exc
        except AgentError as exc:
            raise UpstreamFailure(where, str(exc)) from exc
        return Template(ref.node, ref.vmid)


class _TakenOn(Exception):
    """The agent has taken the work on: the caller may go (``start_template``)."""


class _Watch:
    """EnsureTemplate's reports as they come, to say how far the template is when the caller stops waiting."""

    def __init__(self, *, until_looked: bool = False) -> None:
        # Stop at the first report past the agent's opening look for the template (``_TakenOn``): from
        # then on the agent works on its own (and a template already there has been found: no call of
        # the agent's to its Proxmox outlives the caller's).
        self.until_looked = until_looked
        self.latest: TemplateProgress | None = None
        self.samples: list[tuple[float, TemplateProgress]] = []

    def seen(self, progress: TemplateProgress) -> None:
        if self.until_looked and (self.latest is not None or progress.phase is not TemplatePhase.CHECKING):
            raise _TakenOn
        self.latest = progress
        self.samples.append((time.monotonic(), progress))

    def preparing(self) -> TemplatePreparing | None:
        """The latest report as a ``TemplatePreparing`` (None: no report, or it was done), with the rate
        of its phase's bytes over the reports of that phase seen."""
        latest = self.latest
        if latest is None or latest.phase is TemplatePhase.DONE:
            return None
        same = [(at, p.bytes_done) for at, p in self.samples if p.phase is latest.phase]
        rate = None
        if len(same) > 1 and same[-1][0] > same[0][0] and same[-1][1] > same[0][1]:
            rate = (same[-1][1] - same[0][1]) / (same[-1][0] - same[0][0])
        return TemplatePreparing(latest.phase.value, latest.bytes_done, latest.bytes_total, rate)


_DOING = {
    "checking": "its agent is checking the image's source",
    "downloading": "its agent is downloading it",
    "verifying": "its agent is verifying the download's checksum",
    "importing": "its agent is importing it into Proxmox",
}


def describe(preparing: TemplatePreparing) -> str:
    """How far an image's template is, for a person: what the agent does, the bytes, the time left."""
    text = _DOING.get(preparing.phase, f"its agent is at {preparing.phase}")
    done, total = preparing.bytes_done, preparing.bytes_total
    if preparing.phase in ("downloading", "importing") and total > 0:
        text += f", {size_text(done)} of {size_text(total)} ({min(done * 100 // total, 100)}%)"
    elif preparing.phase == "downloading" and done > 0:
        text += f", {size_text(done)} so far"
    left = preparing.seconds_left
    if left is not None:
        text += f", about {duration_text(left)} left at {size_text(int(preparing.rate or 0))}/s"
    return text


def size_text(count: int) -> str:
    """Bytes in binary units, one decimal: 384 KiB, 1.5 GiB."""
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" or value.is_integer() else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def duration_text(seconds: float) -> str:
    """A rough duration: 40 s, 3 min, 2 h."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{round(seconds / 3600)} h"
