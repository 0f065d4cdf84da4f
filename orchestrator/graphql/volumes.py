"""Volumes: block storage of a VDC that outlives its VMs, attached to one VM at a time
(``orchestrator.services.volumes``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import graphene

from orchestrator.errors import FlexPlaneError
from orchestrator.graphql.core import VDC_MEMBER, Role, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.partial import report_partial
from orchestrator.graphql.tasks import Task
from orchestrator.models.volumes import Volume as VolumeModel
from orchestrator.models.volumes import VolumeSnapshot as VolumeSnapshotModel
from orchestrator.services import volume_snapshots, volumes
from orchestrator.services.tasks import failed_task
from orchestrator.services.volume_snapshots import SnapshotOutcome
from orchestrator.services.volumes import VolumeOutcome

VolumeErrorCode, VolumeError = error_types("Volume", "QUOTA_EXCEEDED")

VOLUME_MEMBER = Role(
    "VOLUME_MEMBER",
    "Needs USER or ADMIN and membership of the volume's VDC (another VDC's volume is NOT_FOUND).",
)


class Volume(graphene.ObjectType):
    """A volume: a disk of a VDC that outlives the VMs it is attached to."""

    id = graphene.ID(required=True, description="Global id: <zone>/<vmid of its holder>.")
    name = graphene.String(required=True)
    vdc = graphene.String(required=True)
    zone = graphene.String(required=True)
    host = graphene.String(
        required=True, description="The host it is on (a volume on storage local to a host stays there)."
    )
    storage_profile = graphene.String(required=True)
    size_gb = graphene.Int(required=True, description="Its size in GiB, as the VDC's quota counts it.")
    status = graphene.String(
        required=True,
        description="available (attached to no VM), in-use (attached to attachedTo), creating, or lost (its "
        "holder has neither its disk nor a VM: changed by hand in Proxmox).",
    )
    attached_to = graphene.ID(description="The VM it is attached to (<zone>/<vmid>), if any.")
    serial = graphene.String(
        required=True,
        description="Its disk's serial: attached, the guest finds it at "
        "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_<serial>.",
    )

    snapshots = graphene.List(
        graphene.NonNull(lambda: VolumeSnapshot),
        required=True,
        description="Its snapshots, by name (from the request's one read of its zone).",
    )

    @staticmethod
    def resolve_host(root: VolumeModel, info: graphene.ResolveInfo) -> str:
        return root.node

    @staticmethod
    @domain_errors
    def resolve_snapshots(root: VolumeModel, info: graphene.ResolveInfo) -> list[VolumeSnapshotModel]:
        return volume_snapshots.snapshots_of(flexplane(info), root)


class VolumeSnapshot(graphene.ObjectType):
    """A volume snapshot: a copy of a volume's disk at the time it was taken, from which new volumes are
    made. It is its VDC's, counted in its disk quota, and outlives the volume it was taken of."""

    id = graphene.ID(required=True, description="Global id: <zone>/<vmid of its holder>.")
    name = graphene.String(required=True)
    vdc = graphene.String(required=True)
    zone = graphene.String(required=True)
    host = graphene.String(required=True, description="The host its copy is on.")
    storage_profile = graphene.String(required=True)
    size_gb = graphene.Int(required=True, description="Its size in GiB, as the VDC's quota counts it.")
    status = graphene.String(
        required=True, description="available (its copy is whole), or creating (Proxmox is copying)."
    )
    source = graphene.ID(
        description="The volume it was taken of (<zone>/<vmid>); null while it is being copied. Once that "
        "volume is deleted (sourceDeleted), the id it had, which Proxmox may give to another guest since."
    )
    source_deleted = graphene.Boolean(
        required=True, description="Whether the volume it was taken of was deleted since."
    )
    taken_at = graphene.DateTime(description="When it was taken; null while it is being copied.")

    @staticmethod
    def resolve_host(root: VolumeSnapshotModel, info: graphene.ResolveInfo) -> str:
        return root.node

    @staticmethod
    def resolve_taken_at(root: VolumeSnapshotModel, info: graphene.ResolveInfo) -> datetime | None:
        return datetime.fromtimestamp(root.taken_at, UTC) if root.taken_at is not None else None


