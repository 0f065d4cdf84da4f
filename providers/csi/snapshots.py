"""The CSI driver's snapshots: a tenant cluster's VolumeSnapshots are its VDC's volume snapshots (full copies
of a detached volume's disk), taken, listed, deleted and made into new volumes through flex.plane's API
(``apiclient/operations/volumes.graphql``), as :mod:`.controller` does the volumes. The spec's calls map to
the API's:

- ``CreateSnapshot``: ``createVolumeSnapshot`` of the source volume, named after the request's name (a DNS
  label as it is, the external-snapshotter's ``snapshot-<uuid>``; otherwise ``csi-`` and a hash of it). The
  API returns the snapshot a same-named call took (the sidecar's retries) and finishes one whose copy
  outlasted its request: the answer is ``ready_to_use`` once the copy is whole, and the sidecar calls again
  until it is. The name taken by a snapshot of another volume: ALREADY_EXISTS. The volume attached to a VM:
  FAILED_PRECONDITION with the API's word (it copies only a disk no guest writes: the claim's pods stop
  first). The copy over the VDC's disk quota: RESOURCE_EXHAUSTED. No such volume: NOT_FOUND.
- ``DeleteSnapshot``: ``deleteVolumeSnapshot``; one gone already is deleted (the spec's idempotency). One
  still being copied: ABORTED, the spec's code for an operation pending on the snapshot (its copy), which
  the sidecar retries with back-off; FAILED_PRECONDITION is the spec's for a snapshot in use by another
  resource, which a copy under way is not.
- ``ListSnapshots``: the VDC's snapshots (one by ``snapshot_id``, none when it is unknown; those taken of
  ``source_volume_id``, which may be deleted since: snapshots outlive their volumes) in the API's order,
  ``max_entries`` at a time from ``starting_token`` (a decimal offset into the list; another token is
  ABORTED, as the spec says). A snapshot whose copy is under way before the API recorded what it copies is
  left out: the spec lists no snapshot that is not cut yet, and a listed one names its source.
- ``CreateVolume`` from a snapshot (``volume_content_source.snapshot``): ``createVolumeFromSnapshot``, in
  the snapshot's zone and storage profile (a StorageClass of another profile or zone: INVALID_ARGUMENT; a
  topology that excludes its zone: RESOURCE_EXHAUSTED, as the spec has it), of the smallest whole GiB that
  holds ``required_bytes`` and the snapshot (beyond ``limit_bytes`` or the profile's most: OUT_OF_RANGE).
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from apiclient import FlexPlane, ProtocolError
from apiclient import errors as api
from apiclient.generated.fragments import VolumeFields, VolumeSnapshotFields
from providers.cloud.vdc import answered
from providers.csi.proto import csi_pb2 as csi
from providers.csi.rules import GIB, SIDECAR_PARAMETER, ZONE_KEY, Refused, api_name, required, size_gb

log = logging.getLogger("providers.csi.snapshots")

AVAILABLE = "available"  # a volume snapshot whose copy is whole


def as_csi(snapshot: VolumeSnapshotFields, source_volume_id: str = "") -> csi.Snapshot:
    """The spec's snapshot: ``creation_time`` when the API says it was taken (now while it does not say
    yet), ``ready_to_use`` once its copy is whole."""
    taken = Timestamp()
    if snapshot.taken_at is not None:
        taken.FromDatetime(snapshot.taken_at)
    else:
        taken.GetCurrentTime()
    return csi.Snapshot(
        size_bytes=snapshot.size_gb * GIB,
        snapshot_id=snapshot.id,
        source_volume_id=snapshot.source or source_volume_id,
        creation_time=taken,
        ready_to_use=snapshot.status == AVAILABLE,
    )


def offset(token: str, count: int) -> int:
    """Where a page starts: ``starting_token``, a decimal offset into the ``count`` snapshots listed (none:
    the first); ABORTED for a token that is none of those, as the spec says (the caller starts again)."""
    if not token:
        return 0
    if not (token.isascii() and token.isdigit()) or int(token) > count:
        raise Refused(
            grpc.StatusCode.ABORTED,
            f"starting_token {token!r} is no offset into the {count} snapshots listed: list again from the "
            "start",
        )
    return int(token)


class Snapshots:
    """The snapshot calls of one tenant cluster's controller, acting in its VDC through ``api``."""

    def __init__(self, api: FlexPlane) -> None:
        self.api = api

    def _volume_exists(self, volume_id: str) -> bool:
        try:
            return self.api.volume(volume_id).volume is not None
        except api.NotFound:
            return False

    def find(self, snapshot_id: str) -> VolumeSnapshotFields | None:
        """The VDC's snapshot of that id, or None (another VDC's answers as none)."""
        try:
            return self.api.volume_snapshot(snapshot_id).volume_snapshot
        except api.NotFound:
            return None

    # ------------------------------------------------------------------------------------------ take

    def create(self, request: csi.CreateSnapshotRequest) -> csi.CreateSnapshotResponse:
        volume_id = required(request.source_volume_id, "source_volume_id")
        name = api_name(required(request.name, "name"))
        unknown = sorted(key for key in request.parameters if not SIDECAR_PARAMETER.fullmatch(key))
        if unknown:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"unknown parameters: {', '.join(unknown)}")
        try:
            taken = answered(self.api.create_volume_snapshot(volume_id, name).create_volume_snapshot).snapshot
        except api.InvalidInput as exc:
            if exc.field == "name":  # a DNS label the API refuses: another volume's snapshot has it
                raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"snapshot {name}: {exc.message}") from exc
            raise
        if taken is None:
            raise ProtocolError("createVolumeSnapshot answered neither a snapshot nor errors")
        log.info("snapshot %s of volume %s is %s (%s)", request.name, volume_id, taken.id, taken.status)
        return csi.CreateSnapshotResponse(snapshot=as_csi(taken, volume_id))

    # ------------------------------------------------------------------------------------------ delete

    def delete(self, request: csi.DeleteSnapshotRequest) -> csi.DeleteSnapshotResponse:
        snapshot_id = required(request.snapshot_id, "snapshot_id")
        try:
            self.api.delete_volume_snapshot(snapshot_id)
        except api.NotFound:
            pass  # deleted already: the call is idempotent
        except api.Conflict as exc:  # still being copied: an operation pending on it
            raise Refused(grpc.StatusCode.ABORTED, f"deleting snapshot {snapshot_id}: {exc.message}") from exc
        return csi.DeleteSnapshotResponse()

    # ------------------------------------------------------------------------------------------ list

    def list(self, request: csi.ListSnapshotsRequest) -> csi.ListSnapshotsResponse:
        if request.max_entries < 0:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "max_entries must not be negative")
        if request.snapshot_id:
            one = self.find(request.snapshot_id)
            found = [one] if one is not None else []
        else:
            found = list(self.api.volume_snapshots().volume_snapshots)
        wanted = request.source_volume_id
        listed = [s for s in found if s.source is not None and (not wanted or s.source == wanted)]
        if wanted and any(s.source_deleted for s in listed) and self._volume_exists(wanted):
            # The id is a new volume's (Proxmox gave it the deleted one's VMID): not those snapshots' source.
            listed = [s for s in listed if not s.source_deleted]
        start = offset(request.starting_token, len(listed))
        end = min(start + request.max_entries, len(listed)) if request.max_entries else len(listed)
        entries = [csi.ListSnapshotsResponse.Entry(snapshot=as_csi(s)) for s in listed[start:end]]
        return csi.ListSnapshotsResponse(entries=entries, next_token=str(end) if end < len(listed) else "")

    # ------------------------------------------------------------------------------------------ restore

    def volume_from(
        self, request: csi.CreateVolumeRequest, name: str, profile: str, most_gb: int, zone: str | None
    ) -> VolumeFields:
        """The volume ``name`` holding a copy of the request's snapshot, made (or made before, for a
        retry) in the snapshot's zone and storage profile, which the StorageClass's ``profile`` and ``zone``
        and the request's topology must allow."""
        field = "volume_content_source.snapshot.snapshot_id"
        snapshot_id = required(request.volume_content_source.snapshot.snapshot_id, field)
        snapshot = self.find(snapshot_id)
        if snapshot is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"snapshot {snapshot_id} does not exist")
        if snapshot.storage_profile != profile or zone not in (None, snapshot.zone):
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"snapshot {snapshot_id} is of storage profile {snapshot.storage_profile} in zone "
                f"{snapshot.zone}, and its volumes are too: the StorageClass asks for {profile}"
                + (f" in {zone}" if zone else ""),
            )
        # Each requisite topology is one the volume may have; one that names no zone allows every zone.
        zones = {t.segments.get(ZONE_KEY, "") for t in request.accessibility_requirements.requisite}
        if zones and "" not in zones and snapshot.zone not in zones:
            raise Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"snapshot {snapshot_id} is in zone {snapshot.zone}, where its volumes are made; the "
                f"topology requires {', '.join(sorted(zones))}",
            )
        size = size_gb(request.capacity_range, snapshot.size_gb)
        if size > most_gb:
            raise Refused(
                grpc.StatusCode.OUT_OF_RANGE,
                f"storage profile {profile} allows at most {most_gb} GiB, not {size}",
            )
        try:
            made = answered(
                self.api.create_volume_from_snapshot(snapshot.id, name, size).create_volume_from_snapshot
            ).volume
        except api.InvalidInput as exc:
            if exc.field == "name":  # a DNS label the API refuses: another volume's, not made from it
                raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"volume {name}: {exc.message}") from exc
            raise
        if made is None:
            raise ProtocolError("createVolumeFromSnapshot answered neither a volume nor errors")
        limit = request.capacity_range.limit_bytes
        if limit and made.size_gb * GIB > limit:
            raise Refused(
                grpc.StatusCode.ALREADY_EXISTS,
                f"volume {name} exists of {made.size_gb} GiB, past the limit of {limit} bytes",
            )
        log.info("volume %s made as %s from snapshot %s (%d GiB)", name, made.id, snapshot.id, made.size_gb)
        return made
