"""A volume: block storage of a VDC that outlives the VMs it is attached to (Cloud Director's independent
disk, OpenStack's Cinder volume).

Proxmox keeps every disk as a VM's, so each volume has a VM of its own that holds it while no VM has it
attached: its *holder*, a VM named ``<volume>.volume`` in the VDC's pool, never started, with no NIC and
one disk, ``scsi0``, the volume. Attaching moves the disk to the VM (Proxmox's disk reassignment), and
detaching moves it back. The volume's id is its holder's (``<zone>/<vmid>``), and everything else about it
is read from the holder as ``/cluster/resources`` reports it, statelessly:

- its VDC, storage profile and size from the holder's tags (``fp-vdc-``, ``fp-sp-``, and the size the
  quota counts, ``fp-req-0c0m<GiB>g``, also while the disk is attached elsewhere);
- where it is: while the holder has its disk, Proxmox reports the holder's ``maxdisk`` as its size and
  the volume is ``available``; once moved out the holder has no disk (``maxdisk`` 0) and the volume is
  ``in-use`` by the VM its ``fp-on-<vmid>`` tag names. That tag is written before an attach moves the
  disk and taken away after a detach moved it back, so a holder that still has its disk is available,
  whatever the tag says (an attach that stopped half-way).

A volume snapshot is a copy of a detached volume's disk, taken in one Proxmox full clone of its holder:
a VM of its own, ``<snapshot>.snapshot`` in the VDC's pool, never started, that keeps the copy until it is
deleted or a new volume is made from it (another full clone). It is the VDC's as its volume is, counted
in the disk quota, and outlives the volume it was taken of (``fp-of-<vmid>`` names that volume's holder,
``fp-was-<vmid>`` once that volume is deleted, as Proxmox gives its VMID to the next guest;
``fp-taken-<epoch>`` when it was taken). Proxmox's own snapshots are the whole VM's and pin a disk to its
VM (a disk a snapshot uses cannot move to another VM), so a volume's are copies.

Its disk carries the serial ``fpvol-<vmid>`` (at most 20 characters, as virtio-blk keeps them): the guest
finds it at ``/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_fpvol-<vmid>``, as the CSI node plugin does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from orchestrator.models.vms import (
    GIB,
    STORAGE_PROFILE_TAG_PREFIX,
    parse_tags,
    requested_in,
    tag_value,
    vdc_of,
    vm_id,
)
from orchestrator.sources.proxmox.values import SNAPSHOT_HOLDER_SUFFIX, VOLUME_HOLDER_SUFFIX, Guest

ATTACHED_TAG_PREFIX = "fp-on-"
SNAPSHOT_OF_TAG_PREFIX = "fp-of-"
# A snapshot's volume deleted: its tag becomes this, so that a volume given the VMID later is not taken
# for it.
SNAPSHOT_OF_DELETED_TAG_PREFIX = "fp-was-"
TAKEN_TAG_PREFIX = "fp-taken-"
SERIAL_PREFIX = "fpvol-"
AVAILABLE = "available"
IN_USE = "in-use"
CREATING = "creating"
# A holder with neither its disk nor a VM named: only by hand (its disk deleted, its tag removed).
LOST = "lost"


def holder_name(volume: str) -> str:
    """The name of a volume's holder VM."""
    return volume + VOLUME_HOLDER_SUFFIX


# What a copy's holder's description says of its source from the start (tags are written once it is
# whole: Proxmox's clone takes none): a snapshot's the volume it copies and when the copy began, a volume
# made from a snapshot that snapshot.
_COPY_OF = re.compile(r"^Copy of volume \S+ \(holder (\d+)\) at (\d+)", re.MULTILINE)
_MADE_FROM = re.compile(r"made from volume snapshot \S+ \(holder (\d+)\)")


def copy_of_line(volume: str, vmid: int, began: int) -> str:
    """The line of a snapshot holder's description that names the volume it copies and when."""
    return f"Copy of volume {volume} (holder {vmid}) at {began}"


def made_from_words(snapshot: str, vmid: int) -> str:
    """The words of a volume holder's description that name the snapshot it was made from."""
    return f"made from volume snapshot {snapshot} (holder {vmid})"


def copy_of(description: str) -> tuple[int, int] | None:
    """The holder VMID of the volume a snapshot copies, and when the copy began, from its description."""
    found = _COPY_OF.search(description)
    return (int(found.group(1)), int(found.group(2))) if found else None


def made_from(description: str) -> int | None:
    """The holder VMID of the snapshot a volume was made from, from its description."""
    found = _MADE_FROM.search(description)
    return int(found.group(1)) if found else None


def snapshot_holder_name(snapshot: str) -> str:
    """The name of a volume snapshot's holder VM."""
    return snapshot + SNAPSHOT_HOLDER_SUFFIX


