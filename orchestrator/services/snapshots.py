"""VM snapshots: list, take, roll back and delete them; they live in Proxmox alone.

Authorization is the VM's (``vms.listing.locate``): USER or ADMIN, and membership of the VM's VDC;
a VM of another VDC, and so its snapshots, is reported exactly like one that does not exist.

What Proxmox decides stays Proxmox's, said in words before it is asked where it can be:

- A VM whose disks cannot be snapshotted (a raw file on a directory storage, thick LVM, ...: see
  ``sources.proxmox.snapshots.snapshot_blockers``) is refused as INVALID, naming its storage profile.
- A VDC allows each of its VMs at most ``quota.snapshotsPerVm`` snapshots. The count, and the snapshot
  until Proxmox lists it, are under the VDC's lock, so that two snapshots at once cannot both take the
  last one; the snapshot is then made (its memory saved, which may take minutes) without the lock.
- A snapshot holds the VM's disks and configuration, and its memory when asked (a running VM only).
- Rolling back a running VM stops it first (Proxmox does); a snapshot with memory resumes the VM as it
  was, otherwise it stays stopped unless ``start`` is asked. The answer says which happened.
- Proxmox's config lock makes a snapshot and another change of the VM (a resize, a power action)
  exclude each other: the one that finds the lock taken fails as CONFLICT and changed nothing.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime

from orchestrator.errors import Conflict, NotFound, QuotaExceeded, ValidationFailed
from orchestrator.models.tasks import Task, Upid
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import tasks, vdcs
from orchestrator.services.context import Context
from orchestrator.services.vms.lifecycle import TASK_TIMEOUT
from orchestrator.services.vms.listing import locate, reread
from orchestrator.services.vms.plan import still_held, vdc_lock
from orchestrator.sources.proxmox import ZoneApi
from orchestrator.sources.proxmox import snapshots as pve

SNAPSHOT = "snapshot"
# Proxmox's snapshot names (pve-configid), at most 40 characters.
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,39}")
# Names Proxmox keeps for itself.
RESERVED = frozenset({"current", "pending", "vzdump"})
MAX_DESCRIPTION = 1024
# How long a snapshot's create holds its VDC's lock at most, waiting for Proxmox to list the snapshot.
COUNTED_WAIT = 10.0


@dataclass(frozen=True)
class Snapshot:
    """A snapshot of a VM."""

    vm: str
    name: str
    description: str
    taken_at: datetime | None
    includes_memory: bool
    parent: str | None
    # The VM's present state descends from it (taken after it, or rolled back to it).
    current: bool
    # ``prepare`` or ``delete`` while Proxmox is making or removing it; None once whole.
    state: str | None

    @classmethod
    def of(cls, vm: VirtualMachine, entry: pve.SnapshotEntry, listing: pve.Snapshots) -> Snapshot:
        return cls(
            vm=vm.id,
            name=entry.name,
            description=entry.description,
            taken_at=entry.taken_at,
            includes_memory=entry.vmstate,
            parent=entry.parent,
            current=listing.current_parent == entry.name,
            state=entry.state,
        )


@dataclass(frozen=True)
class SnapshotOutcome:
    """What a snapshot operation did: the VM after it, the snapshot, Proxmox's task, and in words."""

    vm: VirtualMachine
    snapshot: Snapshot | None
    task: Task | None
    message: str


# ------------------------------------------------------------------------------------------ checks


def validate_name(name: str | None) -> str:
    if not name or not NAME.fullmatch(name):
        raise ValidationFailed(
            "name",
            "a snapshot name is 2 to 40 letters, digits, '-' or '_', starting with a letter",
        )
    if name.lower() in RESERVED:
        raise ValidationFailed("name", f"{name!r} is a name Proxmox keeps for itself")
    return name


def validate_description(description: str | None) -> str:
    text = (description or "").strip()
    if len(text) > MAX_DESCRIPTION:
        raise ValidationFailed("description", f"a description has at most {MAX_DESCRIPTION} characters")
    if any(ord(c) < 32 and c not in "\n\t" for c in text):
        raise ValidationFailed("description", "a description cannot hold control characters")
    return text


def _existing(api: ZoneApi, vm: VirtualMachine, name: str) -> tuple[pve.Snapshots, pve.SnapshotEntry]:
    listing = pve.list_snapshots(api, vm.host, vm.vmid)
    entry = listing.get(name)
    if entry is None:
        raise NotFound(SNAPSHOT, f"{vm.id}@{name}")
    return listing, entry


def _check_storage(api: ZoneApi, vm: VirtualMachine) -> None:
    """INVALID, naming the storage profile, when Proxmox could not snapshot the VM's disks."""
    blockers = pve.snapshot_blockers(api.config(vm.host, vm.vmid), pve.storage_types(api))
    if blockers:
        profile = f"storage profile {vm.storage_profile}" if vm.storage_profile else "its storage"
        raise ValidationFailed(
            "vm",
            f"VM {vm.name} cannot have snapshots: {profile} keeps its disks where Proxmox cannot "
            f"snapshot them ({'; '.join(blockers)}); use a storage profile on LVM-thin, ZFS, Ceph "
            "or qcow2 files",
        )


