"""Volumes: block storage of a VDC, made, attached to its VMs, detached, grown and deleted
(``orchestrator.models.volumes`` says how Proxmox holds one).

Every change is made under the VDC's lock (``services.locks.vdc_lock``), as a VM's create is: the quota
counts the volume's size from the moment its holder exists, and two attaches of one volume (two VMs
racing for it) are one after the other: the second finds it in use and is refused (CONFLICT), as is a
second create of a name the VDC has.

- **Create**: a holder in the VDC's pool on a host of the zone whose storage (the storage profile's
  there) has the most room, made with its disk at once (Proxmox makes both in one task, or neither).
- **Attach** to a VM of the same VDC and zone: the holder's disk gets its serial if it lost it (a detach
  from a running VM passes through Proxmox's ``unused<n>``, which keeps no options), the holder its
  ``fp-on-<vmid>`` tag, then the disk moves to the VM's first free ``scsi<n>`` (n from 1), hot-plugged
  into a running VM. A holder on another host than the VM follows it there first (an offline migration of
  a VM without disks that Proxmox calls local); a volume on storage local to another host is refused,
  naming its host.
- **Detach**: a running VM's disk is unplugged first (it becomes the VM's ``unused<n>``), then moves back
  to the holder as its ``scsi0``; the holder's tag goes last.
- **Resize**: grow only, counted in the quota; the size tag is written before the disk grows, so that the
  quota never counts less than the disk has.
- **Delete**: refused while attached; the holder goes with its disk.
- **A VM deleted** gives its volumes back to their holders first (``release_from``): its own disks go with
  it, never a volume.

Proxmox's own refusals (a disk used by a VM snapshot cannot move to another VM; a locked VM) come back as
UPSTREAM_FAILURE or CONFLICT with Proxmox's words; nothing is left half-made but what a retry finishes.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from orchestrator.errors import Conflict, NotFound, Unavailable, ValidationFailed
from orchestrator.models import StorageProfile, Usage, Vdc
from orchestrator.models.tasks import Task
from orchestrator.models.vms import (
    GIB,
    REQUEST_TAG_PREFIX,
    STORAGE_PROFILE_TAG_PREFIX,
    VirtualMachine,
    parse_tags,
    parse_vm_id,
    request_tag,
    vdc_of,
)
from orchestrator.models.volumes import (
    AVAILABLE,
    IN_USE,
    SNAPSHOT_OF_DELETED_TAG_PREFIX,
    SNAPSHOT_OF_TAG_PREFIX,
    Volume,
    VolumeSnapshot,
    copy_of,
    holder_name,
    serial,
)
from orchestrator.services import access, catalog, inventory, tasks, vdcs
from orchestrator.services.clusters.quota import reserved_for_clusters
from orchestrator.services.context import Context
from orchestrator.services.vms.disks import (
    HOLDER_DISK,
    TASK_TIMEOUT,
    drive_of,
    give_back,
    label_holder,
)
from orchestrator.services.vms.inputs import validate_name
from orchestrator.services.vms.listing import locate
from orchestrator.services.vms.plan import (
    allowed_storage_profile,
    everything_now,
    marker,
    still_held,
    usage,
    vdc_lock,
)
from orchestrator.sources.proxmox import ClusterResources, ConfigChange, Drive, VmidTaken, ZoneApi
from orchestrator.sources.proxmox.values import SNAPSHOT_HOLDER_SUFFIX, Guest

logger = logging.getLogger(__name__)

VOLUME = "volume"
VMID_ATTEMPTS = 8
# A VM's data disks: scsi1 to scsi30 (scsi0 is its boot disk).
DATA_SLOTS = tuple(f"scsi{n}" for n in range(1, 31))


@dataclass(frozen=True)
class VolumeOutcome:
    """A volume after an operation, and the last Proxmox task it took (None: nothing to do)."""

    volume: Volume
    task: Task | None


# ------------------------------------------------------------------------------------------ reading


def list_volumes(ctx: Context) -> list[Volume]:
    """The volumes the caller may see (the request's VDC only, when it names one), by name then zone: one
    ``/cluster/resources`` per zone (the request's); zones that did not answer are on ``ctx``."""
    visible = access.visible_vdcs(ctx)
    found: list[Volume] = []
    for zone, resources in sorted(inventory.zone_resources(ctx).resources.items()):
        for guest in resources.volumes:
            volume = Volume.from_guest(zone, guest)
            if volume.vdc and (visible is None or volume.vdc in visible):
                found.append(volume)
    return sorted(found, key=lambda v: (v.name, v.zone, v.vmid))


def locate_volume(ctx: Context, ident: str) -> tuple[ZoneApi, Volume]:
    """A volume the caller may see, read live from its zone; ``NotFound`` otherwise (another VDC's too)."""
    return locate_held(ctx, ident, VOLUME, lambda r: r.volumes, Volume.from_guest)


class _Held(Protocol):
    @property
    def vdc(self) -> str: ...


H = TypeVar("H", bound=_Held)


def locate_held(
    ctx: Context,
    ident: str,
    what: str,
    holders: Callable[[ClusterResources], tuple[Guest, ...]],
    read: Callable[[str, Guest], H],
) -> tuple[ZoneApi, H]:
    """What a holder of id ``ident`` keeps (a volume, a volume snapshot), read live from its zone, if the
    caller may see its VDC; ``NotFound`` naming ``what`` otherwise (another VDC's too)."""
    visible = access.visible_vdcs(ctx)
    parsed = parse_vm_id(ident)
    if parsed is not None:
        zone, vmid = parsed
        try:
            api = inventory.zone_api(ctx, zone)
        except NotFound:
            api = None
        if api is not None:
            guest = next((g for g in holders(api.resources("vm")) if g.vmid == vmid), None)
            if guest is not None:
                held = read(zone, guest)
                if held.vdc and (visible is None or held.vdc in visible):
                    return api, held
    raise NotFound(what, ident)


def get_volume(ctx: Context, ident: str) -> Volume:
    return locate_volume(ctx, ident)[1]


@dataclass(frozen=True)
class AttachedVolume:
    """A volume as a VM has it: the volume, and its disk's key in the VM's config (None: not found there)."""

    volume: Volume
    disk: str | None


def attached_to(ctx: Context, vm: VirtualMachine) -> list[AttachedVolume]:
    """The volumes attached to a VM the caller may see (``locate``), with their disks in its config: two
    Proxmox reads, the zone's guests and the VM's config (none when it has no volume)."""
    api = inventory.zone_api(ctx, vm.zone)
    found = [
        volume
        for guest in api.resources("vm").volumes
        if (volume := Volume.from_guest(vm.zone, guest)).status == IN_USE and volume.attached_vmid == vm.vmid
    ]
    if not found:
        return []
    config = api.config(vm.host, vm.vmid)
    return [AttachedVolume(v, d.key if (d := drive_of(config, v)) else None) for v in found]


def reread(api: ZoneApi, volume: Volume) -> Volume:
    guest = next((g for g in api.resources("vm").volumes if g.vmid == volume.vmid), None)
    return Volume.from_guest(api.zone, guest) if guest is not None else volume


# ------------------------------------------------------------------------------------------ create


def create_volume(
    ctx: Context,
    name: str,
    storage_profile: str,
    size_gb: int,
    zone: str | None = None,
    near: str | None = None,
) -> VolumeOutcome:
    """A volume of ``size_gb`` GiB in the VDC the request names, on the storage profile's storage in
    ``zone`` (needed when the VDC may use several zones where the profile has storage), on the host of VM
    ``near`` when one is named (a volume on storage local to a host attaches to VMs there only), else on
    the host with the most room. The same name with the same profile, size and zone returns the volume
    made before (a retry); with another, INVALID."""
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC to create the volume in with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)
    vdc = vdcs.get_vdc(ctx, ctx.vdc)
    try:
        name = validate_name(name)
    except ValidationFailed:
        raise ValidationFailed(
            "name", f"{name!r} is not a valid volume name: 1 to 63 lowercase letters, digits and hyphens"
        ) from None
    profile = allowed_storage_profile(ctx, vdc, storage_profile, "storage_profile")
    beside = _beside(ctx, vdc, near, zone)
    zone, storage = _zone_and_storage(ctx, vdc, profile, beside.zone if beside else zone)
    if size_gb is None or not profile.min_gb <= size_gb <= profile.max_gb:
        raise ValidationFailed(
            "size_gb",
            f"storage profile {profile.name} allows volumes of {profile.min_gb} to {profile.max_gb} GiB, "
            f"not {size_gb}",
        )
    api = inventory.zone_api(ctx, zone)
    with vdc_lock(ctx, vdc) as held:
        now = everything_now(ctx, vdc)
        earlier = named_volume(now, vdc, name)
        if earlier is not None:
            if (earlier.storage_profile, earlier.size_gb, earlier.zone) != (profile.name, size_gb, zone):
                raise ValidationFailed(
                    "name",
                    f"VDC {vdc.id} already has a volume named {name!r} ({earlier.id}), of another spec",
                )
            return VolumeOutcome(earlier, None)
        current = usage(now.values(), vdc) + reserved_for_clusters(ctx, vdc, now)
        vdcs.check_quota(ctx, vdc, Usage(disk_gb=size_gb), current=current)
        node = _roomiest_host(ctx, now[zone], zone, storage, beside.host if beside else None)
        still_held(held, vdc)
        vmid, task = _make_holder(api, vdc, node, name, profile.name, storage, size_gb, ctx)
    return VolumeOutcome(
        reread(api, Volume.made(zone, vmid, name, vdc.id, node, profile.name, size_gb)), task
    )


def _zone_and_storage(ctx: Context, vdc: Vdc, profile: StorageProfile, zone: str | None) -> tuple[str, str]:
    """The zone the volume goes to and the profile's storage there; INVALID naming ``zone`` or
    ``storage_profile`` where there is none, or several to choose from."""
    known = {z.id for z in catalog.zones(ctx)}
    if zone:
        if not vdc.allows_zone(zone) or zone not in known:
            raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone!r}")
        storage = profile.storage_in(zone)
        if storage is None:
            raise ValidationFailed(
                "storage_profile", f"storage profile {profile.name!r} has no storage in zone {zone}"
            )
        return zone, storage
    offered = {z: s for z in vdc.zones if z in known and (s := profile.storage_in(z)) is not None}
    if len(offered) == 1:
        [(only, storage)] = offered.items()
        return only, storage
    if not offered:
        raise ValidationFailed(
            "storage_profile", f"storage profile {profile.name!r} has no storage VDC {vdc.id} may use"
        )
    raise ValidationFailed("zone", f"name the zone: VDC {vdc.id} may use {', '.join(sorted(offered))}")