class VolumeMutation(ServiceMutation):
    """A volume operation's payload: the volume after it, and Proxmox's task."""

    class Meta:
        abstract = True

    shared = Shared(VOLUME_MEMBER, VolumeError)

    volume = graphene.Field(Volume)
    task = graphene.Field(
        Task, description="Proxmox's last task; with UPSTREAM_FAILURE, the task that failed."
    )

    @classmethod
    def answer(cls, result: VolumeOutcome) -> dict[str, Any]:
        return {"volume": result.volume, "task": result.task}

    @classmethod
    def failed(cls, exc: FlexPlaneError) -> dict[str, Any]:
        return {"task": failed_task(exc)}


_ERRORS = (
    "CONFLICT: the VDC is busy (retry), or Proxmox holds a lock; UPSTREAM_FAILURE carries Proxmox's message "
    "and its task."
)


class CreateVolume(VolumeMutation):
    class Meta:
        role = VDC_MEMBER
        service = volumes.create_volume
        description = (
            "Create a volume in the VDC the FlexPlane-VDC-ID header names, on a storage profile the VDC "
            "allows, in a zone (needed where the profile has storage in several of the VDC's zones). The "
            "same name, profile, size and zone return the volume made before (a retry, task null). INVALID "
            "naming the field: a name that is not a DNS label or is taken by a volume of another spec, a "
            "size outside the profile's limits, a zone the VDC may not use. QUOTA_EXCEEDED: the VDC's disk "
            f"quota, which counts volumes as it counts VMs' disks. {_ERRORS}"
        )

    class Arguments:
        name = graphene.String(required=True, description="A DNS label, unique among the VDC's volumes.")
        storage_profile = graphene.String(required=True)
        size_gb = graphene.Int(required=True)
        zone = graphene.String()
        near = graphene.ID(
            description="A VM of the VDC to make it beside: in its zone, on its host (a volume on storage "
            "local to a host attaches to VMs on that host only)."
        )


class AttachVolume(VolumeMutation):
    class Meta:
        service = volumes.attach_volume
        description = (
            "Attach an available volume to a VM of its VDC in its zone, as the VM's next free SCSI disk "
            "(hot-plugged into a running VM); the guest finds it by its serial. Attaching it to the VM it is "
            "attached to changes nothing. CONFLICT: it is attached to another VM (detach it first), or the "
            "VM has no free slot. INVALID on vm: another zone, or a volume on storage local to another host. "
            f"Another VDC's VM is NOT_FOUND. {_ERRORS}"
        )

    class Arguments:
        id = graphene.ID(required=True, description="The volume's id.")
        vm = graphene.ID(required=True, description="The VM's id.")


class DetachVolume(VolumeMutation):
    class Meta:
        service = volumes.detach_volume
        description = (
            "Detach a volume from its VM (unplugged from a running one: unmount it in the guest first); it "
            f"is available again with its data. A detached volume is left as it is. {_ERRORS} Proxmox "
            "refuses to move a disk a snapshot of the VM holds: delete those snapshots first."
        )

    class Arguments:
        id = graphene.ID(required=True)


class ResizeVolume(VolumeMutation):
    class Meta:
        service = volumes.resize_volume
        description = (
            "Grow a volume to sizeGb (never shrink), attached or not; counted in the VDC's quota "
            "(QUOTA_EXCEEDED). INVALID on sizeGb: smaller than it is, or above its profile's limit. "
            f"{_ERRORS}"
        )

    class Arguments:
        id = graphene.ID(required=True)
        size_gb = graphene.Int(required=True)


class DeleteVolume(VolumeMutation):
    class Meta:
        service = volumes.delete_volume
        description = f"Delete a volume and its data. CONFLICT while it is attached. {_ERRORS}"

    class Arguments:
        id = graphene.ID(required=True)


class CreateVolumeFromSnapshot(VolumeMutation):
    class Meta:
        role = VDC_MEMBER
        service = volume_snapshots.create_volume_from_snapshot
        description = (
            "Create a volume holding a copy of a volume snapshot, in the snapshot's VDC, zone and storage "
            "profile, of sizeGb GiB (at least the snapshot's; its size when null). The same name from the "
            "same snapshot returns the volume made before (task null). INVALID naming the field: a name "
            "that is not a DNS label or is another volume's, a size below the snapshot's. QUOTA_EXCEEDED: "
            f"the VDC's disk quota. CONFLICT: the snapshot is still being copied. {_ERRORS}"
        )

    class Arguments:
        snapshot = graphene.ID(required=True, description="The volume snapshot's id.")
        name = graphene.String(required=True, description="A DNS label, unique among the VDC's volumes.")
        size_gb = graphene.Int()


