"""Hosts over their life: cordon, drain and removal, and what the admin sees of each host.

Everything here needs ADMIN.

Cordoning flips the catalog host's ``cordoned``: placement puts no new VM there, the VMs on it keep
running. Removing a host only removes its catalog entry (Proxmox is untouched), and is refused while
VMs are on it (or, unless forced, while its zone cannot say); from then on nothing dials its agent,
because every call finds its agents in the catalog. "VMs" are every QEMU guest of the node, flex.plane's
or not; templates (the images' copies on each host) are not VMs and stay.

A drain cordons the host, then migrates its VMs one after another (live when they run) to hosts that
placement picks: same zone, online, not cordoned, with every storage the VM's disks are on and room for
it, and not refused by Proxmox's own precondition. It follows each Proxmox migration task to its end. A
VM that cannot move (no host fits, local devices, a held lock, Proxmox refuses) is recorded with the
reason, and the drain goes on with the others. VDC quotas need no check: a VM that moves within its zone
uses what it used before.

The orchestrator keeps no state, so neither does a drain: its record is a ConfigMap of the platform
namespace (kind ``host-drain``, id ``<zone>.<node>``), rewritten as the drain goes. The work runs in a
background thread of the replica that was asked. That thread claims the record (``runner``) and shows
it is alive by writing ``heartbeat`` at least every ``HEARTBEAT`` seconds; a record whose runner has
been quiet for ``STALE_AFTER`` seconds is *interrupted* (its replica stopped), and calling
``drain_host`` again takes it over. Calling it again is always safe: the drain reads the host from
Proxmox again before each VM, so a VM no longer there is not moved twice, a migration under way is
followed by its task, and the VMs still there (those that could not move before too) are tried again.
The record lives until the host is uncordoned or removed.

How a drain relates to tasks: each VM's migration is a Proxmox task (``qmigrate``) whose id the drain
records per VM (read it with ``tasks.get_task`` like any other); the drain itself is no Proxmox task,
so it is not a ``Task`` but a ``HostDrain`` of its own.
"""

from __future__ import annotations

import logging
import math
import os
import re
import secrets
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agentclient import AgentInfo
from orchestrator.auth import Principal
from orchestrator.errors import Conflict, FlexPlaneError, NotFound, Unavailable
from orchestrator.models import Host
from orchestrator.models.tasks import Upid
from orchestrator.models.vms import vdc_in
from orchestrator.models.zones import host_ident
from orchestrator.services import access, catalog, inventory
from orchestrator.services.context import Context
from orchestrator.services.placement import MIB, NoCapacity, PlacementRequest, place
from orchestrator.services.tasks import ZoneApi, encode_task_id, task_failure
from orchestrator.sources.kube import CatalogEntry, kube
from orchestrator.sources.proxmox import proxmox

logger = logging.getLogger(__name__)

DRAIN = "host-drain"
# A running drain writes its record at least this often (seconds), and is interrupted once quiet this long.
HEARTBEAT = 10.0
STALE_AFTER = 60.0
# How long one VM's migration may take before the drain stops waiting for it.
MIGRATION_TIMEOUT = 4 * 3600.0
GIB = 1024**3

# A drain's states: RUNNING, then DONE (every VM moved), INCOMPLETE (some could not) or FAILED (the
# drain itself stopped: see its message). INTERRUPTED is no stored state: a RUNNING record gone stale.
RUNNING, DONE, INCOMPLETE, FAILED, INTERRUPTED = "RUNNING", "DONE", "INCOMPLETE", "FAILED", "INTERRUPTED"
# A VM's: PENDING, MIGRATING, then MOVED, FAILED (with the reason) or GONE (deleted meanwhile).
PENDING, MIGRATING, MOVED, VM_FAILED, GONE = "PENDING", "MIGRATING", "MOVED", "FAILED", "GONE"

# The config keys of a QEMU guest's disks, and a drive's size option.
_DRIVE = re.compile(r"^(?:ide|sata|scsi|virtio|unused)\d+$|^efidisk0$|^tpmstate0$")
_STORAGE_ID = re.compile(r"^[a-zA-Z][a-zA-Z0-9._-]*$")


def _now() -> datetime:
    return datetime.now(UTC)


def _time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _where(zone: str, node: str) -> str:
    return f"host {node} of zone {zone}"


# ------------------------------------------------------------------------------------ the drain record


