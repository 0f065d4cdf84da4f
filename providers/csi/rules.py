"""What the CSI driver's node plugin and controller share: the spec's refusals (``Refused``, answered with
its code), the checks of a request's fields and capabilities, and the keys both sides agree on."""

from __future__ import annotations

from typing import NoReturn

import grpc

from providers.csi.mounts import FILE_SYSTEMS
from providers.csi.proto import csi_pb2 as csi

# The publish context's key of a volume's disk serial (ControllerPublishVolume answers it).
SERIAL_KEY = "serial"
DEFAULT_FS = "ext4"
# The node label of a worker's zone (the cloud controller's topology.kubernetes.io/zone is the same).
ZONE_KEY = "topology.kubernetes.io/zone"

# Access modes a disk attached to one VM can serve.
SINGLE_NODE = frozenset(
    {
        csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER,
        csi.VolumeCapability.AccessMode.SINGLE_NODE_READER_ONLY,
        csi.VolumeCapability.AccessMode.SINGLE_NODE_SINGLE_WRITER,
        csi.VolumeCapability.AccessMode.SINGLE_NODE_MULTI_WRITER,
    }
)


class Refused(Exception):
    """A call answered with a CSI error code (the spec's, for the condition)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> NoReturn:
    context.abort(code, message)
    raise AssertionError("abort returned")  # grpc's abort raises


def required(value: str, name: str) -> str:
    if not value:
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"{name} is required")
    return value


def checked_capability(capability: csi.VolumeCapability, name: str = "volume_capability") -> str | None:
    """The file system a capability asks for (None: a raw block volume); refused when the driver cannot
    serve it (a mode of several nodes, an unknown file system)."""
    if not capability.HasField("access_mode") or not capability.WhichOneof("access_type"):
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"{name} needs an access mode and an access type")
    if capability.access_mode.mode not in SINGLE_NODE:
        mode = csi.VolumeCapability.AccessMode.Mode.Name(capability.access_mode.mode)
        raise Refused(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{name}: a disk attaches to one node; access mode {mode} is not served",
        )
    if capability.HasField("block"):
        return None
    fs_type = capability.mount.fs_type or DEFAULT_FS
    if fs_type not in FILE_SYSTEMS:
        raise Refused(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{name}: file system {fs_type!r} is not served (one of {', '.join(FILE_SYSTEMS)})",
        )
    return fs_type
