"""Draining a host: cordon it, then move its VMs away, one after another, in the background.

A drain cordons the host, then migrates its VMs one after another (live when they run) to hosts that
placement picks: same zone, online, not cordoned, with every storage the VM's disks are on and room for
it, and not refused by Proxmox's own precondition. It follows each Proxmox migration task to its end. A
VM that cannot move (no host fits, local devices, a held lock, Proxmox refuses) is recorded with the
reason, and the drain goes on with the others. VDC quotas need no check: a VM that moves within its zone
uses what it used before.

The orchestrator keeps no state, so neither does a drain: its record is a ConfigMap of the platform
namespace (kind ``host-drain``, id ``<zone>.<host>``), rewritten as the drain goes. The work runs in a
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
import secrets
import socket
import threading
from collections.abc import Sequence
from datetime import timedelta

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, Unavailable
from orchestrator.models import Host
from orchestrator.models.tasks import Upid
from orchestrator.models.vms import GIB, vdc_in
from orchestrator.services import catalog, inventory, tasks
from orchestrator.services.access import require_admin
from orchestrator.services.context import Context
from orchestrator.services.hosts.lifecycle import cordon_host, host_of
from orchestrator.services.hosts.records import (
    DONE,
    FAILED,
    GONE,
    HEARTBEAT,
    INCOMPLETE,
    MIGRATING,
    MOVED,
    PENDING,
    RUNNING,
    VM_FAILED,
    DrainVm,
    HostDrain,
    all_drains,
    load,
    now,
    store,
    where,
)
from orchestrator.services.placement import MIB, NoCapacity, PlacementRequest, place
from orchestrator.services.tasks import task_failure
from orchestrator.sources.proxmox import ClusterResources, Guest, MigrationCheck, ZoneApi

logger = logging.getLogger(__name__)

# How long one VM's migration may take before the drain stops waiting for it.
MIGRATION_TIMEOUT = 4 * 3600.0


def drain_status(ctx: Context, zone: str, host: str) -> HostDrain | None:
    """The host's drain as recorded (None when it is not being drained)."""
    require_admin(ctx)
    host_of(ctx, zone, host)
    return load(ctx, zone, host)


def drains(ctx: Context) -> list[HostDrain]:
    """Every host's drain as recorded, by zone then host (one read): for pages that follow them live."""
    require_admin(ctx)
    return sorted(all_drains(ctx).values(), key=lambda d: (d.zone, d.host))


def drain_host(ctx: Context, zone: str, host: str) -> HostDrain:
    """Cordon the host and move its VMs away, in the background; answers the drain as it starts.

    A drain that runs is returned as it is; one that ended, failed or was interrupted is resumed with
    the VMs on the host now.
    """
    require_admin(ctx)
    found = host_of(ctx, zone, host)
    current = load(ctx, zone, host)
    if current is not None and current.active:
        return current
    cordon_host(ctx, zone, host)
    on_host = [g for g in inventory.zone_api(ctx, zone).resources("vm").vms if g.node == host]
    at = now()
    runner = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
    principal = ctx.principal
    drain = HostDrain(
        zone=found.zone,
        host=found.node,
        state=RUNNING,
        vms=_resumed(current.vms if current else [], on_host),
        requested_by=principal.name or principal.subject,
        started_at=at,
        updated_at=at,
        runner=runner,
        heartbeat=at,
        resource_version=current.resource_version if current else "",
    )
    try:
        store(ctx, drain, create=current is None)
    except (Conflict, NotFound):
        # Another request (on this replica or another) claimed or ended it first: that drain is the one.
        claimed = load(ctx, zone, host)
        if claimed is None:
            raise Conflict(f"the drain of {where(zone, host)} changed meanwhile, retry") from None
        return claimed
    threading.Thread(
        target=_run, args=(ctx.fresh(), zone, host, runner), name=f"drain-{zone}-{host}", daemon=True
    ).start()
    return drain


