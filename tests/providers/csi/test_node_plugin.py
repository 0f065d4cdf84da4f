"""The CSI node plugin as kubelet meets it: ``python -m providers.csi node`` serving on a Unix socket, called
over gRPC, staging, publishing and growing real disks (loop devices, found by serial as QEMU names them)
with real mkfs, mount and resize2fs/xfs_growfs. The plugin runs in a mount namespace of its own, so its
mounts never reach the host; the tests look at them through its /proc and ``nsenter``.

Root (loop devices, mounts), as `make test` runs. Each disk is detached afterwards, on failure too."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import grpc
import pytest

from providers.csi import mounts
from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc

ROOT = Path(__file__).resolve().parents[3]
MIB = 1024 * 1024
MODE = csi.VolumeCapability.AccessMode


@dataclass
class Plugin:
    process: subprocess.Popen[bytes]
    node: csi_pb2_grpc.NodeStub
    identity: csi_pb2_grpc.IdentityStub
    by_id: Path
    scratch: Path

    def inside(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """A command in the plugin's mount namespace (where its mounts are)."""
        return subprocess.run(
            ["nsenter", "-t", str(self.process.pid), "-m", "--", *argv],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def mounted(self, path: Path) -> mounts.Mount | None:
        found = [
            m for m in mounts.mounts(Path(f"/proc/{self.process.pid}/mountinfo")) if m.point == str(path)
        ]
        return found[-1] if found else None


@dataclass
class Disk:
    volume_id: str
    serial: str
    image: Path
    device: str

    def grow(self, size: int) -> None:
        """The disk grows (as a resize in Proxmox grows it under a running VM)."""
        os.truncate(self.image, size)
        subprocess.run(["losetup", "-c", self.device], check=True)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plugin]:
    if os.geteuid() != 0:
        pytest.fail("the CSI node plugin's tests run as root (loop devices, mounts), as `make test` does")
    scratch = tmp_path_factory.mktemp("csi")
    by_id = scratch / "by-id"
    by_id.mkdir()
    socket = scratch / "csi.sock"
    argv = [sys.executable, "-m", "providers.csi", "node", "--endpoint", f"unix://{socket}"]
    argv += ["--node-id", "web-workers-7x2k", "--zone", "zone1", "--devices", str(by_id)]
    log = (scratch / "plugin.log").open("wb")
    process = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "--", *argv], cwd=ROOT, stdout=log, stderr=log
    )
    channel = grpc.insecure_channel(f"unix://{socket}")
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
        yield Plugin(
            process, csi_pb2_grpc.NodeStub(channel), csi_pb2_grpc.IdentityStub(channel), by_id, scratch
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        channel.close()
        if process.poll() is None:
            process.kill()
            process.wait(5)
        log.close()


@pytest.fixture
def disk(plugin: Plugin, tmp_path: Path) -> Iterator[Callable[..., Disk]]:
    """Disks attached to the node: each a loop device named by its serial; detached afterwards."""
    made: list[Disk] = []

    def attach(size: int = 64 * MIB, *, prefix: str = "virtio-") -> Disk:
        volume_id = f"vol-{secrets.token_hex(4)}"
        image = tmp_path / f"{volume_id}.img"
        image.touch()
        os.truncate(image, size)  # sparse
        device = subprocess.run(
            ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=True
        ).stdout.strip()
        attached = Disk(volume_id, volume_id, image, device)
        made.append(attached)
        (plugin.by_id / f"{prefix}{volume_id}").symlink_to(device)
        return attached

    yield attach
    for attached in made:
        subprocess.run(["losetup", "-d", attached.device], capture_output=True, check=False)


def mount_capability(
    fs_type: str = "", mode: csi.VolumeCapability.AccessMode.Mode = MODE.SINGLE_NODE_WRITER
) -> csi.VolumeCapability:
    return csi.VolumeCapability(
        mount=csi.VolumeCapability.MountVolume(fs_type=fs_type), access_mode=MODE(mode=mode)
    )


def block_capability() -> csi.VolumeCapability:
    return csi.VolumeCapability(
        block=csi.VolumeCapability.BlockVolume(), access_mode=MODE(mode=MODE.SINGLE_NODE_WRITER)
    )


def stage(plugin: Plugin, disk: Disk, staging: Path, fs_type: str = "") -> None:
    plugin.node.NodeStageVolume(
        csi.NodeStageVolumeRequest(
            volume_id=disk.volume_id,
            staging_target_path=str(staging),
            volume_capability=mount_capability(fs_type),
        )
    )


def publish(plugin: Plugin, disk: Disk, staging: Path, target: Path, *, readonly: bool = False) -> None:
    plugin.node.NodePublishVolume(
        csi.NodePublishVolumeRequest(
            volume_id=disk.volume_id,
            staging_target_path=str(staging),
            target_path=str(target),
            volume_capability=mount_capability(),
            readonly=readonly,
        )
    )


def refused(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


# ---------------------------------------------------------------------------------------- identity, node


def test_it_names_itself_and_says_what_it_serves(plugin: Plugin) -> None:
    info = plugin.identity.GetPluginInfo(csi.GetPluginInfoRequest())
    assert info.name == "csi.flexplane.io"
    assert info.vendor_version
    assert plugin.identity.Probe(csi.ProbeRequest()).ready.value
    capabilities = plugin.identity.GetPluginCapabilities(csi.GetPluginCapabilitiesRequest()).capabilities
    services = {c.service.type for c in capabilities if c.HasField("service")}
    assert services == {csi.PluginCapability.Service.VOLUME_ACCESSIBILITY_CONSTRAINTS}  # no controller here
    assert [c.volume_expansion.type for c in capabilities if c.HasField("volume_expansion")] == [
        csi.PluginCapability.VolumeExpansion.ONLINE
    ]

    node = plugin.node.NodeGetInfo(csi.NodeGetInfoRequest())
    assert node.node_id == "web-workers-7x2k"
    assert dict(node.accessible_topology.segments) == {"topology.kubernetes.io/zone": "zone1"}
    assert node.max_volumes_per_node == 30  # Proxmox's 31 SCSI slots but the boot disk's
    rpc = csi.NodeServiceCapability.RPC
    kinds = {
        c.rpc.type for c in plugin.node.NodeGetCapabilities(csi.NodeGetCapabilitiesRequest()).capabilities
    }
    assert kinds == {rpc.STAGE_UNSTAGE_VOLUME, rpc.GET_VOLUME_STATS, rpc.EXPAND_VOLUME}


# ------------------------------------------------------------------------------------- the volume's life


def test_a_blank_disk_is_formatted_once_staged_published_read_write_and_read_only_and_taken_down(
    plugin: Plugin, disk: Callable[..., Disk], tmp_path: Path
) -> None:
    volume = disk()
    staging, pod, reader = tmp_path / "staging", tmp_path / "pod" / "mount", tmp_path / "reader" / "mount"

    stage(plugin, volume, staging)
    stage(plugin, volume, staging)  # kubelet's retry: nothing more happens
    assert mounts.fs_type_of(volume.device) == "ext4"
    staged = plugin.mounted(staging)
    assert staged is not None
    assert staged.device == mounts.block_device(volume.device)
    assert [m.point for m in mounts.mounts(Path(f"/proc/{plugin.process.pid}/mountinfo"))].count(
        str(staging)
    ) == 1
    assert mounts.mount_at(str(staging)) is None  # the plugin's mounts stay in its namespace

    publish(plugin, volume, staging, pod)
    publish(plugin, volume, staging, pod)
    publish(plugin, volume, staging, reader, readonly=True)
    assert plugin.inside("sh", "-c", f"echo kept > {pod}/data").returncode == 0
    assert plugin.inside("cat", f"{reader}/data").stdout == "kept\n"
    denied = plugin.inside("sh", "-c", f"echo no > {reader}/other")
    assert denied.returncode != 0
    assert "Read-only file system" in denied.stderr

    for target in (pod, reader):
        request = csi.NodeUnpublishVolumeRequest(volume_id=volume.volume_id, target_path=str(target))
        plugin.node.NodeUnpublishVolume(request)
        plugin.node.NodeUnpublishVolume(request)  # idempotent
        assert plugin.mounted(target) is None
        assert not target.exists()  # what publish made is gone
    unstage = csi.NodeUnstageVolumeRequest(volume_id=volume.volume_id, staging_target_path=str(staging))
    plugin.node.NodeUnstageVolume(unstage)
    plugin.node.NodeUnstageVolume(unstage)
    assert plugin.mounted(staging) is None

    # Staged again (another pod, later): the file system is kept, not made anew.
    stage(plugin, volume, staging)
    publish(plugin, volume, staging, pod)
    assert plugin.inside("cat", f"{pod}/data").stdout == "kept\n"
    plugin.node.NodeUnpublishVolume(
        csi.NodeUnpublishVolumeRequest(volume_id=volume.volume_id, target_path=str(pod))
    )
    plugin.node.NodeUnstageVolume(unstage)


def test_an_xfs_volume_is_made_and_grown_online_with_the_usage_it_reports(
    plugin: Plugin, disk: Callable[..., Disk], tmp_path: Path
) -> None:
    volume = disk(320 * MIB, prefix="scsi-0QEMU_QEMU_HARDDISK_")  # virtio-scsi's name for the serial
    staging = tmp_path / "staging"
    stage(plugin, volume, staging, "xfs")
    assert mounts.fs_type_of(volume.device) == "xfs"
    stats = csi.NodeGetVolumeStatsRequest(volume_id=volume.volume_id, volume_path=str(staging))
    before = {u.unit: u for u in plugin.node.NodeGetVolumeStats(stats).usage}
    assert 0 < before[csi.VolumeUsage.BYTES].total <= 320 * MIB
    assert before[csi.VolumeUsage.INODES].total > 0

    volume.grow(640 * MIB)
    grown = plugin.node.NodeExpandVolume(
        csi.NodeExpandVolumeRequest(
            volume_id=volume.volume_id,
            volume_path=str(staging),
            capacity_range=csi.CapacityRange(required_bytes=640 * MIB),
        )
    )
    assert grown.capacity_bytes == 640 * MIB
    after = {u.unit: u for u in plugin.node.NodeGetVolumeStats(stats).usage}
    assert after[csi.VolumeUsage.BYTES].total > before[csi.VolumeUsage.BYTES].total + 250 * MIB
    plugin.node.NodeUnstageVolume(
        csi.NodeUnstageVolumeRequest(volume_id=volume.volume_id, staging_target_path=str(staging))
    )


def test_a_disk_grown_while_detached_is_grown_when_staged_again(
    plugin: Plugin, disk: Callable[..., Disk], tmp_path: Path
) -> None:
    volume = disk(64 * MIB)
    staging = tmp_path / "staging"
    unstage = csi.NodeUnstageVolumeRequest(volume_id=volume.volume_id, staging_target_path=str(staging))
    stats = csi.NodeGetVolumeStatsRequest(volume_id=volume.volume_id, volume_path=str(staging))
    stage(plugin, volume, staging)
    small = plugin.node.NodeGetVolumeStats(stats).usage[0].total
    plugin.node.NodeUnstageVolume(unstage)

    volume.grow(256 * MIB)
    stage(plugin, volume, staging)

    assert plugin.node.NodeGetVolumeStats(stats).usage[0].total > small + 150 * MIB
    plugin.node.NodeUnstageVolume(unstage)


def test_a_raw_block_volume_is_the_disk_itself_at_the_pods_path(
    plugin: Plugin, disk: Callable[..., Disk], tmp_path: Path
) -> None:
    volume = disk(96 * MIB)
    target = tmp_path / "pod" / "device"
    request = csi.NodePublishVolumeRequest(
        volume_id=volume.volume_id, target_path=str(target), volume_capability=block_capability()
    )
    plugin.node.NodeStageVolume(
        csi.NodeStageVolumeRequest(
            volume_id=volume.volume_id,
            staging_target_path=str(tmp_path / "staging"),
            volume_capability=block_capability(),
        )
    )
    plugin.node.NodePublishVolume(request)
    plugin.node.NodePublishVolume(request)

    assert plugin.inside("blockdev", "--getsize64", str(target)).stdout.strip() == str(96 * MIB)
    assert mounts.fs_type_of(volume.device) is None  # a block volume is never formatted
    stats = csi.NodeGetVolumeStatsRequest(volume_id=volume.volume_id, volume_path=str(target))
    assert [(u.total, u.unit) for u in plugin.node.NodeGetVolumeStats(stats).usage] == [
        (96 * MIB, csi.VolumeUsage.BYTES)
    ]
    plugin.node.NodeUnpublishVolume(
        csi.NodeUnpublishVolumeRequest(volume_id=volume.volume_id, target_path=str(target))
    )
    assert not target.exists()


def test_concurrent_stages_of_one_volume_format_and_mount_it_once(
    plugin: Plugin, disk: Callable[..., Disk], tmp_path: Path
) -> None:
    """kubelet retries a call that timed out while the first still runs: the volume's calls are taken
    one at a time, so a blank disk is formatted once and mounted once."""
    volume = disk()
    staging = tmp_path / "staging"
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda _: stage(plugin, volume, staging), range(4)))

    points = [m.point for m in mounts.mounts(Path(f"/proc/{plugin.process.pid}/mountinfo"))]
    assert points.count(str(staging)) == 1
    assert mounts.fs_type_of(volume.device) == "ext4"
    plugin.node.NodeUnstageVolume(
        csi.NodeUnstageVolumeRequest(volume_id=volume.volume_id, staging_target_path=str(staging))
    )
    assert plugin.mounted(staging) is None


