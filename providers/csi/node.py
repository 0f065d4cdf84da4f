"""The CSI driver's node plugin, one per worker (a DaemonSet): it finds a volume's disk, which flex.plane
attached to the worker's VM, by the serial the attach gave it, makes its file system on first use, mounts
it where kubelet asks, and grows the file system when the volume grew.

As the CSI spec's Node service: ``NodeStageVolume`` mounts the disk at the volume's staging path (making
an ext4 or xfs file system on a blank disk; a disk grown since it was last mounted is grown too),
``NodePublishVolume`` bind-mounts it into a pod's path (read-only when asked), and the un- calls undo
them; ``NodeExpandVolume`` grows the file system to the disk, ``NodeGetVolumeStats`` says its usage. A
raw block volume is the disk itself, bind-mounted onto a file at the pod's path. Every call is idempotent
(kubelet retries), and one volume's calls are taken one at a time.

The disk: QEMU shows a disk's serial in its by-id name, ``virtio-<serial>`` (virtio-blk, up to 20
characters) or ``scsi-0QEMU_QEMU_HARDDISK_<serial>`` (virtio-scsi). The serial is the publish context's
``serial`` (what the controller's ControllerPublishVolume answers), else the volume id's first 20
characters.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import grpc

from providers.csi import mounts
from providers.csi.mounts import ToolFailed
from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc
from providers.csi.rules import SERIAL_KEY, ZONE_KEY, Refused, abort, checked_capability, required

log = logging.getLogger("providers.csi.node")

SERIAL_LENGTH = 20  # what virtio-blk keeps of a serial
BY_ID = Path("/dev/disk/by-id")
BY_ID_PREFIXES = ("virtio-", "scsi-0QEMU_QEMU_HARDDISK_")
# Proxmox's SCSI slots (scsi0 to scsi30: qemu-server's 31), the boot disk taking one.
SCSI_SLOTS = 31

Reply = TypeVar("Reply")


@dataclass
class Devices:
    """Where a worker's disks are found by their serial (``/dev/disk/by-id``)."""

    by_id: Path = BY_ID

    def find(self, serial: str) -> str | None:
        """The device of the disk with ``serial`` (its real path), or None when none is attached."""
        for prefix in BY_ID_PREFIXES:
            link = self.by_id / f"{prefix}{serial}"
            if link.exists():
                return os.path.realpath(link)
        return None


def serial_of(volume_id: str, publish_context: dict[str, str]) -> str:
    return publish_context.get(SERIAL_KEY) or volume_id[:SERIAL_LENGTH]


def _absolute(value: str, name: str) -> str:
    if not Path(required(value, name)).is_absolute():
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"{name} must be an absolute path, not {value!r}")
    return value


def _mounted(volume_id: str, volume_path: str) -> tuple[str, mounts.Mount]:
    """A volume's path where it is staged or published, and its mount there; NOT_FOUND where none is."""
    required(volume_id, "volume_id")
    path = _absolute(volume_path, "volume_path")
    there = mounts.mount_at(path)
    if there is None:
        raise Refused(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} is not mounted at {path}")
    return path, there


