"""The CSI driver's controller: a tenant cluster's volumes are its VDC's volumes, made, attached to the
workers' VMs, grown and deleted through flex.plane's API (``apiclient``, ``apiclient/operations/
volumes.graphql``) as a service account of the cluster's VDC.

It runs beside the hosted control plane, on the management side, and holds no Proxmox credential: what it
may do is what the VDC's members may do, within its quota, and every volume it makes is listed in the
portal as the VDC's. The spec's calls map to the API's:

- ``CreateVolume``: ``createVolume`` named after the request's name (a DNS label as it is, ``pvc-<uuid>``;
  otherwise ``csi-`` and a hash of it), of the StorageClass's ``storageProfile``, in the zone of the
  topology asked for (``topology.kubernetes.io/zone``) or the class's ``zone``, of the smallest whole GiB
  that holds ``required_bytes`` and the profile allows (its least, without one). The API returns the
  volume a same-named create made
  (the sidecar's retries); a volume of that name with another size is ALREADY_EXISTS. With a snapshot as
  its content source, ``createVolumeFromSnapshot`` (:mod:`.snapshots`); another volume as its source (a
  clone) is not offered: INVALID_ARGUMENT, as the spec has it for a source the driver does not serve.
- ``ControllerPublishVolume``: ``attachVolume`` to the worker's VM, found by the node id (the Kubernetes
  node's name, the VM's name); its publish context carries the disk's ``serial``, by which the node
  plugin finds the disk. Attached to another VM already: FAILED_PRECONDITION, as the spec says.
- ``ControllerUnpublishVolume``: ``detachVolume`` (nothing to do for a volume attached to no VM, or gone).
- ``ControllerExpandVolume``: ``resizeVolume`` (grow only), the node then grows the file system.
- ``DeleteVolume``: ``deleteVolume`` (a volume gone already is deleted: the call is idempotent).
- ``CreateSnapshot``, ``DeleteSnapshot``, ``ListSnapshots``: the VDC's volume snapshots (:mod:`.snapshots`).

The API's refusals become the spec's codes: NOT_FOUND as it is, INVALID as INVALID_ARGUMENT (a size out of
the profile's limits as OUT_OF_RANGE), QUOTA_EXCEEDED as RESOURCE_EXHAUSTED, CONFLICT as
FAILED_PRECONDITION, UNAVAILABLE and UPSTREAM_FAILURE as UNAVAILABLE (the sidecars retry).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import TypeVar

import grpc

from apiclient import ApiError, FlexPlane, ProtocolError
from apiclient import errors as api
from apiclient.generated.fragments import VolumeFields
from providers.cloud.vdc import Vdc, answered
from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc
from providers.csi.rules import (
    GIB,
    SERIAL_KEY,
    SIDECAR_PARAMETER,
    ZONE_KEY,
    Refused,
    abort,
    api_name,
    checked_capability,
    required,
    size_gb,
)
from providers.csi.snapshots import Snapshots

log = logging.getLogger("providers.csi.controller")

# A StorageClass's parameters: the storage profile its volumes are made on, and (optional) their zone.
STORAGE_PROFILE = "storageProfile"
ZONE = "zone"

Reply = TypeVar("Reply")


def _zone(request: csi.CreateVolumeRequest) -> str | None:
    """The zone the topology asks for (its preferred first), else the StorageClass's ``zone``."""
    wanted = request.accessibility_requirements
    for topology in (*wanted.preferred, *wanted.requisite):
        zone = topology.segments.get(ZONE_KEY)
        if zone:
            return str(zone)
    return request.parameters.get(ZONE) or None


def _content_source(request: csi.CreateVolumeRequest) -> csi.VolumeContentSource | None:
    """The snapshot a volume is to be made from (None: made empty); a clone of a volume is not offered."""
    if not request.HasField("volume_content_source"):
        return None
    source = request.volume_content_source
    kind = source.WhichOneof("type")
    if kind != "snapshot":
        said = "a volume (a clone)" if kind == "volume" else "nothing"
        raise Refused(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"volume_content_source names {said}: volumes are made empty or from a snapshot (take one of the "
            "volume and make the new volume from it)",
        )
    return source