def named_volume(now: dict[str, ClusterResources], vdc: Vdc, name: str) -> Volume | None:
    for zone, resources in now.items():
        for guest in resources.volumes:
            volume = Volume.from_guest(zone, guest)
            if volume.vdc == vdc.id and volume.name == name:
                return volume
    return None


def _beside(ctx: Context, vdc: Vdc, near: str | None, zone: str | None) -> VirtualMachine | None:
    """The VM of the VDC a create names to be beside (``near``); INVALID naming it otherwise."""
    if near is None:
        return None
    try:
        _, vm = locate(ctx, near)
    except NotFound:
        vm = None
    if vm is None or vm.vdc != vdc.id:
        raise ValidationFailed("near", f"VDC {vdc.id} has no VM {near!r}")
    if zone and zone != vm.zone:
        raise ValidationFailed("zone", f"VM {vm.name} is in zone {vm.zone}, not {zone}")
    return vm


def _roomiest_host(
    ctx: Context, resources: ClusterResources, zone: str, storage: str, wanted: str | None = None
) -> str:
    """The zone's uncordoned, online host with ``storage`` available and the most room on it (``wanted``
    if it is one such)."""
    hosts = {h.node for h in catalog.hosts(ctx) if h.zone == zone and not h.cordoned}
    online = {n.node for n in resources.nodes if n.online}
    room = {
        s.node: s.total - s.used
        for s in resources.storages
        if s.storage == storage and s.available and s.node in hosts & online
    }
    if not room:
        raise Unavailable(
            zone, f"no host of zone {zone} that takes new disks has storage {storage} available"
        )
    if wanted is not None:
        if wanted not in room:
            raise Unavailable(f"{zone}/{wanted}", f"host {wanted} takes no new disk on storage {storage} now")
        return wanted
    return max(sorted(room), key=lambda node: room[node])