@dataclass
class DrainVm:
    """One VM of a drain: where it went, or why it could not."""

    vmid: int
    name: str
    vdc: str | None
    state: str = PENDING
    target: str | None = None
    reason: str = ""
    upid: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> DrainVm:
        return cls(
            vmid=int(spec["vmid"]),
            name=str(spec.get("name") or ""),
            vdc=spec.get("vdc") or None,
            state=str(spec.get("state") or PENDING),
            target=spec.get("target") or None,
            reason=str(spec.get("reason") or ""),
            upid=spec.get("upid") or None,
            started_at=_time(spec.get("startedAt")),
            ended_at=_time(spec.get("endedAt")),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "vmid": self.vmid,
            "name": self.name,
            "vdc": self.vdc,
            "state": self.state,
            "target": self.target,
            "reason": self.reason,
            "upid": self.upid,
            "startedAt": _iso(self.started_at),
            "endedAt": _iso(self.ended_at),
        }

    def end(self, state: str, reason: str = "", target: str | None = None) -> None:
        self.state, self.reason, self.ended_at = state, reason, _now()
        if target is not None:
            self.target = target


@dataclass
class HostDrain:
    """A host's drain as recorded in the management cluster."""

    zone: str
    node: str
    state: str
    vms: list[DrainVm]
    requested_by: str
    started_at: datetime
    updated_at: datetime
    runner: str
    heartbeat: datetime
    ended_at: datetime | None = None
    message: str = ""
    resource_version: str = field(default="", compare=False)

    @classmethod
    def from_entry(cls, entry: CatalogEntry) -> HostDrain:
        """The record as stored; what does not parse reads as a drain that stopped long ago."""
        spec = entry.spec
        zone, _, node = entry.ident.partition(".")
        long_ago = datetime.fromtimestamp(0, UTC)
        vms: list[DrainVm] = []
        for item in spec.get("vms") or []:
            try:
                vms.append(DrainVm.from_spec(item))
            except (KeyError, TypeError, ValueError):
                logger.warning("drain %s: skipping an unreadable VM entry %r", entry.ident, item)
        return cls(
            zone=str(spec.get("zone") or zone),
            node=str(spec.get("node") or node),
            state=str(spec.get("state") or FAILED),
            vms=vms,
            requested_by=str(spec.get("requestedBy") or ""),
            started_at=_time(spec.get("startedAt")) or long_ago,
            updated_at=_time(spec.get("updatedAt")) or long_ago,
            runner=str(spec.get("runner") or ""),
            heartbeat=_time(spec.get("heartbeat")) or long_ago,
            ended_at=_time(spec.get("endedAt")),
            message=str(spec.get("message") or ""),
            resource_version=entry.resource_version,
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "zone": self.zone,
            "node": self.node,
            "state": self.state,
            "vms": [vm.to_spec() for vm in self.vms],
            "requestedBy": self.requested_by,
            "startedAt": _iso(self.started_at),
            "updatedAt": _iso(self.updated_at),
            "endedAt": _iso(self.ended_at),
            "runner": self.runner,
            "heartbeat": _iso(self.heartbeat),
            "message": self.message,
        }

    @property
    def ident(self) -> str:
        return host_ident(self.zone, self.node)

    @property
    def status(self) -> str:
        """The state as a reader should see it: a RUNNING record whose runner went quiet is INTERRUPTED."""
        if self.state == RUNNING and _now() - self.heartbeat > timedelta(seconds=STALE_AFTER):
            return INTERRUPTED
        return self.state

    @property
    def active(self) -> bool:
        return self.status == RUNNING

    def task_id(self, vm: DrainVm) -> str | None:
        """The id of the VM's migration task, as ``task(id)`` reads it."""
        return encode_task_id(self.zone, vm.upid, vm.vdc or "") if vm.upid else None


def _load(zone: str, node: str) -> HostDrain | None:
    entry = kube().get_catalog(DRAIN, host_ident(zone, node))
    return HostDrain.from_entry(entry) if entry is not None else None


def _labels(drain: HostDrain) -> dict[str, str]:
    return {catalog.ZONE_LABEL: drain.zone}