def _as_csi(volume: VolumeFields, source: csi.VolumeContentSource | None = None) -> csi.Volume:
    return csi.Volume(
        volume_id=volume.id,
        capacity_bytes=volume.size_gb * GIB,
        accessible_topology=[csi.Topology(segments={ZONE_KEY: volume.zone})],
        content_source=source,
    )


def refusal(exc: ApiError, doing: str) -> Refused:
    """The spec's code for the API's refusal of ``doing``."""
    message = f"{doing}: {exc.message}"
    if isinstance(exc, api.NotFound):
        return Refused(grpc.StatusCode.NOT_FOUND, message)
    if isinstance(exc, api.InvalidInput):
        code = grpc.StatusCode.OUT_OF_RANGE if exc.field == "sizeGb" else grpc.StatusCode.INVALID_ARGUMENT
        return Refused(code, message)
    if isinstance(exc, api.QuotaExceeded):
        return Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
    if isinstance(exc, api.Conflict):
        return Refused(grpc.StatusCode.FAILED_PRECONDITION, message)
    if isinstance(exc, api.Unavailable | api.UpstreamFailure | ProtocolError):
        return Refused(grpc.StatusCode.UNAVAILABLE, message)
    return Refused(grpc.StatusCode.INTERNAL, message)


class ControllerService(csi_pb2_grpc.ControllerServicer):
    """The Controller service of one tenant cluster, acting in its VDC through ``api``."""

    def __init__(self, api: FlexPlane) -> None:
        self.api = api
        self.vdc = Vdc(api)
        self.snapshots = Snapshots(api)

    def _answer(self, context: grpc.ServicerContext, doing: str, call: Callable[[], Reply]) -> Reply:
        try:
            try:
                return call()
            except ApiError as exc:
                raise refusal(exc, doing) from exc
        except Refused as refused:
            log.info("%s refused (%s): %s", doing, refused.code.name, refused.message)
            abort(context, refused.code, refused.message)

    def _volume(self, volume_id: str) -> VolumeFields | None:
        """The VDC's volume of that id, or None (another VDC's answers as none)."""
        try:
            return self.api.volume(volume_id).volume
        except api.NotFound:
            return None

    # ------------------------------------------------------------------------------------------ create

    def CreateVolume(
        self, request: csi.CreateVolumeRequest, context: grpc.ServicerContext
    ) -> csi.CreateVolumeResponse:
        return self._answer(context, f"creating volume {request.name}", lambda: self._create(request))

    def _create(self, request: csi.CreateVolumeRequest) -> csi.CreateVolumeResponse:
        name = api_name(required(request.name, "name"))
        if not request.volume_capabilities:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "volume_capabilities are required")
        for capability in request.volume_capabilities:
            checked_capability(capability, "volume_capabilities")
        source = _content_source(request)
        unknown = sorted(
            key
            for key in request.parameters
            if key not in (STORAGE_PROFILE, ZONE) and not SIDECAR_PARAMETER.fullmatch(key)
        )
        if unknown:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"unknown parameters: {', '.join(unknown)}")
        profile = required(request.parameters.get(STORAGE_PROFILE, ""), f"parameters.{STORAGE_PROFILE}")
        limits = {p.name: p for p in self.api.volume_storage_profiles().storage_profiles}
        if profile not in limits:
            raise Refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"parameters.{STORAGE_PROFILE}: no storage profile {profile!r}",
            )
        if source is not None:
            zone = request.parameters.get(ZONE) or None
            copy = self.snapshots.volume_from(request, name, profile, limits[profile].max_gb, zone)
            return csi.CreateVolumeResponse(volume=_as_csi(copy, source))
        size = size_gb(request.capacity_range, limits[profile].min_gb)
        if size > limits[profile].max_gb:
            raise Refused(
                grpc.StatusCode.OUT_OF_RANGE,
                f"storage profile {profile} allows at most {limits[profile].max_gb} GiB, not {size}",
            )
        try:
            made = answered(
                self.api.create_volume(name, profile, size, zone=_zone(request)).create_volume
            ).volume
        except api.InvalidInput as exc:
            if exc.field == "name" and "another spec" in exc.message:
                raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"volume {name}: {exc.message}") from exc
            raise
        if made is None:
            raise ProtocolError("createVolume answered neither a volume nor errors")
        log.info("volume %s made as %s (%d GiB)", request.name, made.id, made.size_gb)
        return csi.CreateVolumeResponse(volume=_as_csi(made))

    # ------------------------------------------------------------------------------------------ delete

    def DeleteVolume(
        self, request: csi.DeleteVolumeRequest, context: grpc.ServicerContext
    ) -> csi.DeleteVolumeResponse:
        def delete() -> csi.DeleteVolumeResponse:
            volume_id = required(request.volume_id, "volume_id")
            with contextlib.suppress(api.NotFound):  # deleted already: the call is idempotent
                self.api.delete_volume(volume_id)
            return csi.DeleteVolumeResponse()

        return self._answer(context, f"deleting volume {request.volume_id}", delete)

    # ------------------------------------------------------------------------------------------ publish

    def ControllerPublishVolume(
        self, request: csi.ControllerPublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi.ControllerPublishVolumeResponse:
        doing = f"attaching volume {request.volume_id} to node {request.node_id}"
        return self._answer(context, doing, lambda: self._publish(request))

    def _machine(self, node_id: str) -> str:
        """The VM id of the worker named ``node_id``; NOT_FOUND when the VDC has none so named."""
        machine = self.vdc.machines().get(required(node_id, "node_id"))
        if machine is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"node {node_id} is no VM of the cluster's VDC")
        return machine.id

    def _publish(self, request: csi.ControllerPublishVolumeRequest) -> csi.ControllerPublishVolumeResponse:
        volume_id = required(request.volume_id, "volume_id")
        checked_capability(request.volume_capability)
        vm = self._machine(request.node_id)
        volume = self._volume(volume_id)
        if volume is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} does not exist")
        if volume.attached_to not in (None, vm):
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"volume {volume_id} is published to another node ({volume.attached_to})",
            )
        attached = answered(self.api.attach_volume(volume_id, vm).attach_volume).volume
        serial = attached.serial if attached is not None else volume.serial
        return csi.ControllerPublishVolumeResponse(publish_context={SERIAL_KEY: serial})

    def ControllerUnpublishVolume(
        self, request: csi.ControllerUnpublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi.ControllerUnpublishVolumeResponse:
        doing = f"detaching volume {request.volume_id} from node {request.node_id}"
        return self._answer(context, doing, lambda: self._unpublish(request))

    def _unpublish(
        self, request: csi.ControllerUnpublishVolumeRequest
    ) -> csi.ControllerUnpublishVolumeResponse:
        volume = self._volume(required(request.volume_id, "volume_id"))
        if volume is None or volume.attached_to is None:
            return csi.ControllerUnpublishVolumeResponse()  # gone, or attached to nothing: done
        if request.node_id:
            machine = self.vdc.machines().get(request.node_id)
            if machine is not None and machine.id != volume.attached_to:
                return csi.ControllerUnpublishVolumeResponse()  # attached elsewhere: not this node's
        self.api.detach_volume(volume.id)
        return csi.ControllerUnpublishVolumeResponse()

    # ------------------------------------------------------------------------------------------ expand

    def ControllerExpandVolume(
        self, request: csi.ControllerExpandVolumeRequest, context: grpc.ServicerContext
    ) -> csi.ControllerExpandVolumeResponse:
        def expand() -> csi.ControllerExpandVolumeResponse:
            volume_id = required(request.volume_id, "volume_id")
            if not request.capacity_range.required_bytes:
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "capacity_range.required_bytes is required")
            wanted = size_gb(request.capacity_range)
            volume = self._volume(volume_id)
            if volume is None:
                raise Refused(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} does not exist")
            size = volume.size_gb
            if wanted > size:
                grown = answered(self.api.resize_volume(volume_id, wanted).resize_volume).volume
                size = grown.size_gb if grown is not None else wanted
            block = request.HasField("volume_capability") and request.volume_capability.HasField("block")
            return csi.ControllerExpandVolumeResponse(
                capacity_bytes=size * GIB, node_expansion_required=not block
            )

        return self._answer(context, f"growing volume {request.volume_id}", expand)

    # ------------------------------------------------------------------------------------------ snapshots

    def CreateSnapshot(
        self, request: csi.CreateSnapshotRequest, context: grpc.ServicerContext
    ) -> csi.CreateSnapshotResponse:
        doing = f"taking snapshot {request.name} of volume {request.source_volume_id}"
        return self._answer(context, doing, lambda: self.snapshots.create(request))

    def DeleteSnapshot(
        self, request: csi.DeleteSnapshotRequest, context: grpc.ServicerContext
    ) -> csi.DeleteSnapshotResponse:
        doing = f"deleting snapshot {request.snapshot_id}"
        return self._answer(context, doing, lambda: self.snapshots.delete(request))

    def ListSnapshots(
        self, request: csi.ListSnapshotsRequest, context: grpc.ServicerContext
    ) -> csi.ListSnapshotsResponse:
        return self._answer(context, "listing snapshots", lambda: self.snapshots.list(request))

    # ------------------------------------------------------------------------------------------ the rest

    def ValidateVolumeCapabilities(
        self, request: csi.ValidateVolumeCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi.ValidateVolumeCapabilitiesResponse:
        def validate() -> csi.ValidateVolumeCapabilitiesResponse:
            volume_id = required(request.volume_id, "volume_id")
            if not request.volume_capabilities:
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "volume_capabilities are required")
            if self._volume(volume_id) is None:
                raise Refused(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} does not exist")
            try:
                for capability in request.volume_capabilities:
                    checked_capability(capability)
            except Refused as refused:
                if refused.code != grpc.StatusCode.INVALID_ARGUMENT:
                    raise
                return csi.ValidateVolumeCapabilitiesResponse(message=refused.message)
            confirmed = csi.ValidateVolumeCapabilitiesResponse.Confirmed(
                volume_context=request.volume_context,
                volume_capabilities=request.volume_capabilities,
                parameters=request.parameters,
            )
            return csi.ValidateVolumeCapabilitiesResponse(confirmed=confirmed)

        return self._answer(context, f"validating volume {request.volume_id}", validate)

    def ControllerGetCapabilities(
        self, request: csi.ControllerGetCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi.ControllerGetCapabilitiesResponse:
        return csi.ControllerGetCapabilitiesResponse(capabilities=list(_capabilities(CAPABILITIES)))


_RPC = csi.ControllerServiceCapability.RPC
CAPABILITIES: tuple[csi.ControllerServiceCapability.RPC.Type, ...] = (
    _RPC.CREATE_DELETE_VOLUME,
    _RPC.PUBLISH_UNPUBLISH_VOLUME,
    _RPC.EXPAND_VOLUME,
    _RPC.CREATE_DELETE_SNAPSHOT,
    _RPC.LIST_SNAPSHOTS,
)


def _capabilities(
    kinds: Iterable[csi.ControllerServiceCapability.RPC.Type],
) -> Iterable[csi.ControllerServiceCapability]:
    for kind in kinds:
        yield csi.ControllerServiceCapability(rpc=_RPC(type=kind))