def _make_holder(
    api: ZoneApi, vdc: Vdc, node: str, name: str, profile: str, storage: str, size_gb: int, ctx: Context
) -> tuple[int, Task]:
    principal = ctx.principal
    description = (
        f"{marker(vdc)}\nThe holder of volume {name} ({size_gb} GiB, storage profile {profile}): it keeps "
        "the volume's disk while no VM has it attached. Never started.\n"
        f"Created by: {principal.name or principal.subject} ({principal.email or principal.subject})."
    )
    tags = (vdc.tag, STORAGE_PROFILE_TAG_PREFIX + profile, request_tag(0, 0, size_gb))
    for attempt in range(VMID_ATTEMPTS):
        vmid = api.next_vmid()
        disk = Drive(HOLDER_DISK, f"{storage}:{size_gb}", (("serial", serial(vmid)),))
        try:
            answer = api.create_holder(
                node,
                vmid,
                name=holder_name(name),
                pool=vdc.pool,
                tags=tags,
                description=description,
                disk=disk,
            )
        except VmidTaken:
            if attempt + 1 < VMID_ATTEMPTS:
                time.sleep(random.uniform(0.01, 0.1))  # noqa: S311 - jitter, not security
                continue
            raise
        return vmid, tasks.run(api, answer, vdc.id, f"creating volume {name}", TASK_TIMEOUT)
    raise AssertionError("unreachable: the last attempt returns or raises")