class VolumeSnapshotMutation(ServiceMutation):
    """A volume snapshot operation's payload: the snapshot after it, and Proxmox's task."""

    class Meta:
        abstract = True

    shared = Shared(VOLUME_MEMBER, VolumeError)

    snapshot = graphene.Field(VolumeSnapshot)
    task = graphene.Field(
        Task,
        description="Proxmox's last task (a copy still running when the request ends: its status tells when "
        "it is whole); with UPSTREAM_FAILURE, the task that failed.",
    )

    @classmethod
    def answer(cls, result: SnapshotOutcome) -> dict[str, Any]:
        return {"snapshot": result.snapshot, "task": result.task}

    @classmethod
    def failed(cls, exc: FlexPlaneError) -> dict[str, Any]:
        return {"task": failed_task(exc)}


class CreateVolumeSnapshot(VolumeSnapshotMutation):
    class Meta:
        service = volume_snapshots.snapshot_volume
        description = (
            "Take a snapshot of a detached volume: a copy of its disk, counted in the VDC's disk quota "
            "(QUOTA_EXCEEDED). A copy that outlasts the request is left creating; the same name of the same "
            "volume returns it (task null), and finishes it once whole. CONFLICT: the volume is attached (a "
            "snapshot copies a disk no guest writes: detach it first). INVALID on name: not a DNS label, or "
            f"a snapshot of another volume has it. {_ERRORS}"
        )

    class Arguments:
        volume = graphene.ID(required=True, description="The volume's id.")
        name = graphene.String(required=True, description="A DNS label, unique among the VDC's snapshots.")


class DeleteVolumeSnapshot(VolumeSnapshotMutation):
    class Meta:
        service = volume_snapshots.delete_volume_snapshot
        description = (
            "Delete a volume snapshot and its copy; the volume it was taken of is untouched. CONFLICT while "
            f"it is being copied. {_ERRORS}"
        )

    class Arguments:
        id = graphene.ID(required=True)


class Query(graphene.ObjectType):
    volumes = graphene.List(
        graphene.NonNull(Volume),
        required=True,
        description="The volumes of the VDC the FlexPlane-VDC-ID header names, else of all the caller's VDCs "
        "(ADMIN: all), by name: one Proxmox call per zone. A zone that does not answer is left out, with an "
        "UNAVAILABLE error naming it.",
    )
    volume = graphene.Field(
        Volume,
        id=graphene.ID(required=True),
        description="One volume, live; another VDC's is NOT_FOUND, exactly like a missing one.",
    )

    volume_snapshots = graphene.List(
        graphene.NonNull(VolumeSnapshot),
        required=True,
        volume=graphene.ID(description="Only the snapshots of this volume."),
        description="The volume snapshots of the VDC the FlexPlane-VDC-ID header names, else of all the "
        "caller's VDCs (ADMIN: all), by name: one Proxmox call per zone. A zone that does not answer is left "
        "out, with an UNAVAILABLE error naming it.",
    )
    volume_snapshot = graphene.Field(
        VolumeSnapshot,
        id=graphene.ID(required=True),
        description="One volume snapshot, live; another VDC's is NOT_FOUND, exactly like a missing one.",
    )

    @staticmethod
    @domain_errors
    def resolve_volume_snapshots(
        root: None, info: graphene.ResolveInfo, volume: str | None = None
    ) -> list[VolumeSnapshotModel]:
        return report_partial(info, volume_snapshots.list_volume_snapshots(flexplane(info), volume))

    @staticmethod
    @domain_errors
    def resolve_volume_snapshot(root: None, info: graphene.ResolveInfo, id: str) -> VolumeSnapshotModel:
        return volume_snapshots.get_volume_snapshot(flexplane(info), id)

    @staticmethod
    @domain_errors
    def resolve_volumes(root: None, info: graphene.ResolveInfo) -> list[VolumeModel]:
        return report_partial(info, volumes.list_volumes(flexplane(info)))

    @staticmethod
    @domain_errors
    def resolve_volume(root: None, info: graphene.ResolveInfo, id: str) -> VolumeModel:
        return volumes.get_volume(flexplane(info), id)


class Mutation(graphene.ObjectType):
    create_volume = CreateVolume.Field()
    attach_volume = AttachVolume.Field()
    detach_volume = DetachVolume.Field()
    resize_volume = ResizeVolume.Field()
    delete_volume = DeleteVolume.Field()
    create_volume_from_snapshot = CreateVolumeFromSnapshot.Field()
    create_volume_snapshot = CreateVolumeSnapshot.Field()
    delete_volume_snapshot = DeleteVolumeSnapshot.Field()