def _store(drain: HostDrain, *, create: bool) -> HostDrain:
    """Write the record (create it, or replace it at the version read); ``Conflict`` if another writer won."""
    drain.updated_at = _now()
    if create:
        entry = kube().create_catalog(DRAIN, drain.ident, drain.to_spec(), labels=_labels(drain))
    else:
        entry = kube().replace_catalog(
            DRAIN, drain.ident, drain.to_spec(), drain.resource_version, labels=_labels(drain)
        )
    drain.resource_version = entry.resource_version
    return drain


def _forget(zone: str, node: str) -> None:
    """Delete a host's drain record (it may have none)."""
    try:
        kube().delete_catalog(DRAIN, host_ident(zone, node))
    except FlexPlaneError as exc:
        logger.warning("drain of %s/%s: record not deleted: %s", zone, node, exc.message)


def _all_drains(ctx: Context) -> dict[str, HostDrain]:
    """Every host's drain record, by host key (one list call per request)."""

    def read() -> dict[str, HostDrain]:
        drains = (HostDrain.from_entry(e) for e in kube().list_catalog([DRAIN]))
        return {f"{d.zone}/{d.node}": d for d in drains}

    return ctx.memoize(("hosts", "drains"), read)


# ------------------------------------------------------------------------------------ cordon, uncordon


def _host(ctx: Context, zone: str, node: str) -> Host:
    for host in catalog.hosts(ctx):
        if host.zone == zone and host.node == node:
            return host
    raise NotFound("host", f"{zone}/{node}")


def cordon_host(ctx: Context, zone: str, node: str) -> Host:
    """Keep new VMs off the host; the VMs on it keep running."""
    access.require_admin(ctx)
    host = _host(ctx, zone, node)
    return host if host.cordoned else catalog.update_host(ctx, zone, node, {"cordoned": True})


def uncordon_host(ctx: Context, zone: str, node: str) -> Host:
    """Let placement use the host again; refused (``Conflict``) while a drain of it runs. Its drain
    record goes: the host is back in service."""
    access.require_admin(ctx)
    host = _host(ctx, zone, node)
    drain = _load(zone, node)
    if drain is not None and drain.active:
        raise Conflict(f"{_where(zone, node)} is being drained: uncordon it once the drain has ended")
    if drain is not None:
        _forget(zone, node)
    return catalog.update_host(ctx, zone, node, {"cordoned": False}) if host.cordoned else host


# ------------------------------------------------------------------------------------------ removal