def serial(vmid: int) -> str:
    """The serial of a volume's disk, as its guest sees it."""
    return f"{SERIAL_PREFIX}{vmid}"


@dataclass(frozen=True)
class Volume:
    """A volume as its holder reports it."""

    id: str
    zone: str
    vmid: int  # its holder's
    name: str
    vdc: str
    node: str  # where its holder is (and, attached, the VM it is attached to)
    storage_profile: str
    size_gb: int
    status: str  # AVAILABLE, IN_USE, CREATING or LOST
    attached_vmid: int | None  # the VM it is attached to (IN_USE), in the same zone

    @property
    def serial(self) -> str:
        return serial(self.vmid)

    @property
    def attached_to(self) -> str | None:
        """The global id of the VM it is attached to."""
        return vm_id(self.zone, self.attached_vmid) if self.attached_vmid is not None else None

    @classmethod
    def made(
        cls, zone: str, vmid: int, name: str, vdc: str, node: str, storage_profile: str, size_gb: int
    ) -> Volume:
        """A volume just made, available, before Proxmox reports it."""
        return cls(vm_id(zone, vmid), zone, vmid, name, vdc, node, storage_profile, size_gb, AVAILABLE, None)

    @classmethod
    def from_guest(cls, zone: str, guest: Guest) -> Volume:
        tags = parse_tags(guest.tags)
        requested = requested_in(guest.tags)
        attached = _number(tag_value(tags, ATTACHED_TAG_PREFIX))
        if guest.lock in ("create", "clone"):  # made, or copied from a snapshot
            status, attached = CREATING, None
        elif guest.disk > 0:
            status, attached = AVAILABLE, None
        else:
            status = IN_USE if attached is not None else LOST
        return cls(
            id=vm_id(zone, guest.vmid),
            zone=zone,
            vmid=guest.vmid,
            name=guest.name.removesuffix(VOLUME_HOLDER_SUFFIX),
            vdc=vdc_of(tags) or "",
            node=guest.node,
            storage_profile=tag_value(tags, STORAGE_PROFILE_TAG_PREFIX) or "",
            size_gb=max(requested[2] if requested else 0, math.ceil(guest.disk / GIB)),
            status=status,
            attached_vmid=attached,
        )


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and value.isascii() and value.isdigit() else None


@dataclass(frozen=True)
class VolumeSnapshot:
    """A volume snapshot as its holder reports it."""

    id: str
    zone: str
    vmid: int  # its holder's
    name: str
    vdc: str
    node: str
    storage_profile: str
    size_gb: int
    status: str  # AVAILABLE (its copy is whole) or CREATING (Proxmox is copying)
    source_vmid: int | None  # the holder of the volume it was taken of, in the same zone
    taken_at: int | None  # seconds since the epoch
    source_deleted: bool = False  # that volume was deleted since (its VMID may be another guest's now)

    @property
    def source(self) -> str | None:
        """The global id of the volume it was taken of (``source_deleted``: as it was)."""
        return vm_id(self.zone, self.source_vmid) if self.source_vmid is not None else None

    def described(self, description: str) -> VolumeSnapshot:
        """As its description says, while its tags do not say yet what it copies and when."""
        if self.source_vmid is not None or self.source_deleted:
            return self
        found = copy_of(description)
        return replace(self, source_vmid=found[0], taken_at=found[1]) if found else self

    def taken_of(self, volume: Volume) -> bool:
        """Whether it was taken of this volume (not of a deleted one whose VMID the volume has now)."""
        return (self.zone, self.vdc, self.source_vmid, self.source_deleted) == (
            volume.zone,
            volume.vdc,
            volume.vmid,
            False,
        )

    @classmethod
    def from_guest(cls, zone: str, guest: Guest) -> VolumeSnapshot:
        tags = parse_tags(guest.tags)
        requested = requested_in(guest.tags)
        deleted = tag_value(tags, SNAPSHOT_OF_DELETED_TAG_PREFIX)
        return cls(
            id=vm_id(zone, guest.vmid),
            zone=zone,
            vmid=guest.vmid,
            name=guest.name.removesuffix(SNAPSHOT_HOLDER_SUFFIX),
            vdc=vdc_of(tags) or "",
            node=guest.node,
            storage_profile=tag_value(tags, STORAGE_PROFILE_TAG_PREFIX) or "",
            size_gb=max(requested[2] if requested else 0, math.ceil(guest.disk / GIB)),
            status=CREATING if guest.lock or guest.disk == 0 else AVAILABLE,
            source_vmid=_number(tag_value(tags, SNAPSHOT_OF_TAG_PREFIX) or deleted),
            taken_at=_number(tag_value(tags, TAKEN_TAG_PREFIX)),
            source_deleted=deleted is not None,
        )
