"""An in-memory zone with the typed surface of ``sources.proxmox.ZoneApi``, for unit tests of the
services' own logic (no agents, no fake Proxmox over HTTP, no world).

It subclasses ``ZoneApi`` and overrides every public call, so mypy holds it to the real signatures;
nothing of the real client runs (its source is never asked). What a test needs of Proxmox is set on
it (``guests``, ``configs``, ``nodes``, ``storages``, ``checks``), what the services did is read back
(``writes``, ``snippets``). Tasks end at once, successfully, unless ``failing`` names their kind.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from agentclient import AgentTarget
from agentclient.templates import template_name, template_tags
from orchestrator.errors import NotFound, UpstreamFailure
from orchestrator.sources.proxmox import (
    ClusterResources,
    ConfigChange,
    Guest,
    GuestInterface,
    MigrationCheck,
    NodeResource,
    ProxmoxSource,
    StorageResource,
    TaskEntry,
    TaskStatus,
    Template,
    VmidTaken,
    ZoneApi,
    ZoneTargets,
)
from orchestrator.sources.qemu_config import QemuConfig, parse_config

GIB = 1024**3
MIB = 1024**2


def guest(vmid: int, node: str = "pve1", *, name: str = "", tags: str = "", **fields: Any) -> Guest:
    """A QEMU VM as ``/cluster/resources`` lists it (1 vCPU, 1 GiB, a 10 GiB disk unless told)."""
    values: dict[str, Any] = {
        "kind": "qemu",
        "vmid": vmid,
        "name": name or f"vm-{vmid}",
        "node": node,
        "status": "stopped",
        "template": False,
        "tags": tags,
        "cpus": 1,
        "memory": GIB,
        "disk": 10 * GIB,
        "pool": "",
        "lock": "",
    }
    values.update(fields)
    return Guest(**values)


def online(node: str, *, cpus: int = 8, memory_gib: int = 32) -> NodeResource:
    return NodeResource(node=node, status="online", maxcpu=cpus, maxmem=memory_gib * GIB)


def storage(
    node: str, name: str = "local-lvm", *, total_gib: int = 500, used_gib: int = 0
) -> StorageResource:
    return StorageResource(
        node=node, storage=name, status="available", used=used_gib * GIB, total=total_gib * GIB
    )


@dataclass
class Write:
    """One write the services sent: what, to which guest, with what."""

    call: str
    node: str
    vmid: int
    params: dict[str, Any] = field(default_factory=dict)


class _Unused(ProxmoxSource):
    """A source nothing may ask: the fake answers every call itself."""

    def __init__(self) -> None:  # no pool, no executor
        pass


class FakeZone(ZoneApi):
    """One zone held in memory."""

    def __init__(self, zone: str = "zone-a", nodes: tuple[str, ...] = ("pve1", "pve2")) -> None:
        targets = tuple(AgentTarget(identity=f"{node}.{zone}", address=f"{node}:7443") for node in nodes)
        super().__init__(_Unused(), ZoneTargets(zone, targets))
        self.nodes = [online(node) for node in nodes]
        self.storages = [storage(node) for node in nodes]
        self.guests: dict[int, Guest] = {}
        self.configs: dict[int, dict[str, Any]] = {}
        self.checks: dict[int, MigrationCheck] = {}
        self.interfaces: dict[int, tuple[GuestInterface, ...]] = {}
        self.templates: dict[tuple[str, str], Template] = {}
        self.started: list[tuple[str, str, str]] = []
        self.snippets: dict[tuple[str, str], bytes] = {}
        self.writes: list[Write] = []
        self.failing: set[str] = set()
        # VMIDs /cluster/nextid hands out before it picks free ones (a race with another create).
        self.handing_out: list[int] = []
        self._tasks: dict[str, TaskStatus] = {}
        self._vmids = itertools.count(100)
        self._pids = itertools.count(1)

    # ----------------------------------------------------------- set-up

    def add(self, vm: Guest, config: dict[str, Any] | None = None) -> Guest:
        self.guests[vm.vmid] = vm
        self.configs[vm.vmid] = dict(
            config or {"scsi0": f"local-lvm:vm-{vm.vmid}-disk-0,size={vm.disk // GIB}G"}
        )
        return vm

    def _task(self, node: str, kind: str, vmid: int) -> str:
        upid = f"UPID:{node}:{next(self._pids):08X}:00000001:6B0CA1DA:{kind}:{vmid}:root@pam:"
        failed = kind in self.failing
        self._tasks[upid] = TaskStatus(status="stopped", exitstatus="boom" if failed else "OK", kind=kind)
        return upid

    def _write(self, node: str | None, method: str, path: str, params: dict[str, Any] | None = None) -> Any:
        raise AssertionError(f"the fake zone was asked for {method} {path} directly")

    def _read(self, path: str, params: dict[str, str] | None = None, *, node: str | None = None) -> Any:
        raise AssertionError(f"the fake zone was asked for GET {path} directly")

    # ----------------------------------------------------------- the cluster

    def resources(self, kind: str | None = None) -> ClusterResources:
        if kind == "vm":
            return ClusterResources(tuple(self.guests.values()))
        return ClusterResources(tuple(self.guests.values()), tuple(self.nodes), tuple(self.storages))

    def next_vmid(self) -> int:
        if self.handing_out:
            return self.handing_out.pop(0)
        while (vmid := next(self._vmids)) in self.guests:
            pass
        return vmid

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
        if newid in self.guests:
            raise VmidTaken(self.zone, f"VM {newid} already exists")
        source = self.configs.get(vmid, {})
        self.guests[newid] = guest(newid, target or node, name=name, pool=pool)
        self.configs[newid] = {**source, "description": description}
        self.writes.append(
            Write("clone", node, vmid, {"newid": newid, "target": target, "name": name, "full": full})
        )
        return self._task(node, "qmclone", vmid)

    def config(self, node: str, vmid: int) -> QemuConfig:
        if vmid not in self.configs:
            raise UpstreamFailure(
                self.zone, f"Configuration file 'nodes/{node}/qemu-server/{vmid}.conf' does not exist"
            )
        return parse_config(self.configs[vmid])

    def _apply(self, vmid: int, change: ConfigChange) -> dict[str, Any]:
        params = change.render()
        self.configs.setdefault(vmid, {}).update(params)
        current = self.guests.get(vmid)
        if current is not None:
            self.guests[vmid] = current._replace(
                cpus=change.cores or current.cpus,
                memory=change.memory_mib * MIB if change.memory_mib else current.memory,
                tags=params.get("tags", current.tags),
            )
        return params

    def set_config(self, node: str, vmid: int, change: ConfigChange) -> None:
        self.writes.append(Write("set_config", node, vmid, self._apply(vmid, change)))

    def change_config(self, node: str, vmid: int, change: ConfigChange) -> str | None:
        self.writes.append(Write("change_config", node, vmid, self._apply(vmid, change)))
        return self._task(node, "qmconfig", vmid)

    def resize_disk(self, node: str, vmid: int, disk: str, size: int) -> str | None:
        self.writes.append(Write("resize_disk", node, vmid, {"disk": disk, "size": size}))
        self.guests[vmid] = self.guests[vmid]._replace(disk=size)
        return self._task(node, "resize", vmid)

    def power(self, node: str, vmid: int, action: str, *, timeout: int | None = None) -> str | None:
        self.writes.append(Write(action, node, vmid, {"timeout": timeout} if timeout is not None else {}))
        status = "running" if action in ("start", "reboot") else "stopped"
        if action not in self.failing:
            self.guests[vmid] = self.guests[vmid]._replace(status=status)
        return self._task(node, "qm" + action, vmid)

    def destroy(self, node: str, vmid: int) -> str | None:
        self.writes.append(Write("destroy", node, vmid))
        if "qmdestroy" not in self.failing:
            self.guests.pop(vmid, None)
            self.configs.pop(vmid, None)
        return self._task(node, "qmdestroy", vmid)

    def guest_interfaces(self, node: str, vmid: int) -> tuple[GuestInterface, ...]:
        return self.interfaces.get(vmid, ())

    def migration_check(self, node: str, vmid: int) -> MigrationCheck:
        return self.checks.get(vmid, MigrationCheck())

    def migrate(
        self, node: str, vmid: int, target: str, *, online: bool, with_local_disks: bool
    ) -> str | None:
        self.writes.append(Write("migrate", node, vmid, {"target": target, "online": online}))
        self.guests[vmid] = self.guests[vmid]._replace(node=target)
        return self._task(node, "qmigrate", vmid)

    # ----------------------------------------------------------- tasks

    def task_status(self, node: str, upid: str) -> TaskStatus:
        if upid not in self._tasks:
            raise NotFound("task", upid)
        return self._tasks[upid]

    def task_log(self, node: str, upid: str, limit: int) -> list[str]:
        return [f"TASK {self.task_status(node, upid).exitstatus}"]

    def tasks(
        self, node: str, *, limit: int, since: int | None = None, vmid: int | None = None
    ) -> list[TaskEntry]:
        entries = [
            TaskEntry(upid, status) for upid, status in self._tasks.items() if upid.split(":")[1] == node
        ]
        return entries[:limit]

    # ----------------------------------------------------------- pools, a node's own agent

    def create_pool(self, poolid: str, comment: str) -> None:
        self.writes.append(Write("create_pool", "", 0, {"poolid": poolid}))

    def delete_pool(self, poolid: str) -> None:
        self.writes.append(Write("delete_pool", "", 0, {"poolid": poolid}))

    def write_snippet(self, node: str, name: str, content: bytes) -> str:
        self.snippets[node, name] = content
        return f"local:snippets/{name}"

    def delete_snippet(self, node: str, name: str) -> None:
        self.snippets.pop((node, name), None)

    def ensure_template(
        self, node: str, image: str, url: str, checksum: str, storage: str, *, timeout: float
    ) -> Template:
        """The template, made at once the first time (named and tagged as the agent does)."""
        if (node, image) not in self.templates:
            vmid = 9000 + len(self.templates)
            self.templates[node, image] = Template(node, vmid)
            tags = ";".join(template_tags(image, storage))
            self.add(guest(vmid, node, name=template_name(image), tags=tags, template=True))
        return self.templates[node, image]

    def start_template(
        self, node: str, image: str, url: str, checksum: str, storage: str, *, timeout: float
    ) -> None:
        """Recorded in ``started``; the template is made once a test calls ``ensure_template``."""
        self.started.append((node, image, storage))
