"""Volume snapshots: point-in-time copies of a detached volume, and new volumes made from them
(``orchestrator.models.volumes`` says how Proxmox holds one).

Each is a full clone of a holder, made under the VDC's lock and counted in its disk quota from the moment
the clone exists (Proxmox copies the source's tags, the size the quota counts among them):

- **Take** (``snapshot_volume``): the volume must be detached, so that no guest writes the disk while
  Proxmox copies it (a running VM's disk is copied only by cloning the whole VM). Once the copy is whole,
  its holder is tagged with the volume it was taken of and when; a copy that outlasts the request is left
  ``creating`` and a retry of the same name finishes it.
- **Make a volume from one** (``create_volume_from_snapshot``): a full clone of the snapshot's holder as
  a new volume's holder, in the snapshot's zone and storage profile, grown when a larger size is asked.
- **Delete**: the snapshot's holder goes with its copy; the volume it was taken of is untouched, and a
  volume deleted keeps its snapshots (they are copies).

Names are unique among the VDC's volume snapshots; the same name of the same volume is a retry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from orchestrator.errors import Conflict, FlexPlaneError, ValidationFailed
from orchestrator.models import Usage, Vdc
from orchestrator.models.tasks import Task
from orchestrator.models.vms import GIB, REQUEST_TAG_PREFIX, request_tag
from orchestrator.models.volumes import (
    ATTACHED_TAG_PREFIX,
    AVAILABLE,
    CREATING,
    SNAPSHOT_OF_DELETED_TAG_PREFIX,
    SNAPSHOT_OF_TAG_PREFIX,
    TAKEN_TAG_PREFIX,
    Volume,
    VolumeSnapshot,
    copy_of_line,
    holder_name,
    made_from,
    made_from_words,
    serial,
    snapshot_holder_name,
)
from orchestrator.services import access, inventory, tasks, vdcs
from orchestrator.services.clusters.quota import reserved_for_clusters
from orchestrator.services.context import Context
from orchestrator.services.vms.disks import HOLDER_DISK, TASK_TIMEOUT
from orchestrator.services.vms.inputs import validate_name
from orchestrator.services.vms.plan import (
    allowed_storage_profile,
    everything_now,
    marker,
    still_held,
    usage,
    vdc_lock,
)
from orchestrator.services.volumes import (
    VMID_ATTEMPTS,
    VolumeOutcome,
    locate_held,
    locate_volume,
    named_volume,
    reread,
)
from orchestrator.sources.proxmox import ClusterResources, ConfigChange, QemuConfig, VmidTaken, ZoneApi

SNAPSHOT = "volume snapshot"


@dataclass(frozen=True)
class SnapshotOutcome:
    """A volume snapshot after an operation, and the last Proxmox task it took (None: nothing to do)."""

    snapshot: VolumeSnapshot
    task: Task | None


# ------------------------------------------------------------------------------------------ reading


def list_volume_snapshots(ctx: Context, volume: str | None = None) -> list[VolumeSnapshot]:
    """The volume snapshots the caller may see (the request's VDC only, when it names one), by name then
    zone; of one volume when ``volume`` names it (one it may see). One ``/cluster/resources`` per zone;
    zones that did not answer are on ``ctx``."""
    visible = access.visible_vdcs(ctx)
    source = locate_volume(ctx, volume)[1] if volume is not None else None
    found: list[VolumeSnapshot] = []
    for zone, resources in sorted(inventory.zone_resources(ctx).resources.items()):
        if source is not None and zone != source.zone:
            continue
        for guest in resources.volume_snapshots:
            snapshot = VolumeSnapshot.from_guest(zone, guest)
            if not snapshot.vdc or (visible is not None and snapshot.vdc not in visible):
                continue
            snapshot = _described(ctx, snapshot)
            if source is None or snapshot.taken_of(source):
                found.append(snapshot)
    return sorted(found, key=lambda s: (s.name, s.zone, s.vmid))


def locate_snapshot(ctx: Context, ident: str) -> tuple[ZoneApi, VolumeSnapshot]:
    """A volume snapshot the caller may see, read live; ``NotFound`` otherwise (another VDC's too)."""
    api, snapshot = locate_held(ctx, ident, SNAPSHOT, lambda r: r.volume_snapshots, VolumeSnapshot.from_guest)
    return api, _described(ctx, snapshot)


def _described(ctx: Context, snapshot: VolumeSnapshot) -> VolumeSnapshot:
    """A snapshot whose tags do not say yet what it copies and when (its copy under way, or outlasting the
    request that began it), as its holder's description says: one config read, left out where the zone
    does not answer it."""
    if snapshot.source_vmid is not None or snapshot.source_deleted:
        return snapshot
    try:
        config = inventory.zone_api(ctx, snapshot.zone).config(snapshot.node, snapshot.vmid)
    except FlexPlaneError:
        return snapshot
    return snapshot.described(config.description or "")


def get_volume_snapshot(ctx: Context, ident: str) -> VolumeSnapshot:
    return locate_snapshot(ctx, ident)[1]


def snapshots_of(ctx: Context, volume: Volume) -> list[VolumeSnapshot]:
    """The snapshots of a volume the caller sees, by name, from the request's read of its zone."""
    resources = inventory.zone_resources(ctx).resources.get(volume.zone)
    found = (
        VolumeSnapshot.from_guest(volume.zone, g) for g in (resources.volume_snapshots if resources else ())
    )
    return sorted(
        (s for s in found if s.vdc == volume.vdc and s.taken_of(volume)), key=lambda s: (s.name, s.vmid)
    )


def _named(now: dict[str, ClusterResources], vdc: Vdc, name: str) -> VolumeSnapshot | None:
    for zone, resources in now.items():
        for guest in resources.volume_snapshots:
            snapshot = VolumeSnapshot.from_guest(zone, guest)
            if snapshot.vdc == vdc.id and snapshot.name == name:
                return snapshot
    return None


def _reread(api: ZoneApi, snapshot: VolumeSnapshot) -> VolumeSnapshot:
    guest = next((g for g in api.resources("vm").volume_snapshots if g.vmid == snapshot.vmid), None)
    return VolumeSnapshot.from_guest(api.zone, guest) if guest is not None else snapshot


def _valid_name(name: str, what: str) -> str:
    try:
        return validate_name(name)
    except ValidationFailed:
        raise ValidationFailed(
            "name", f"{name!r} is not a valid {what} name: 1 to 63 lowercase letters, digits and hyphens"
        ) from None


# ------------------------------------------------------------------------------------------ take


def snapshot_volume(ctx: Context, volume: str, name: str) -> SnapshotOutcome:
    """Take a snapshot named ``name`` of a detached volume: a copy of its disk, counted in the VDC's
    disk quota. The same name of the same volume returns the snapshot taken before (and finishes one whose
    copy outlasted its request); of another volume, INVALID."""
    api, source = locate_volume(ctx, volume)  # another VDC's: NOT_FOUND, whatever the caller's roles
    access.require_self_service(ctx)
    return _take(ctx, api, source, _valid_name(name, "snapshot"))


def _take(ctx: Context, api: ZoneApi, volume: Volume, name: str) -> SnapshotOutcome:
    vdc = vdcs.get_vdc(ctx, volume.vdc)
    with vdc_lock(ctx, vdc) as held:
        now = everything_now(ctx, vdc)
        earlier = _named(now, vdc, name)
        if earlier is not None:
            # Not tagged yet (its copy under way, or outlasting its request): its description says, in the
            # one config read the finishing needs too.
            config = None if earlier.source_vmid is not None else api.config(earlier.node, earlier.vmid)
            seen = earlier.described(config.description or "") if config is not None else earlier
            if (seen.zone, seen.source_vmid, seen.source_deleted) != (volume.zone, volume.vmid, False):
                raise ValidationFailed(
                    "name", f"VDC {vdc.id} already has a volume snapshot named {name!r}, of another volume"
                )
            still_held(held, vdc)
            return SnapshotOutcome(earlier if config is None else _finish(api, seen, volume, config), None)
        volume = reread(api, volume)
        if volume.status != AVAILABLE:
            raise Conflict(
                f"volume {volume.name} is {_where(volume)}: a snapshot copies a detached volume's disk, so "
                "that no guest writes it meanwhile; detach it first"
            )
        current = usage(now.values(), vdc) + reserved_for_clusters(ctx, vdc, now)
        vdcs.check_quota(ctx, vdc, Usage(disk_gb=volume.size_gb), current=current)
        still_held(held, vdc)
        description = (
            f"{marker(vdc)}\n{copy_of_line(volume.name, volume.vmid, int(time.time()))}: the volume snapshot "
            f"{name}, never started.\n{_by(ctx)}"
        )
        vmid, task = _clone(
            api, volume.node, volume.vmid, snapshot_holder_name(name), vdc, description, f"taking {name}"
        )
        made = _finish(api, _read(api, vmid, name), volume)
    return SnapshotOutcome(made, task)


def _where(volume: Volume) -> str:
    return f"attached to VM {volume.attached_to}" if volume.attached_to else volume.status


def _by(ctx: Context) -> str:
    principal = ctx.principal
    return f"Created by: {principal.name or principal.subject} ({principal.email or principal.subject})."


def _finish(
    api: ZoneApi, snapshot: VolumeSnapshot, volume: Volume, config: QemuConfig | None = None
) -> VolumeSnapshot:
    """Tag a whole copy with the volume it was taken of and when its copy began, as its description says
    (nothing while Proxmox still copies, nothing once tagged); ``config``: its config, read already."""
    if snapshot.status == CREATING or snapshot.source_deleted:
        return snapshot
    config = config or api.config(snapshot.node, snapshot.vmid)
    if "lock" in config.keys or SNAPSHOT_OF_TAG_PREFIX + str(volume.vmid) in config.tags:
        return snapshot  # Proxmox still copies, or tagged already
    taken = snapshot.described(config.description or "").taken_at or int(time.time())
    stale = (ATTACHED_TAG_PREFIX, SNAPSHOT_OF_TAG_PREFIX, TAKEN_TAG_PREFIX)
    kept = [t for t in config.tags if not t.startswith(stale)]
    tags = (*kept, f"{SNAPSHOT_OF_TAG_PREFIX}{volume.vmid}", f"{TAKEN_TAG_PREFIX}{taken}")
    api.set_config(snapshot.node, snapshot.vmid, ConfigChange(tags=tags))
    return _reread(api, snapshot)


def _read(api: ZoneApi, vmid: int, name: str) -> VolumeSnapshot:
    guest = next((g for g in api.resources("vm").volume_snapshots if g.vmid == vmid), None)
    if guest is None:
        raise Conflict(f"Proxmox does not report volume snapshot {name} ({api.zone}/{vmid}) it just made")
    return VolumeSnapshot.from_guest(api.zone, guest)


def _clone(
    api: ZoneApi, node: str, source: int, name: str, vdc: Vdc, description: str, doing: str
) -> tuple[int, Task]:
    """A full clone of holder ``source`` as a new holder ``name`` in the VDC's pool, followed for
    ``TASK_TIMEOUT`` (a larger disk's copy goes on after it: the task says so)."""
    for attempt in range(VMID_ATTEMPTS):
        vmid = api.next_vmid()
        try:
            answer = api.clone(
                node, source, vmid, name=name, pool=vdc.pool, description=description, full=True
            )
        except VmidTaken:
            if attempt + 1 < VMID_ATTEMPTS:
                continue
            raise
        task_id, upid = tasks.started(api.zone, answer, vdc.id, doing)
        task = tasks.wait(api, task_id, upid, TASK_TIMEOUT)
        if task.failed:
            raise tasks.task_failure(api.zone, task, doing)
        return vmid, task
    raise AssertionError("unreachable: the last attempt returns or raises")


# ------------------------------------------------------------------------------------------ delete


def delete_volume_snapshot(ctx: Context, ident: str) -> SnapshotOutcome:
    """Delete a volume snapshot with its copy (the volume it was taken of is untouched)."""
    api, snapshot = locate_snapshot(ctx, ident)
    access.require_self_service(ctx)
    vdc = vdcs.get_vdc(ctx, snapshot.vdc)
    with vdc_lock(ctx, vdc) as held:
        snapshot = _reread(api, snapshot)
        if snapshot.status == CREATING:
            raise Conflict(
                f"volume snapshot {snapshot.name} is still being copied: delete it once it is whole"
            )
        _no_volume_being_made_from(api, snapshot)
        still_held(held, vdc)
        answer = api.destroy(snapshot.node, snapshot.vmid)
        task = tasks.run(api, answer, snapshot.vdc, f"deleting volume snapshot {snapshot.name}", TASK_TIMEOUT)
    return SnapshotOutcome(snapshot, task)


def _no_volume_being_made_from(api: ZoneApi, snapshot: VolumeSnapshot) -> None:
    """CONFLICT while Proxmox copies the snapshot into a new volume (a config read of each volume being
    copied, which says from what)."""
    for guest in api.resources("vm").volumes:
        if guest.lock != "clone":
            continue
        if made_from(api.config(guest.node, guest.vmid).description or "") == snapshot.vmid:
            volume = Volume.from_guest(api.zone, guest)
            raise Conflict(
                f"volume {volume.name} is being made from snapshot {snapshot.name}: delete the snapshot once "
                "the copy is whole"
            )


# ------------------------------------------------------------------------------------------ restore


def create_volume_from_snapshot(
    ctx: Context, snapshot: str, name: str, size_gb: int | None = None
) -> VolumeOutcome:
    """A new volume named ``name`` holding a copy of the snapshot, in its zone and storage profile, of
    ``size_gb`` GiB (at least the snapshot's; its size when None). The same name from the same snapshot
    returns the volume made before (grown if it could not be then); another volume of that name, INVALID."""
    api, source = locate_snapshot(ctx, snapshot)
    access.require_self_service(ctx)
    return _restore(ctx, api, source, _valid_name(name, "volume"), size_gb)


def _restore(
    ctx: Context, api: ZoneApi, snapshot: VolumeSnapshot, name: str, size_gb: int | None
) -> VolumeOutcome:
    size = snapshot.size_gb if size_gb is None else size_gb
    if size < snapshot.size_gb:
        raise ValidationFailed(
            "size_gb", f"a volume from snapshot {snapshot.name} has at least its {snapshot.size_gb} GiB"
        )
    vdc = vdcs.get_vdc(ctx, snapshot.vdc)
    profile = allowed_storage_profile(ctx, vdc, snapshot.storage_profile, "snapshot")
    if size > profile.max_gb:
        raise ValidationFailed(
            "size_gb", f"storage profile {profile.name} allows at most {profile.max_gb} GiB"
        )
    with vdc_lock(ctx, vdc) as held:
        now = everything_now(ctx, vdc)
        earlier = named_volume(now, vdc, name)
        if earlier is not None:
            if _made_from(api, earlier) != (snapshot.zone, snapshot.vmid):
                raise ValidationFailed(
                    "name",
                    f"VDC {vdc.id} already has a volume named {name!r} ({earlier.id}), not of this snapshot",
                )
            still_held(held, vdc)
            return VolumeOutcome(_ready(api, earlier, size, vdc), None)
        snapshot = _reread(api, snapshot)
        if snapshot.status == CREATING:
            raise Conflict(f"volume snapshot {snapshot.name} is still being copied: retry once it is whole")
        current = usage(now.values(), vdc) + reserved_for_clusters(ctx, vdc, now)
        vdcs.check_quota(ctx, vdc, Usage(disk_gb=size), current=current)
        still_held(held, vdc)
        description = (
            f"{marker(vdc)}\nThe holder of volume {name} ({size} GiB, storage profile "
            f"{snapshot.storage_profile}), {made_from_words(snapshot.name, snapshot.vmid)}: it keeps the "
            f"volume's disk while no VM has it attached. Never started.\n{_by(ctx)}"
        )
        vmid, task = _clone(
            api, snapshot.node, snapshot.vmid, holder_name(name), vdc, description, f"making volume {name}"
        )
        volume = reread(
            api, Volume.made(api.zone, vmid, name, vdc.id, snapshot.node, snapshot.storage_profile, size)
        )
        volume = _ready(api, volume, size, vdc)
    return VolumeOutcome(volume, task)


def _made_from(api: ZoneApi, volume: Volume) -> tuple[str, int] | None:
    """The snapshot a volume was made from (its holder's description says), if it was."""
    if volume.zone != api.zone:
        return None
    found = made_from(api.config(volume.node, volume.vmid).description or "")
    return (volume.zone, found) if found is not None else None


def _ready(api: ZoneApi, volume: Volume, size_gb: int, vdc: Vdc) -> Volume:
    """A volume made from a snapshot, as a volume: its own serial and tags (none of the snapshot's), the
    size tag first, then its disk grown to ``size_gb``; nothing while Proxmox still copies it."""
    if volume.status != AVAILABLE:
        return volume
    config = api.config(volume.node, volume.vmid)
    if "lock" in config.keys:  # Proxmox still copies
        return volume
    disk = next((d for d in config.drives if d.key == HOLDER_DISK), None)
    copied = (disk.size if disk is not None else 0) or volume.size_gb * GIB
    size_gb = max(size_gb, -(-copied // GIB))
    stale = (
        ATTACHED_TAG_PREFIX,
        SNAPSHOT_OF_TAG_PREFIX,
        SNAPSHOT_OF_DELETED_TAG_PREFIX,
        TAKEN_TAG_PREFIX,
        REQUEST_TAG_PREFIX,
    )
    tags = (*(t for t in config.tags if not t.startswith(stale)), request_tag(0, 0, size_gb))
    drives = (disk.with_options({"serial": serial(volume.vmid)}),) if disk is not None else ()
    if tuple(config.tags) != tags or (disk is not None and disk.option("serial") != serial(volume.vmid)):
        api.set_config(volume.node, volume.vmid, ConfigChange(tags=tags, drives=drives))
    if size_gb * GIB > copied:
        answer = api.resize_disk(volume.node, volume.vmid, HOLDER_DISK, size_gb * GIB)
        if answer:
            tasks.run(api, answer, vdc.id, f"growing volume {volume.name} to {size_gb} GiB", TASK_TIMEOUT)
    return reread(api, volume)