# ------------------------------------------------------------------------------------------ attach


def attach_volume(ctx: Context, ident: str, vm: str) -> VolumeOutcome:
    """Attach an available volume to a VM of its VDC in its zone (hot-plugged into a running one)."""
    api, volume = locate_volume(ctx, ident)
    try:
        _, target = locate(ctx, vm)
    except NotFound:
        raise NotFound("virtual machine", vm) from None
    if target.vdc != volume.vdc:
        raise NotFound("virtual machine", vm)  # another VDC's VM answers as a missing one
    if target.zone != volume.zone:
        raise ValidationFailed(
            "vm", f"volume {volume.name} is in zone {volume.zone}, VM {target.name} in {target.zone}"
        )
    vdc = vdcs.get_vdc(ctx, volume.vdc)
    with vdc_lock(ctx, vdc) as held:
        volume = reread(api, volume)
        if volume.status == IN_USE and volume.attached_vmid == target.vmid:
            return VolumeOutcome(volume, None)
        if volume.status != AVAILABLE:
            raise Conflict(_busy(volume, "attached"))
        _not_being_copied(api, volume, "attached")
        target = _vm_now(api, target)
        if volume.node != target.host:
            _follow(api, volume, target.host)
        config = api.config(target.host, target.vmid)
        slot = next((s for s in DATA_SLOTS if s not in config.keys), None)
        if slot is None:
            raise Conflict(f"VM {target.name} has no free disk slot (scsi1 to scsi30 are taken)")
        still_held(held, vdc)
        label_holder(api, volume, target.host, attached=target.vmid)
        answer = api.move_disk(target.host, volume.vmid, HOLDER_DISK, target.vmid, slot)
        task = tasks.run(
            api, answer, volume.vdc, f"attaching volume {volume.name} to VM {target.name}", TASK_TIMEOUT
        )
    return VolumeOutcome(reread(api, volume), task)