def _guests(resources: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The QEMU guests (not templates) of a zone's ``/cluster/resources``."""
    return [i for i in resources if i.get("type") == "qemu" and not i.get("template") and i.get("vmid")]


def remove_host(ctx: Context, zone: str, node: str, *, force: bool = False) -> Host:
    """Remove the host from the catalog: Proxmox and the node are untouched, and flex.plane no longer
    dials its agent. Refused (``Conflict``) while VMs are on it: drain it first.

    When no host of the zone answers, whether VMs are on it cannot be told: that is ``Unavailable``,
    unless ``force`` (a dead zone, a host added with a wrong address); VMs known to be there always refuse.
    """
    access.require_admin(ctx)
    _host(ctx, zone, node)

    def empty(_host: Host) -> None:
        try:
            guests = _guests(ZoneApi(ctx, zone).resources("vm"))
        except Unavailable as exc:
            if force:
                return
            raise Unavailable(
                exc.where,
                f"cannot tell whether VMs are on {_where(zone, node)}: {exc.message}; "
                "remove it with force to remove it anyway",
            ) from exc
        names = sorted(str(g.get("name") or g["vmid"]) for g in guests if g.get("node") == node)
        if names:
            count = f"{len(names)} VM" + ("s are" if len(names) > 1 else " is")
            raise Conflict(
                f"{count} still on {_where(zone, node)} ({', '.join(names)}): drain the host first"
            )

    removed = catalog.drop_host(ctx, zone, node, empty)
    _forget(zone, node)
    return removed


# ------------------------------------------------------------------------------------------- draining


def drain_status(ctx: Context, zone: str, node: str) -> HostDrain | None:
    """The host's drain as recorded (None when it is not being drained)."""
    access.require_admin(ctx)
    _host(ctx, zone, node)
    return _load(zone, node)


def drain_host(ctx: Context, zone: str, node: str) -> HostDrain:
    """Cordon the host and move its VMs away, in the background; answers the drain as it starts.

    A drain that runs is returned as it is; one that ended, failed or was interrupted is resumed with
    the VMs on the host now.
    """
    access.require_admin(ctx)
    host = _host(ctx, zone, node)
    current = _load(zone, node)
    if current is not None and current.active:
        return current
    cordon_host(ctx, zone, node)
    on_host = [g for g in _guests(ZoneApi(ctx, zone).resources("vm")) if g.get("node") == node]
    now = _now()
    runner = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
    principal = ctx.principal
    drain = HostDrain(
        zone=host.zone,
        node=host.node,
        state=RUNNING,
        vms=_resumed(current.vms if current else [], on_host),
        requested_by=principal.name or principal.subject,
        started_at=now,
        updated_at=now,
        runner=runner,
        heartbeat=now,
        resource_version=current.resource_version if current else "",
    )
    try:
        _store(drain, create=current is None)
    except (Conflict, NotFound):
        # Another request (on this replica or another) claimed or ended it first: that drain is the one.
        claimed = _load(zone, node)
        if claimed is None:
            raise Conflict(f"the drain of {_where(zone, node)} changed meanwhile, retry") from None
        return claimed
    threading.Thread(
        target=_run, args=(principal, zone, node, runner), name=f"drain-{zone}-{node}", daemon=True
    ).start()
    return drain


def _resumed(before: list[DrainVm], on_host: Sequence[Mapping[str, Any]]) -> list[DrainVm]:
    """A resumed drain's VMs: those it moved (or found gone) stay as they were, a migration under way
    is followed, and every VM on the host now (those that could not move before too) is to move."""
    kept = {vm.vmid: vm for vm in before if vm.state in (MOVED, GONE, MIGRATING)}
    for vm in before:
        if vm.vmid not in kept:
            kept[vm.vmid] = DrainVm(vm.vmid, vm.name, vm.vdc)
    for guest in on_host:
        vmid = int(guest["vmid"])
        if vmid not in kept or kept[vmid].state in (MOVED, GONE):
            kept[vmid] = DrainVm(vmid, str(guest.get("name") or ""), vdc_in(guest.get("tags")))
    return sorted(kept.values(), key=lambda vm: vm.vmid)


class _Stop(Exception):
    """The drain's record is no longer this runner's (taken over, or deleted with its host)."""


class _Runner:
    """One drain's background work, writing its record as it goes."""

    def __init__(self, principal: Principal, zone: str, node: str, runner: str) -> None:
        self.principal = principal
        self.zone = zone
        self.node = node
        self.runner = runner

    def record(self) -> HostDrain:
        drain = _load(self.zone, self.node)
        if drain is None or drain.runner != self.runner:
            raise _Stop
        return drain

    def save(self, drain: HostDrain) -> None:
        """Write the record with a fresh heartbeat; stop when someone else's write got there first."""
        drain.heartbeat = _now()
        try:
            _store(drain, create=False)
        except (Conflict, NotFound):
            raise _Stop from None

    def run(self) -> None:
        try:
            while self.step(self.record()):
                pass
        except _Stop:
            logger.info("drain of %s/%s: no longer this runner's, stopping", self.zone, self.node)
        except FlexPlaneError as exc:
            self.fail(f"the drain stopped: {exc.message}; drain the host again to resume")
        except Exception:
            logger.exception("drain of %s/%s failed", self.zone, self.node)
            self.fail(
                "the drain stopped on an internal error (see the orchestrator's log); drain the host again"
            )

    def fail(self, message: str) -> None:
        try:
            drain = self.record()
            drain.state, drain.message, drain.ended_at = FAILED, message, _now()
            self.save(drain)
        except (_Stop, FlexPlaneError) as exc:
            logger.warning(
                "drain of %s/%s: could not record its failure (%s): %s", self.zone, self.node, exc, message
            )

    def step(self, drain: HostDrain) -> bool:
        """Move the next VM, or end the drain when none is left; False once it ended."""
        ctx = Context(principal=self.principal)  # fresh reads for every step: no memo outlives it
        if not any(h.zone == self.zone and h.node == self.node for h in catalog.hosts(ctx)):
            raise _Stop  # removed from the catalog
        api = ZoneApi(ctx, self.zone)
        resources = api.resources()
        here = self.reconcile(drain, _guests(resources))
        following = next((vm for vm in drain.vms if vm.state == MIGRATING), None)
        if following is not None:
            self.follow(api, drain, following)
            return True
        pending = next((vm for vm in drain.vms if vm.state == PENDING), None)
        if pending is None:
            drain.state = INCOMPLETE if any(vm.state == VM_FAILED for vm in drain.vms) else DONE
            drain.ended_at = _now()
            moved = sum(1 for vm in drain.vms if vm.state == MOVED)
            drain.message = (
                f"{moved} of {len(drain.vms)} VM(s) moved" if drain.vms else "no VMs were on the host"
            )
            self.save(drain)
            return False
        self.migrate(ctx, api, drain, pending, here[pending.vmid], resources)
        return True

    def reconcile(self, drain: HostDrain, guests: list[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
        """Bring the record in line with where the VMs are now; answers the guests still on the host."""
        where = {int(g["vmid"]): g for g in guests}
        here = {vmid: g for vmid, g in where.items() if g.get("node") == self.node}
        known = {vm.vmid for vm in drain.vms}
        for vm in drain.vms:
            if vm.state not in (PENDING, MIGRATING) or vm.vmid in here:
                continue
            if vm.vmid not in where:
                vm.end(GONE, "the VM was deleted meanwhile")
            elif vm.state == MIGRATING:
                vm.end(MOVED, target=str(where[vm.vmid].get("node")))
            else:
                vm.end(MOVED, "moved meanwhile, not by this drain", str(where[vm.vmid].get("node")))
        for vmid, guest in sorted(here.items()):
            if vmid not in known:  # arrived since the drain started
                drain.vms.append(DrainVm(vmid, str(guest.get("name") or ""), vdc_in(guest.get("tags"))))
        return here

    def migrate(
        self,
        ctx: Context,
        api: ZoneApi,
        drain: HostDrain,
        vm: DrainVm,
        guest: Mapping[str, Any],
        resources: Sequence[Mapping[str, Any]],
    ) -> None:
        vm.started_at = _now()
        try:
            check = api.migration_check(self.node, vm.vmid)
            target, local_disks = _target(ctx, api, self.node, vm, guest, check, resources)
            # A running VM moves live, its local disks copied along; a stopped one offline, disks and all.
            running = guest.get("status") == "running"
            answer = api.migrate(
                self.node, vm.vmid, target, online=running, with_local_disks=running and local_disks
            )
        except _Unmovable as exc:
            vm.end(VM_FAILED, exc.reason)
            self.save(drain)
            return
        except FlexPlaneError as exc:
            if isinstance(exc, Unavailable) and exc.where == self.zone:
                raise  # the zone itself is away: the drain stops here, to be resumed
            vm.end(VM_FAILED, f"Proxmox refused: {exc.message}")
            self.save(drain)
            return
        upid = Upid.parse(answer) if isinstance(answer, str) else None
        if upid is None:
            vm.end(VM_FAILED, f"Proxmox answered {answer!r} instead of a migration task")
        else:
            vm.state, vm.target, vm.upid = MIGRATING, target, upid.raw
        self.save(drain)

    def follow(self, api: ZoneApi, drain: HostDrain, vm: DrainVm) -> None:
        """Wait for the VM's migration task to end (writing the heartbeat meanwhile), and record how."""
        upid = Upid.parse(vm.upid or "")
        if upid is None:
            vm.end(VM_FAILED, "the drain lost track of its migration task")
            self.save(drain)
            return
        task_id = drain.task_id(vm) or ""
        started = vm.started_at or _now()
        while True:
            try:
                task = api.wait(task_id, upid, HEARTBEAT)
            except NotFound:
                vm.end(VM_FAILED, f"Proxmox no longer knows its migration task {upid.raw}")
                self.save(drain)
                return
            if not task.running:
                break
            if _now() - started > timedelta(seconds=MIGRATION_TIMEOUT):
                vm.end(
                    VM_FAILED, f"the migration did not end within {MIGRATION_TIMEOUT:g} s (task {upid.raw})"
                )
                self.save(drain)
                return
            self.save(drain)  # the heartbeat: this drain is alive
        if task.failed:
            vm.end(
                VM_FAILED,
                task_failure(self.zone, task, f"migrating VM {vm.name or vm.vmid} to {vm.target}").message,
            )
        else:
            vm.end(MOVED)
        self.save(drain)


def _run(principal: Principal, zone: str, node: str, runner: str) -> None:
    _Runner(principal, zone, node, runner).run()


class _Unmovable(Exception):
    """The VM cannot move: ``reason`` says why, for the drain's record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _disks(config: Mapping[str, Any]) -> list[str]:
    """The storages the VM's disks are on, in device order (CD-ROMs too: the target needs their storage)."""
    found: list[str] = []
    for key in sorted(config):
        if not _DRIVE.match(key):
            continue
        volume = str(config[key]).split(",", 1)[0]
        storage = volume.split(":", 1)[0] if ":" in volume else ""
        if _STORAGE_ID.match(storage) and storage not in found:
            found.append(storage)
    return found


def _target(
    ctx: Context,
    api: ZoneApi,
    node: str,
    vm: DrainVm,
    guest: Mapping[str, Any],
    check: Mapping[str, Any],
    resources: Sequence[Mapping[str, Any]],
) -> tuple[str, bool]:
    """The host placement picks for the VM, and whether its local disks go with it (``_Unmovable``: none)."""
    devices = [str(d) for d in check.get("local_resources") or []]
    if devices:
        raise _Unmovable(
            f"it uses local devices of the host ({', '.join(devices)}), which cannot move with it"
        )
    local = [d for d in check.get("local_disks") or [] if isinstance(d, Mapping) and not d.get("cdrom")]
    local_bytes: dict[str, int] = {}
    for disk in local:
        storage = str(disk.get("volid") or "").split(":", 1)[0]
        local_bytes[storage] = local_bytes.get(storage, 0) + int(disk.get("size") or 0)
    storages = _disks(api.config(node, vm.vmid))
    if not storages:
        raise _Unmovable("it has no disk on a Proxmox storage, so placement cannot choose a host for it")
    primary = max(storages, key=lambda s: (local_bytes.get(s, 0), -storages.index(s)))
    request = PlacementRequest(
        zone=api.zone,
        vdc=vm.vdc or "",
        vcpus=int(guest.get("maxcpu") or 1),
        memory_mib=math.ceil(int(guest.get("maxmem") or 0) / MIB),
        disk_gb=math.ceil(local_bytes.get(primary, 0) / GIB),
        storage=primary,
        other_storages=tuple(s for s in storages if s != primary),
    )
    allowed, refused = _proxmox_verdict(check)
    candidates: list[Host] = []
    excluded: dict[str, str] = {}
    for host in catalog.hosts(ctx):
        if host.zone != api.zone or host.node == node:
            continue
        if host.node in refused:
            excluded[host.node] = refused[host.node]
        elif allowed is not None and host.node not in allowed:
            excluded[host.node] = "not among the nodes it allows"
        else:
            candidates.append(host)
    why_not = "; ".join(f"{n}: Proxmox refuses it ({reason})" for n, reason in sorted(excluded.items()))
    if not candidates:
        raise _Unmovable(
            f"no other host of zone {api.zone} can take it" + (f": {why_not}" if why_not else "")
        )
    try:
        placement = place(request, candidates, resources)
    except NoCapacity as exc:
        raise _Unmovable(exc.message + (f"; {why_not}" if why_not else "")) from None
    assert placement.host is not None  # place() raises NoCapacity otherwise
    return placement.host, bool(local)


def _proxmox_verdict(check: Mapping[str, Any]) -> tuple[set[str] | None, dict[str, str]]:
    """What Proxmox's precondition says of the other nodes (it judges them for a stopped VM only): the
    nodes it allows (None: it does not say), and those it rules out with its reasons."""
    allowed = check.get("allowed_nodes")
    refused: dict[str, str] = {}
    not_allowed = check.get("not_allowed_nodes")
    for name, why in not_allowed.items() if isinstance(not_allowed, Mapping) else []:
        details = why if isinstance(why, Mapping) else {}
        parts = [
            f"{key.replace('_', ' ').replace('-', ' ')}: {', '.join(map(str, value))}"
            for key, value in sorted(details.items())
            if isinstance(value, list) and value
        ]
        refused[str(name)] = "; ".join(parts) or "not allowed"
    return ({str(n) for n in allowed} if isinstance(allowed, list) else None), refused


# ------------------------------------------------------------------------------------ what the admin sees


@dataclass(frozen=True)
class HostUsage:
    """A node's use of its resources as ``/cluster/resources`` reports it (None: not reported)."""

    cpu_fraction: float | None
    cpu_cores: int | None
    memory_used: int | None
    memory_total: int | None
    storage_used: int | None
    storage_total: int | None

    @classmethod
    def from_node(cls, item: Mapping[str, Any]) -> HostUsage:
        def number(key: str) -> int | None:
            value = item.get(key)
            return int(value) if isinstance(value, int | float) else None

        cpu = item.get("cpu")
        return cls(
            cpu_fraction=float(cpu) if isinstance(cpu, int | float) else None,
            cpu_cores=number("maxcpu"),
            memory_used=number("mem"),
            memory_total=number("maxmem"),
            storage_used=number("disk"),
            storage_total=number("maxdisk"),
        )


@dataclass(frozen=True)
class CertificateRenewal:
    """How the agent's certificate renewal went."""

    last_success_at: datetime | None
    last_error: str
    failures: int
    next_attempt_at: datetime | None


@dataclass(frozen=True)
class UpdateOutcome:
    """The agent's last self-update: ``result`` is none, updated, refused, rolled-back or failed."""

    result: str
    from_version: str
    to_version: str
    message: str
    at: datetime | None


@dataclass(frozen=True)
class AgentReport:
    """What a host's agent says about itself."""

    version: str
    proxmox_version: str
    certificate_expires_at: datetime | None
    renewal: CertificateRenewal
    last_update: UpdateOutcome

    @classmethod
    def from_info(cls, info: AgentInfo) -> AgentReport:
        renewal, update = info.renewal, info.update
        return cls(
            version=info.version,
            proxmox_version=info.proxmox_version,
            certificate_expires_at=_unix(info.certificate_not_after),
            renewal=CertificateRenewal(
                last_success_at=_unix(renewal.last_success),
                last_error=renewal.last_error,
                failures=renewal.failures,
                next_attempt_at=_unix(renewal.next_attempt),
            ),
            last_update=UpdateOutcome(
                result=update.result,
                from_version=update.from_version,
                to_version=update.to_version,
                message=update.message,
                at=_unix(update.at),
            ),
        )


def _unix(seconds: int) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None


@dataclass(frozen=True)
class HostDetails:
    """A host as the admin sees it. ``agent`` is None when its agent did not answer (``agent_problem``
    says why, and the request's ``ctx.unavailable`` lists it); ``usage`` when Proxmox did not report the
    node (offline, or its zone did not answer)."""

    host: Host
    online: bool
    agent: AgentReport | None
    agent_problem: Unavailable | None
    usage: HostUsage | None
    drain: HostDrain | None


def _agent_reports(ctx: Context) -> tuple[dict[str, AgentReport], dict[str, Unavailable]]:
    """GetInfo of every host's agent, in parallel under the zone deadline, once per request."""

    def ask() -> tuple[dict[str, AgentReport], dict[str, Unavailable]]:
        fan = proxmox().agent_infos({h.key: h.target for h in catalog.hosts(ctx)})
        ctx.report_unavailable(list(fan.failures.values()))
        return {key: AgentReport.from_info(info) for key, info in fan.results.items()}, fan.failures

    return ctx.memoize(("hosts", "agents"), ask)


def host_details(ctx: Context) -> list[HostDetails]:
    """Every host with its agent's and Proxmox's view of it: one ``/cluster/resources`` per zone (the
    request's), one GetInfo per host (in parallel) and one read of the drains. Hosts or zones that did
    not answer leave their part empty and are reported on ``ctx.unavailable``: the data is partial."""
    access.require_admin(ctx)

    def build() -> list[HostDetails]:
        live = inventory.zone_resources(ctx)
        reports, problems = _agent_reports(ctx)
        drains = _all_drains(ctx)
        out = []
        for host in catalog.hosts(ctx):
            node = live.node_entries.get(host.zone, {}).get(host.node)
            online = node is not None and node.get("status") == "online"
            out.append(
                HostDetails(
                    host=host,
                    online=online,
                    agent=reports.get(host.key),
                    agent_problem=problems.get(host.key),
                    usage=HostUsage.from_node(node) if node is not None and online else None,
                    drain=drains.get(host.key),
                )
            )
        return out

    return ctx.memoize(("hosts", "details"), build)


def details_of(ctx: Context, host: Host) -> HostDetails | None:
    """One host's details for ADMIN (from the request's ``host_details``); None for anyone else."""
    if not ctx.principal.is_admin:
        return None
    return next((d for d in host_details(ctx) if d.host.key == host.key), None)