@dataclass
class NodeService(csi_pb2_grpc.NodeServicer):
    """The Node service of one worker."""

    node_id: str
    zone: str = ""
    devices: Devices = field(default_factory=Devices)
    _locks: dict[str, threading.Lock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def _one_at_a_time(self, volume_id: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(volume_id, threading.Lock())
        with lock:
            yield

    def _answer(self, context: grpc.ServicerContext, volume_id: str, call: Callable[[], Reply]) -> Reply:
        """Run one call for a volume, its refusals and tools' failures answered as CSI errors."""
        try:
            with self._one_at_a_time(volume_id):
                return call()
        except Refused as refused:
            abort(context, refused.code, refused.message)
        except ToolFailed as exc:
            log.error("volume %s: %s", volume_id, exc)
            abort(context, grpc.StatusCode.INTERNAL, str(exc))

    # ------------------------------------------------------------------------------------------ stage

    def NodeStageVolume(
        self, request: csi.NodeStageVolumeRequest, context: grpc.ServicerContext
    ) -> csi.NodeStageVolumeResponse:
        volume_id = request.volume_id
        return self._answer(context, volume_id, lambda: self._stage(request))

    def _stage(self, request: csi.NodeStageVolumeRequest) -> csi.NodeStageVolumeResponse:
        volume_id = required(request.volume_id, "volume_id")
        staging = _absolute(request.staging_target_path, "staging_target_path")
        fs_type = checked_capability(request.volume_capability)
        device = self._device(volume_id, dict(request.publish_context))
        if fs_type is None:  # a raw block volume: nothing to stage, publish binds the disk itself
            return csi.NodeStageVolumeResponse()
        there = mounts.mount_at(staging)
        if there is not None:
            if there.device != mounts.block_device(device):
                raise Refused(
                    grpc.StatusCode.ALREADY_EXISTS,
                    f"{staging} holds another device ({there.source}) than volume {volume_id}'s",
                )
            return csi.NodeStageVolumeResponse()
        found = mounts.fs_type_of(device)
        if found is None:
            log.info("volume %s: making %s on %s", volume_id, fs_type, device)
            mounts.make_fs(device, fs_type)
        elif found != fs_type:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"volume {volume_id} holds {found}, not the {fs_type} asked for: it is not formatted again",
            )
        else:  # grown while it was detached: the file system follows (ext4 before it is mounted)
            mounts.grow_unmounted(device, fs_type)
        Path(staging).mkdir(parents=True, exist_ok=True)
        mounts.mount(device, staging, fs_type, list(request.volume_capability.mount.mount_flags))
        if fs_type == "xfs":
            mounts.grow_mounted(device, staging, fs_type)
        return csi.NodeStageVolumeResponse()

    def NodeUnstageVolume(
        self, request: csi.NodeUnstageVolumeRequest, context: grpc.ServicerContext
    ) -> csi.NodeUnstageVolumeResponse:
        return self._answer(context, request.volume_id, lambda: self._unstage(request))

    def _unstage(self, request: csi.NodeUnstageVolumeRequest) -> csi.NodeUnstageVolumeResponse:
        required(request.volume_id, "volume_id")
        mounts.unmount_all(_absolute(request.staging_target_path, "staging_target_path"))
        return csi.NodeUnstageVolumeResponse()

    # ---------------------------------------------------------------------------------------- publish

    def NodePublishVolume(
        self, request: csi.NodePublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi.NodePublishVolumeResponse:
        return self._answer(context, request.volume_id, lambda: self._publish(request))

    def _publish(self, request: csi.NodePublishVolumeRequest) -> csi.NodePublishVolumeResponse:
        volume_id = required(request.volume_id, "volume_id")
        target = _absolute(request.target_path, "target_path")
        if checked_capability(request.volume_capability) is None:
            self._publish_block(volume_id, dict(request.publish_context), target, request.readonly)
        else:
            if not request.staging_target_path:  # the spec's code: the node stages, the CO skipped it
                said = f"volume {volume_id}: staging_target_path is not set, and this plugin stages volumes"
                raise Refused(grpc.StatusCode.FAILED_PRECONDITION, said)
            staging = _absolute(request.staging_target_path, "staging_target_path")
            self._publish_mount(volume_id, staging, target, request.readonly)
        return csi.NodePublishVolumeResponse()

    def _publish_block(self, volume_id: str, context: dict[str, str], target: str, readonly: bool) -> None:
        """The disk itself, bind-mounted onto a file at ``target``."""
        device = self._device(volume_id, context)
        if mounts.mount_at(target) is not None:
            if mounts.block_device(target) != mounts.block_device(device):
                raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"{target} is another volume's device")
            return
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).touch()
        mounts.bind(device, target, read_only=readonly)

    def _publish_mount(self, volume_id: str, staging: str, target: str, readonly: bool) -> None:
        """The staged file system, bind-mounted at ``target``."""
        staged = mounts.mount_at(staging)
        if staged is None:
            raise Refused(
                grpc.StatusCode.FAILED_PRECONDITION, f"volume {volume_id} is not staged at {staging}"
            )
        there = mounts.mount_at(target)
        if there is not None:
            if there.device != staged.device or there.read_only != readonly:
                raise Refused(
                    grpc.StatusCode.ALREADY_EXISTS,
                    f"{target} is published already, as another volume or with another read-only flag",
                )
            return
        Path(target).mkdir(parents=True, exist_ok=True)
        mounts.bind(staging, target, read_only=readonly)

    def NodeUnpublishVolume(
        self, request: csi.NodeUnpublishVolumeRequest, context: grpc.ServicerContext
    ) -> csi.NodeUnpublishVolumeResponse:
        return self._answer(context, request.volume_id, lambda: self._unpublish(request))

    def _unpublish(self, request: csi.NodeUnpublishVolumeRequest) -> csi.NodeUnpublishVolumeResponse:
        required(request.volume_id, "volume_id")
        target = Path(_absolute(request.target_path, "target_path"))
        mounts.unmount_all(str(target))
        if target.is_dir():  # what publish made: the SP deletes it (the spec)
            target.rmdir()
        elif target.exists():
            target.unlink()
        return csi.NodeUnpublishVolumeResponse()

    # ------------------------------------------------------------------------------ usage and growth

    def NodeGetVolumeStats(
        self, request: csi.NodeGetVolumeStatsRequest, context: grpc.ServicerContext
    ) -> csi.NodeGetVolumeStatsResponse:
        return self._answer(context, request.volume_id, lambda: self._stats(request))

    def _stats(self, request: csi.NodeGetVolumeStatsRequest) -> csi.NodeGetVolumeStatsResponse:
        path, _ = _mounted(request.volume_id, request.volume_path)
        number = mounts.block_device(path)
        if number is not None:  # a raw block volume: its size only
            size = mounts.size_of_number(number)
            unit = csi.VolumeUsage.BYTES
            return csi.NodeGetVolumeStatsResponse(usage=[csi.VolumeUsage(total=size, unit=unit)])
        fs = os.statvfs(path)
        return csi.NodeGetVolumeStatsResponse(
            usage=[
                csi.VolumeUsage(
                    total=fs.f_blocks * fs.f_frsize,
                    available=fs.f_bavail * fs.f_frsize,
                    used=(fs.f_blocks - fs.f_bfree) * fs.f_frsize,
                    unit=csi.VolumeUsage.BYTES,
                ),
                csi.VolumeUsage(
                    total=fs.f_files,
                    available=fs.f_favail,
                    used=fs.f_files - fs.f_ffree,
                    unit=csi.VolumeUsage.INODES,
                ),
            ]
        )

    def NodeExpandVolume(
        self, request: csi.NodeExpandVolumeRequest, context: grpc.ServicerContext
    ) -> csi.NodeExpandVolumeResponse:
        return self._answer(context, request.volume_id, lambda: self._expand(request))

    def _expand(self, request: csi.NodeExpandVolumeRequest) -> csi.NodeExpandVolumeResponse:
        volume_id = request.volume_id
        path, there = _mounted(volume_id, request.volume_path)
        number = mounts.block_device(path)
        size = mounts.size_of_number(number) if number is not None else mounts.size_bytes(there.source)
        wanted = request.capacity_range.required_bytes
        if wanted and size < wanted:
            raise Refused(
                grpc.StatusCode.OUT_OF_RANGE,
                f"volume {volume_id}'s disk is {size} bytes, less than the {wanted} asked for: "
                "the disk has not grown yet",
            )
        if number is None:  # a raw block volume has no file system to grow
            mounts.grow_mounted(there.source, path, there.fs_type)
        return csi.NodeExpandVolumeResponse(capacity_bytes=size)

    # ----------------------------------------------------------------------------------- the node

    def NodeGetCapabilities(
        self, request: csi.NodeGetCapabilitiesRequest, context: grpc.ServicerContext
    ) -> csi.NodeGetCapabilitiesResponse:
        rpc = csi.NodeServiceCapability.RPC
        kinds = (rpc.STAGE_UNSTAGE_VOLUME, rpc.GET_VOLUME_STATS, rpc.EXPAND_VOLUME)
        return csi.NodeGetCapabilitiesResponse(
            capabilities=[csi.NodeServiceCapability(rpc=rpc(type=kind)) for kind in kinds]
        )

    def NodeGetInfo(
        self, request: csi.NodeGetInfoRequest, context: grpc.ServicerContext
    ) -> csi.NodeGetInfoResponse:
        topology = csi.Topology(segments={ZONE_KEY: self.zone}) if self.zone else None
        return csi.NodeGetInfoResponse(
            node_id=self.node_id, max_volumes_per_node=SCSI_SLOTS - 1, accessible_topology=topology
        )

    # --------------------------------------------------------------------------------------- helpers

    def _device(self, volume_id: str, publish_context: dict[str, str]) -> str:
        serial = serial_of(volume_id, publish_context)
        device = self.devices.find(serial)
        if device is None:
            raise Refused(
                grpc.StatusCode.NOT_FOUND,
                f"volume {volume_id}'s disk (serial {serial}) is not attached to this node ({self.node_id})",
            )
        return device