def _busy(volume: Volume, doing: str) -> str:
    if volume.status == IN_USE:
        return f"volume {volume.name} is attached to VM {volume.attached_to}: detach it first"
    return f"volume {volume.name} is {volume.status}: it cannot be {doing} now"


def _vm_now(api: ZoneApi, vm: VirtualMachine) -> VirtualMachine:
    guest = api.resources("vm").vm(vm.vmid)
    if guest is None:
        raise NotFound("virtual machine", vm.id)
    return VirtualMachine.from_guest(api.zone, guest)


def _follow(api: ZoneApi, volume: Volume, node: str) -> None:
    """Move the holder to ``node`` (offline), unless its disk is on storage local to its host."""
    local = api.migration_check(volume.node, volume.vmid).local_disks
    if local and volume.status == AVAILABLE:
        raise ValidationFailed(
            "vm",
            f"volume {volume.name} is on storage local to host {volume.node}: it attaches to VMs there only",
        )
    answer = api.migrate(volume.node, volume.vmid, node, online=False, with_local_disks=False)
    tasks.run(api, answer, volume.vdc, f"moving volume {volume.name}'s holder to host {node}", TASK_TIMEOUT)


# ------------------------------------------------------------------------------------------ detach


def detach_volume(ctx: Context, ident: str) -> VolumeOutcome:
    """Detach a volume from its VM (unplugged from a running one); it is available again."""
    api, volume = locate_volume(ctx, ident)
    vdc = vdcs.get_vdc(ctx, volume.vdc)
    with vdc_lock(ctx, vdc) as held:
        volume = reread(api, volume)
        if volume.status == AVAILABLE:
            return VolumeOutcome(volume, None)
        if volume.status != IN_USE or volume.attached_vmid is None:
            raise Conflict(_busy(volume, "detached"))
        vm = _attached_vm(api, volume)
        still_held(held, vdc)
        task = give_back(api, vm, volume)
    return VolumeOutcome(reread(api, volume), task)


# ------------------------------------------------------------------------------------------ resize, delete


def resize_volume(ctx: Context, ident: str, size_gb: int) -> VolumeOutcome:
    """Grow a volume to ``size_gb`` GiB (never shrink), where it is; counted in the VDC's quota."""
    api, volume = locate_volume(ctx, ident)
    vdc = vdcs.get_vdc(ctx, volume.vdc)
    if size_gb is None or size_gb < volume.size_gb:
        raise ValidationFailed("size_gb", f"volumes only grow: {volume.name} has {volume.size_gb} GiB")
    if volume.storage_profile:
        try:
            profile = catalog.storage_profile(ctx, volume.storage_profile)
        except NotFound:
            profile = None
        if profile is not None and size_gb > profile.max_gb:
            raise ValidationFailed(
                "size_gb", f"storage profile {profile.name} allows at most {profile.max_gb} GiB"
            )
    with vdc_lock(ctx, vdc) as held:
        now = everything_now(ctx, vdc)
        volume = reread(api, volume)
        if size_gb == volume.size_gb:
            return VolumeOutcome(volume, None)
        if volume.status not in (AVAILABLE, IN_USE):
            raise Conflict(_busy(volume, "resized"))
        current = usage(now.values(), vdc) + reserved_for_clusters(ctx, vdc, now)
        vdcs.check_quota(ctx, vdc, Usage(disk_gb=size_gb - volume.size_gb), current=current)
        still_held(held, vdc)
        tags = [t for t in api.config(volume.node, volume.vmid).tags if not t.startswith(REQUEST_TAG_PREFIX)]
        api.set_config(volume.node, volume.vmid, ConfigChange(tags=(*tags, request_tag(0, 0, size_gb))))
        if volume.status == AVAILABLE:
            node, vmid, key = volume.node, volume.vmid, HOLDER_DISK
        else:
            vm = _attached_vm(api, volume)
            drive = drive_of(api.config(vm.host, vm.vmid), volume)
            if drive is None:
                raise Conflict(f"VM {vm.name} has no disk of volume {volume.name}")
            node, vmid, key = vm.host, vm.vmid, drive.key
        answer = api.resize_disk(node, vmid, key, size_gb * GIB)
        task = (
            tasks.run(api, answer, volume.vdc, f"growing volume {volume.name} to {size_gb} GiB", TASK_TIMEOUT)
            if answer
            else None
        )
    return VolumeOutcome(reread(api, volume), task)