# ---------------------------------------------------------------------------------------------- refusals


def test_bad_requests_get_the_codes_the_spec_names_and_change_nothing(
    plugin: Plugin, disk: Callable[..., Disk], tmp_path: Path
) -> None:
    volume = disk()
    staging = tmp_path / "staging"
    node = plugin.node

    def stage_request(**changes: object) -> csi.NodeStageVolumeRequest:
        fields: dict[str, object] = {
            "volume_id": volume.volume_id,
            "staging_target_path": str(staging),
            "volume_capability": mount_capability(),
        }
        fields.update(changes)
        return csi.NodeStageVolumeRequest(**fields)  # type: ignore[arg-type]

    cases = [
        (stage_request(volume_id=""), grpc.StatusCode.INVALID_ARGUMENT, "volume_id is required"),
        (
            stage_request(staging_target_path="relative/path"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "absolute path",
        ),
        (
            stage_request(volume_capability=csi.VolumeCapability()),
            grpc.StatusCode.INVALID_ARGUMENT,
            "access mode",
        ),
        (
            stage_request(volume_capability=mount_capability(mode=MODE.MULTI_NODE_MULTI_WRITER)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "MULTI_NODE_MULTI_WRITER is not served",
        ),
        (
            stage_request(volume_capability=mount_capability("btrfs")),
            grpc.StatusCode.INVALID_ARGUMENT,
            "'btrfs'",
        ),
        (stage_request(volume_id="vol-notattached"), grpc.StatusCode.NOT_FOUND, "not attached to this node"),
    ]
    for request, code, says in cases:
        error = refused(partial(node.NodeStageVolume, request))
        assert (error.code(), says in (error.details() or "")) == (code, True), error.details()
    assert plugin.mounted(staging) is None
    assert mounts.fs_type_of(volume.device) is None  # nothing was formatted

    # Published before it was staged: FAILED_PRECONDITION.
    error = refused(lambda: publish(plugin, volume, staging, tmp_path / "pod"))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION

    # A disk with another file system than asked: refused, never formatted again.
    subprocess.run(["mkfs.ext4", "-q", volume.device], check=True)
    error = refused(lambda: stage(plugin, volume, staging, "xfs"))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "holds ext4" in (error.details() or "")
    assert mounts.fs_type_of(volume.device) == "ext4"

    # The same pod path published again with another read-only flag: ALREADY_EXISTS.
    stage(plugin, volume, staging)
    publish(plugin, volume, staging, tmp_path / "pod")
    error = refused(lambda: publish(plugin, volume, staging, tmp_path / "pod", readonly=True))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS

    # Usage and growth of a path where nothing is mounted: NOT_FOUND.
    nowhere = str(tmp_path / "nowhere")
    stats = csi.NodeGetVolumeStatsRequest(volume_id=volume.volume_id, volume_path=nowhere)
    assert refused(lambda: node.NodeGetVolumeStats(stats)).code() == grpc.StatusCode.NOT_FOUND
    expand = csi.NodeExpandVolumeRequest(volume_id=volume.volume_id, volume_path=nowhere)
    assert refused(lambda: node.NodeExpandVolume(expand)).code() == grpc.StatusCode.NOT_FOUND

    # Grown past what the disk holds: OUT_OF_RANGE, until the disk has grown.
    too_big = csi.NodeExpandVolumeRequest(
        volume_id=volume.volume_id,
        volume_path=str(staging),
        capacity_range=csi.CapacityRange(required_bytes=1 << 40),
    )
    assert refused(lambda: node.NodeExpandVolume(too_big)).code() == grpc.StatusCode.OUT_OF_RANGE

    node.NodeUnpublishVolume(
        csi.NodeUnpublishVolumeRequest(volume_id=volume.volume_id, target_path=str(tmp_path / "pod"))
    )
    node.NodeUnstageVolume(
        csi.NodeUnstageVolumeRequest(volume_id=volume.volume_id, staging_target_path=str(staging))
    )


# The required fields of each call, as the CSI sanity suite's node cases send requests without them: each
# missing one is INVALID_ARGUMENT (a publish without its staging path is the spec's FAILED_PRECONDITION).
WITHOUT = [
    ("NodeStageVolume", "volume_id", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeStageVolume", "staging_target_path", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeStageVolume", "volume_capability", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeUnstageVolume", "volume_id", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeUnstageVolume", "staging_target_path", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodePublishVolume", "volume_id", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodePublishVolume", "target_path", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodePublishVolume", "volume_capability", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodePublishVolume", "staging_target_path", grpc.StatusCode.FAILED_PRECONDITION),
    ("NodeUnpublishVolume", "volume_id", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeUnpublishVolume", "target_path", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeGetVolumeStats", "volume_id", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeGetVolumeStats", "volume_path", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeExpandVolume", "volume_id", grpc.StatusCode.INVALID_ARGUMENT),
    ("NodeExpandVolume", "volume_path", grpc.StatusCode.INVALID_ARGUMENT),
]


def complete(call: str, tmp_path: Path) -> dict[str, object]:
    """Every field the call needs, each present."""
    fields: dict[str, object] = {"volume_id": "vol-sanity"}
    if call in ("NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume"):
        fields["staging_target_path"] = str(tmp_path / "staging")
    if call in ("NodeStageVolume", "NodePublishVolume"):
        fields["volume_capability"] = mount_capability()
    if call in ("NodePublishVolume", "NodeUnpublishVolume"):
        fields["target_path"] = str(tmp_path / "target")
    if call in ("NodeGetVolumeStats", "NodeExpandVolume"):
        fields["volume_path"] = str(tmp_path / "target")
    return fields


@pytest.mark.parametrize(("call", "missing", "code"), WITHOUT, ids=lambda v: getattr(v, "name", str(v)))
def test_a_call_without_a_required_field_is_refused_naming_it(
    plugin: Plugin, tmp_path: Path, call: str, missing: str, code: grpc.StatusCode
) -> None:
    fields = complete(call, tmp_path)
    del fields[missing]
    request = getattr(csi, f"{call}Request")(**fields)

    error = refused(partial(getattr(plugin.node, call), request))

    assert error.code() == code
    assert missing in (error.details() or "")