def _resumed(before: list[DrainVm], on_host: Sequence[Guest]) -> list[DrainVm]:
    """A resumed drain's VMs: those it moved (or found gone) stay as they were, a migration under way
    is followed, and every VM on the host now (those that could not move before too) is to move."""
    kept = {vm.vmid: vm for vm in before if vm.state in (MOVED, GONE, MIGRATING)}
    for vm in before:
        if vm.vmid not in kept:
            kept[vm.vmid] = DrainVm(vm.vmid, vm.name, vm.vdc)
    for guest in on_host:
        vmid = guest.vmid
        if vmid not in kept or kept[vmid].state in (MOVED, GONE):
            kept[vmid] = DrainVm(vmid, guest.name, vdc_in(guest.tags))
    return sorted(kept.values(), key=lambda vm: vm.vmid)


class _Stop(Exception):
    """The drain's record is no longer this runner's (taken over, or deleted with its host)."""


class _Runner:
    """One drain's background work, writing its record as it goes."""

    def __init__(self, ctx: Context, zone: str, host: str, runner: str) -> None:
        self.ctx = ctx  # the caller who started it, and the sources: each step reads anew (``fresh``)
        self.zone = zone
        self.host = host
        self.runner = runner

    def record(self) -> HostDrain:
        drain = load(self.ctx, self.zone, self.host)
        if drain is None or drain.runner != self.runner:
            raise _Stop
        return drain

    def save(self, drain: HostDrain) -> None:
        """Write the record with a fresh heartbeat; stop when someone else's write got there first."""
        drain.heartbeat = now()
        try:
            store(self.ctx, drain, create=False)
        except (Conflict, NotFound):
            raise _Stop from None

    def run(self) -> None:
        self.move_gateways()
        try:
            while self.step(self.record()):
                pass
        except _Stop:
            logger.info("drain of %s/%s: no longer this runner's, stopping", self.zone, self.host)
        except FlexPlaneError as exc:
            self.fail(f"the drain stopped: {exc.message}; drain the host again to resume")
        except Exception:
            logger.exception("drain of %s/%s failed", self.zone, self.host)
            self.fail(
                "the drain stopped on an internal error (see the orchestrator's log); drain the host again"
            )

    def move_gateways(self) -> None:
        """Best effort, first: the host's edge gateways move to other allowed hosts (it is cordoned)."""
        from orchestrator.services.gateways.reconcile import evacuate

        try:
            for item in evacuate(self.ctx.fresh(), self.zone, self.host):
                if item.error:
                    logger.warning(
                        "drain of %s/%s: gateway %s: %s", self.zone, self.host, item.gateway, item.error
                    )
        except FlexPlaneError as exc:
            logger.warning("drain of %s/%s: its gateways did not move: %s", self.zone, self.host, exc.message)

    def fail(self, message: str) -> None:
        try:
            drain = self.record()
            drain.state, drain.message, drain.ended_at = FAILED, message, now()
            self.save(drain)
        except (_Stop, FlexPlaneError) as exc:
            logger.warning(
                "drain of %s/%s: could not record its failure (%s): %s", self.zone, self.host, exc, message
            )

    def step(self, drain: HostDrain) -> bool:
        """Move the next VM, or end the drain when none is left; False once it ended."""
        ctx = self.ctx.fresh()  # fresh reads for every step: no memo outlives it
        if not any(h.zone == self.zone and h.node == self.host for h in catalog.hosts(ctx)):
            raise _Stop  # removed from the catalog
        api = inventory.zone_api(ctx, self.zone)
        resources = api.resources()
        here = self.reconcile(drain, resources.vms)
        following = next((vm for vm in drain.vms if vm.state == MIGRATING), None)
        if following is not None:
            self.follow(api, drain, following)
            return True
        pending = next((vm for vm in drain.vms if vm.state == PENDING), None)
        if pending is None:
            drain.state = INCOMPLETE if any(vm.state == VM_FAILED for vm in drain.vms) else DONE
            drain.ended_at = now()
            moved = sum(1 for vm in drain.vms if vm.state == MOVED)
            drain.message = (
                f"{moved} of {len(drain.vms)} VM(s) moved" if drain.vms else "no VMs were on the host"
            )
            self.save(drain)
            return False
        self.migrate(ctx, api, drain, pending, here[pending.vmid], resources)
        return True

    def reconcile(self, drain: HostDrain, guests: Sequence[Guest]) -> dict[int, Guest]:
        """Bring the record in line with where the VMs are now; answers the guests still on the host."""
        placed = {g.vmid: g for g in guests}
        here = {vmid: g for vmid, g in placed.items() if g.node == self.host}
        known = {vm.vmid for vm in drain.vms}
        for vm in drain.vms:
            if vm.state not in (PENDING, MIGRATING) or vm.vmid in here:
                continue
            if vm.vmid not in placed:
                vm.end(GONE, "the VM was deleted meanwhile")
            elif vm.state == MIGRATING:
                vm.end(MOVED, target=placed[vm.vmid].node)
            else:
                vm.end(MOVED, "moved meanwhile, not by this drain", placed[vm.vmid].node)
        for vmid, guest in sorted(here.items()):
            if vmid not in known:  # arrived since the drain started
                drain.vms.append(DrainVm(vmid, guest.name, vdc_in(guest.tags)))
        return here

    def migrate(
        self,
        ctx: Context,
        api: ZoneApi,
        drain: HostDrain,
        vm: DrainVm,
        guest: Guest,
        resources: ClusterResources,
    ) -> None:
        vm.started_at = now()
        try:
            check = api.migration_check(self.host, vm.vmid)
            target, local_disks = target_of(catalog.hosts(ctx), api, self.host, vm, guest, check, resources)
            # A running VM moves live, its local disks copied along; a stopped one offline, disks and all.
            running = guest.status == "running"
            answer = api.migrate(
                self.host, vm.vmid, target, online=running, with_local_disks=running and local_disks
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
        upid = Upid.parse(answer) if answer is not None else None
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
        started = vm.started_at or now()
        while True:
            try:
                task = tasks.wait(api, task_id, upid, HEARTBEAT)
            except NotFound:
                vm.end(VM_FAILED, f"Proxmox no longer knows its migration task {upid.raw}")
                self.save(drain)
                return
            if not task.running:
                break
            if now() - started > timedelta(seconds=MIGRATION_TIMEOUT):
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


def _run(ctx: Context, zone: str, host: str, runner: str) -> None:
    _Runner(ctx, zone, host, runner).run()


class _Unmovable(Exception):
    """The VM cannot move: ``reason`` says why, for the drain's record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def target_of(
    hosts: Sequence[Host],
    api: ZoneApi,
    host: str,
    vm: DrainVm,
    guest: Guest,
    check: MigrationCheck,
    resources: ClusterResources,
) -> tuple[str, bool]:
    """The host placement picks among ``hosts`` (the catalog's) for the VM leaving ``host``, and whether
    its local disks go with it (``_Unmovable``: none)."""
    devices = list(check.local_resources)
    if devices:
        raise _Unmovable(
            f"it uses local devices of the host ({', '.join(devices)}), which cannot move with it"
        )
    local = [disk for disk in check.local_disks if not disk.cdrom]
    local_bytes: dict[str, int] = {}
    for disk in local:
        local_bytes[disk.storage] = local_bytes.get(disk.storage, 0) + disk.size
    storages = api.config(host, vm.vmid).storages
    if not storages:
        raise _Unmovable("it has no disk on a Proxmox storage, so placement cannot choose a host for it")
    primary = max(storages, key=lambda s: (local_bytes.get(s, 0), -storages.index(s)))
    request = PlacementRequest(
        zone=api.zone,
        vdc=vm.vdc or "",
        vcpus=guest.cpus or 1,
        memory_mib=math.ceil(guest.memory / MIB),
        disk_gb=math.ceil(local_bytes.get(primary, 0) / GIB),
        storage=primary,
        other_storages=tuple(s for s in storages if s != primary),
    )
    allowed, refused = check.allowed_nodes, check.refused
    candidates: list[Host] = []
    excluded: dict[str, str] = {}
    for other in hosts:
        if other.zone != api.zone or other.node == host:
            continue
        if other.node in refused:
            excluded[other.node] = refused[other.node]
        elif allowed is not None and other.node not in allowed:
            excluded[other.node] = "not among the nodes it allows"
        else:
            candidates.append(other)
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