def _attached_vm(api: ZoneApi, volume: Volume) -> VirtualMachine:
    """The VM an in-use volume is attached to, as Proxmox has it now; CONFLICT when it has none such."""
    assert volume.attached_vmid is not None
    guest = api.resources("vm").vm(volume.attached_vmid)
    if guest is None:
        raise Conflict(f"volume {volume.name} names VM {volume.attached_to}, which Proxmox does not have")
    return VirtualMachine.from_guest(api.zone, guest)


def delete_volume(ctx: Context, ident: str) -> VolumeOutcome:
    """Delete a detached volume with its data (refused while attached); its snapshots stay, saying so."""
    api, volume = locate_volume(ctx, ident)
    vdc = vdcs.get_vdc(ctx, volume.vdc)
    with vdc_lock(ctx, vdc) as held:
        volume = reread(api, volume)
        if volume.status == IN_USE:
            raise Conflict(_busy(volume, "deleted"))
        _not_being_copied(api, volume, "deleted")
        still_held(held, vdc)
        _forget_snapshots(api, volume)
        answer = api.destroy(volume.node, volume.vmid)
        task = tasks.run(api, answer, volume.vdc, f"deleting volume {volume.name}", TASK_TIMEOUT)
    return VolumeOutcome(volume, task)


def _forget_snapshots(api: ZoneApi, volume: Volume) -> None:
    """Before a volume is deleted: its snapshots say so (``fp-was-<vmid>``), so that the volume Proxmox
    gives its VMID next does not take them for its own (``models.volumes``)."""
    for guest in api.resources("vm").volume_snapshots:
        snapshot = VolumeSnapshot.from_guest(api.zone, guest)
        if snapshot.taken_of(volume):
            config = api.config(snapshot.node, snapshot.vmid)
            tags = [t for t in config.tags if not t.startswith(SNAPSHOT_OF_TAG_PREFIX)]
            tags.append(f"{SNAPSHOT_OF_DELETED_TAG_PREFIX}{volume.vmid}")
            api.set_config(snapshot.node, snapshot.vmid, ConfigChange(tags=tuple(tags)))


def _not_being_copied(api: ZoneApi, volume: Volume, doing: str) -> None:
    """CONFLICT while Proxmox copies the volume's disk into a snapshot: a guest must not write it then, nor
    may it go (a config read of each snapshot being copied, which says what it copies)."""
    for guest in api.resources("vm").volume_snapshots:
        if guest.lock and vdc_of(parse_tags(guest.tags)) == volume.vdc:
            found = copy_of(api.config(guest.node, guest.vmid).description or "")
            if found is not None and found[0] == volume.vmid:
                name = guest.name.removesuffix(SNAPSHOT_HOLDER_SUFFIX)
                raise Conflict(
                    f"volume {volume.name} is being copied into snapshot {name}: it can be {doing} once "
                    "the copy is whole"
                )
