"""What the CSI driver's node plugin and controller share: the spec's refusals (``Refused``, answered with
its code), the checks of a request's fields and capabilities, and the keys both sides agree on."""

from __future__ import annotations

import hashlib
import math
import re
from typing import NoReturn

import grpc

from providers.csi.mounts import FILE_SYSTEMS
from providers.csi.proto import csi_pb2 as csi

GIB = 1024**3
# Parameters the sidecars add to every create (csi.storage.k8s.io/pv/name, .../volumesnapshot/name, ...).
SIDECAR_PARAMETER = re.compile(r"csi\.storage\.k8s\.io/.+")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
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


def api_name(name: str) -> str:
    """The VDC's name for a CSI volume's or snapshot's name (the API's names are DNS labels): the name itself
    when it is one (the sidecars' ``pvc-<uuid>``, ``snapshot-<uuid>``), else ``csi-`` and 40 hex digits of
    its SHA-256."""
    if _LABEL.fullmatch(name):
        return name
    return "csi-" + hashlib.sha256(name.encode()).hexdigest()[:40]


def size_gb(capacity: csi.CapacityRange, smallest: int = 1) -> int:
    """The smallest whole GiB holding ``required_bytes``, at least ``smallest`` (a storage profile's least, a
    snapshot's size), within ``limit_bytes``; OUT_OF_RANGE where there is none."""
    wanted = max(smallest, math.ceil(capacity.required_bytes / GIB))
    if capacity.limit_bytes and wanted * GIB > capacity.limit_bytes:
        raise Refused(
            grpc.StatusCode.OUT_OF_RANGE,
            f"volumes are whole GiB, of at least {smallest}: {wanted} GiB would pass the limit of "
            f"{capacity.limit_bytes} bytes",
        )
    return wanted


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