def _until_counted(api: ZoneApi, vm: VirtualMachine, name: str, task_id: str, upid: Upid) -> None:
    """Wait (under the VDC's lock) until Proxmox lists the snapshot being taken, or its task ended: from
    then on the next snapshot's count includes it, and the lock may go."""
    deadline = time.monotonic() + COUNTED_WAIT
    while time.monotonic() < deadline:
        if pve.list_snapshots(api, vm.host, vm.vmid).get(name) is not None:
            return
        if not tasks.wait(api, task_id, upid, 0.0).running:
            return
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------ reads


def list_snapshots(ctx: Context, ident: str) -> list[Snapshot]:
    """The VM's snapshots, oldest first (one call to its zone besides finding the VM)."""
    api, vm = locate(ctx, ident)
    listing = pve.list_snapshots(api, vm.host, vm.vmid)
    return [Snapshot.of(vm, entry, listing) for entry in listing.entries]


# ------------------------------------------------------------------------------------------ writes


def create_snapshot(
    ctx: Context,
    ident: str,
    name: str,
    description: str | None = None,
    include_memory: bool | None = None,
) -> SnapshotOutcome:
    """Take a snapshot of the VM's disks and configuration (and of its memory with ``include_memory``,
    for a running VM), within the VDC's quota of snapshots per VM."""
    name = validate_name(name)
    text = validate_description(description)
    api, vm = locate(ctx, ident)
    if include_memory and not vm.running:
        raise ValidationFailed(
            "include_memory", f"VM {vm.name} is {vm.status}: only a running VM's memory can be saved"
        )
    vdc = vdcs.get_vdc(ctx, vm.vdc)
    _check_storage(api, vm)
    with vdc_lock(ctx, vdc) as held:
        listing = pve.list_snapshots(api, vm.host, vm.vmid)
        if listing.get(name) is not None:
            raise Conflict(f"VM {vm.name} already has a snapshot named {name!r}")
        limit = vdc.snapshots_per_vm
        if len(listing.entries) >= limit:
            raise QuotaExceeded(
                f"this would exceed the quota of VDC {vdc.id!r}: VM {vm.name} has {len(listing.entries)} "
                f"snapshot(s) and each VM may have {limit}; delete one first"
            )
        still_held(held, vdc)
        doing = f"taking snapshot {name} of VM {vm.name}"
        task_id, upid = tasks.started(
            api.zone, pve.take(api, vm.host, vm.vmid, name, text, vmstate=bool(include_memory)), vm.vdc, doing
        )
        _until_counted(api, vm, name, task_id, upid)
    # The VDC's lock is not held while the snapshot is made (its memory may take minutes to save).
    task = tasks.wait(api, task_id, upid, TASK_TIMEOUT)
    if task.failed:
        raise tasks.task_failure(api.zone, task, doing)
    after = pve.list_snapshots(api, vm.host, vm.vmid)
    entry = after.get(name)
    snapshot = Snapshot.of(vm, entry, after) if entry is not None else None
    memory = " with its memory" if include_memory else ""
    return SnapshotOutcome(
        reread(api, vm), snapshot, task, f"Snapshot {name} of VM {vm.name} was taken{memory}."
    )


def rollback_snapshot(ctx: Context, ident: str, name: str, start: bool | None = None) -> SnapshotOutcome:
    """Put the VM's disks and configuration back as they were in the snapshot; what was written since is
    lost. Proxmox stops a running VM first; a snapshot holding memory resumes it where it was, else it
    is left stopped unless ``start``. The answer's ``message`` says what happened."""
    api, vm = locate(ctx, ident)
    _, entry = _existing(api, vm, name)
    was_running = vm.running
    answer = pve.rollback(api, vm.host, vm.vmid, entry.name, start=bool(start))
    task = tasks.run(api, answer, vm.vdc, f"rolling VM {vm.name} back to snapshot {name}", TASK_TIMEOUT)
    after = reread(api, vm)
    listing = pve.list_snapshots(api, vm.host, vm.vmid)
    rolled = listing.get(name)
    return SnapshotOutcome(
        after,
        Snapshot.of(vm, rolled, listing) if rolled is not None else None,
        task,
        rollback_message(vm.name, name, was_running, entry.vmstate, bool(start), after.status),
    )


def rollback_message(vm: str, snapshot: str, was_running: bool, memory: bool, start: bool, now: str) -> str:
    """What a rollback did, in words: stopped, rolled back, resumed or started, and how the VM is now."""
    if was_running:
        said = f"VM {vm} was running: Proxmox stopped it and rolled it back to snapshot {snapshot}"
    else:
        said = f"VM {vm} was rolled back to snapshot {snapshot}"
    if memory:
        said += "; the snapshot holds its memory, so it resumed where the snapshot was taken"
    elif start:
        said += "; then started it, as asked"
    advice = " (start it when you are ready)" if now == "stopped" else ""
    return f"{said}. It is {now}{advice}."


def delete_snapshot(ctx: Context, ident: str, name: str) -> SnapshotOutcome:
    """Remove the snapshot (the VM as it is now does not change; Proxmox merges the snapshot's data
    into what came after it)."""
    api, vm = locate(ctx, ident)
    listing, entry = _existing(api, vm, name)
    gone = Snapshot.of(vm, entry, listing)
    answer = pve.delete(api, vm.host, vm.vmid, entry.name)
    task = tasks.run(api, answer, vm.vdc, f"deleting snapshot {name} of VM {vm.name}", TASK_TIMEOUT)
    return SnapshotOutcome(reread(api, vm), gone, task, f"Snapshot {name} of VM {vm.name} was deleted.")
