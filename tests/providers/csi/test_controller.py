"""The CSI driver's controller over its gRPC surface (a real server on a Unix socket, called as the sidecars
call it), against flex.plane's API in this process on the light world, as a service account of a scratch
VDC (USER there only): ``conftest.py``.

Every call of the spec the controller serves is made twice where the spec asks for idempotency, and its
refusals are checked against the codes the spec names: the cases of the CSI sanity suite that apply to a
controller of single-node block volumes and their snapshots, written as our own tests. What a call did is
checked in the fake Proxmox (a volume's holder, a snapshot's, a worker's disk), not only in the answer.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from providers.csi.proto import csi_pb2 as csi
from providers.csi.rules import GIB, SERIAL_KEY, ZONE_KEY, api_name
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.providers.csi.conftest import BLOCK, CLASS, MOUNT, SHARED, ZONE
from tests.vmkit import create, fake_vm, fake_vms, ok, present


def code_of(call: Any, request: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=60)
    code: grpc.StatusCode = caught.value.code()
    return code


def new_volume(stub: Any, worker: dict[str, str], size: int = 10 * GIB) -> csi.Volume:
    request = csi.CreateVolumeRequest(
        name=f"pvc-{uuid.uuid4()}",
        capacity_range=csi.CapacityRange(required_bytes=size),
        volume_capabilities=[MOUNT],
        parameters=CLASS,
        accessibility_requirements=csi.TopologyRequirement(
            preferred=[csi.Topology(segments={ZONE_KEY: worker["zone"]})]
        ),
    )
    volume: csi.Volume = stub.CreateVolume(request, timeout=60).volume
    return volume


def holders_of(light: LightWorld, vdc: str, suffix: str = ".volume") -> dict[int, dict[str, Any]]:
    """The VDC's holders in the fake: its volumes' (or, with ``.snapshot``, its volume snapshots')."""
    return {
        vmid: vm
        for vmid, vm in fake_vms(light, ZONE).items()
        if vm["pool"] == f"fp-{vdc}" and vm["name"].endswith(suffix)
    }


def test_it_says_what_it_serves(stub: Any) -> None:
    answered = stub.ControllerGetCapabilities(csi.ControllerGetCapabilitiesRequest(), timeout=10)
    kinds = {c.rpc.type for c in answered.capabilities}
    rpc = csi.ControllerServiceCapability.RPC
    assert kinds == {
        rpc.CREATE_DELETE_VOLUME,
        rpc.PUBLISH_UNPUBLISH_VOLUME,
        rpc.EXPAND_VOLUME,
        rpc.CREATE_DELETE_SNAPSHOT,
        rpc.LIST_SNAPSHOTS,
    }


def test_a_volume_is_made_once_in_the_vdc_of_the_size_asked_rounded_up_and_the_profiles_least(
    stub: Any, light: LightWorld, vdc: str, worker: dict[str, str]
) -> None:
    name = f"pvc-{uuid.uuid4()}"
    request = csi.CreateVolumeRequest(
        name=name,
        capacity_range=csi.CapacityRange(required_bytes=int(11.5 * GIB)),
        volume_capabilities=[MOUNT],
        parameters=CLASS,
        accessibility_requirements=csi.TopologyRequirement(
            requisite=[csi.Topology(segments={ZONE_KEY: ZONE})]
        ),
    )
    first = stub.CreateVolume(request, timeout=60).volume
    again = stub.CreateVolume(request, timeout=60).volume  # the provisioner's retry: the same volume
    assert first == again
    assert first.capacity_bytes == 12 * GIB
    assert [dict(t.segments) for t in first.accessible_topology] == [{ZONE_KEY: ZONE}]
    holder = present(light, first.volume_id)
    assert (holder["name"], holder["pool"]) == (f"{name}.volume", f"fp-{vdc}")
    # No size asked: the storage profile's least (10 GiB), not 1.
    small = stub.CreateVolume(
        csi.CreateVolumeRequest(name=f"pvc-{uuid.uuid4()}", volume_capabilities=[BLOCK], parameters=CLASS),
        timeout=60,
    ).volume
    assert small.capacity_bytes == 10 * GIB
    for volume in (first, small):
        stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume.volume_id), timeout=60)


def test_a_same_named_volume_of_another_size_already_exists(stub: Any) -> None:
    name = f"pvc-{uuid.uuid4()}"

    def asked(gib: int) -> csi.CreateVolumeRequest:
        size = csi.CapacityRange(required_bytes=gib * GIB)
        return csi.CreateVolumeRequest(
            name=name, capacity_range=size, volume_capabilities=[MOUNT], parameters=CLASS
        )

    volume = stub.CreateVolume(asked(10), timeout=60).volume
    assert code_of(stub.CreateVolume, asked(20)) == grpc.StatusCode.ALREADY_EXISTS
    stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume.volume_id), timeout=60)


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (
            csi.CreateVolumeRequest(volume_capabilities=[MOUNT], parameters=CLASS),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (csi.CreateVolumeRequest(name="pvc-a", parameters=CLASS), grpc.StatusCode.INVALID_ARGUMENT),
        (
            csi.CreateVolumeRequest(name="pvc-b", volume_capabilities=[SHARED], parameters=CLASS),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            csi.CreateVolumeRequest(name="pvc-c", volume_capabilities=[MOUNT]),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            csi.CreateVolumeRequest(
                name="pvc-d", volume_capabilities=[MOUNT], parameters={"storageProfile": "no-such-profile"}
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            csi.CreateVolumeRequest(
                name="pvc-e", volume_capabilities=[MOUNT], parameters={**CLASS, "fsType": "ext4"}
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            csi.CreateVolumeRequest(
                name="pvc-f",
                volume_capabilities=[MOUNT],
                parameters=CLASS,
                capacity_range=csi.CapacityRange(required_bytes=GIB, limit_bytes=2 * GIB),
            ),
            grpc.StatusCode.OUT_OF_RANGE,  # the profile's least is 10 GiB
        ),
        (
            csi.CreateVolumeRequest(
                name="pvc-g",
                volume_capabilities=[MOUNT],
                parameters=CLASS,
                capacity_range=csi.CapacityRange(required_bytes=500 * GIB),
            ),
            grpc.StatusCode.OUT_OF_RANGE,  # the profile's most is 100 GiB
        ),
        (
            csi.CreateVolumeRequest(
                name="pvc-h",
                volume_capabilities=[MOUNT],
                parameters=CLASS,
                volume_content_source=csi.VolumeContentSource(
                    snapshot=csi.VolumeContentSource.SnapshotSource(snapshot_id=f"{ZONE}/999999")
                ),
            ),
            grpc.StatusCode.NOT_FOUND,  # the spec's code for a source that does not exist
        ),
        (
            csi.CreateVolumeRequest(
                name="pvc-i",
                volume_capabilities=[MOUNT],
                parameters=CLASS,
                volume_content_source=csi.VolumeContentSource(
                    volume=csi.VolumeContentSource.VolumeSource(volume_id=f"{ZONE}/999999")
                ),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,  # a clone: a source the driver does not serve
        ),
        (
            csi.CreateVolumeRequest(
                name="pvc-j",
                volume_capabilities=[MOUNT],
                parameters=CLASS,
                volume_content_source=csi.VolumeContentSource(),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,  # a source that names nothing
        ),
    ],
)
def test_a_create_it_cannot_serve_is_refused_with_the_specs_code_and_makes_nothing(
    stub: Any, light: LightWorld, vdc: str, request_: csi.CreateVolumeRequest, code: grpc.StatusCode
) -> None:
    before = holders_of(light, vdc)
    assert code_of(stub.CreateVolume, request_) == code
    assert holders_of(light, vdc) == before


def test_the_vdcs_quota_is_resource_exhausted(stub: Any, light: LightWorld, vdc: str) -> None:
    too_much = csi.CreateVolumeRequest(
        name=f"pvc-{uuid.uuid4()}",
        capacity_range=csi.CapacityRange(required_bytes=90 * GIB),  # beside the workers' disks
        volume_capabilities=[MOUNT],
        parameters=CLASS,
    )
    assert code_of(stub.CreateVolume, too_much) == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_volume_is_published_to_the_workers_vm_with_its_serial_then_unpublished_each_twice(
    stub: Any, light: LightWorld, worker: dict[str, str]
) -> None:
    volume = new_volume(stub, worker)
    # Its holder on another host than the worker's: the attach takes it there first (shared storage).
    pve = light.fakes[ZONE].pve
    elsewhere = next(n for n in sorted(light.fakes.on_loop(lambda: list(pve.nodes))) if n != worker["host"])
    vmid = int(volume.volume_id.split("/")[1])
    light.fakes.on_loop(lambda: setattr(pve.vm(vmid), "node", elsewhere))
    publish = csi.ControllerPublishVolumeRequest(
        volume_id=volume.volume_id, node_id=worker["name"], volume_capability=MOUNT
    )
    first = stub.ControllerPublishVolume(publish, timeout=60)
    again = stub.ControllerPublishVolume(publish, timeout=60)
    serial = first.publish_context[SERIAL_KEY]
    assert again.publish_context[SERIAL_KEY] == serial
    disks = [k for k, v in present(light, worker["id"])["config"].items() if f"serial={serial}" in str(v)]
    assert disks == ["scsi1"]
    assert present(light, volume.volume_id)["node"] == worker["host"]

    unpublish = csi.ControllerUnpublishVolumeRequest(volume_id=volume.volume_id, node_id=worker["name"])
    stub.ControllerUnpublishVolume(unpublish, timeout=60)
    stub.ControllerUnpublishVolume(unpublish, timeout=60)
    assert not [k for k, v in present(light, worker["id"])["config"].items() if f"serial={serial}" in str(v)]
    stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume.volume_id), timeout=60)
    stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume.volume_id), timeout=60)  # idempotent
    assert fake_vm(light, volume.volume_id) is None


def test_publishing_a_volume_or_to_a_node_that_does_not_exist_is_not_found(
    stub: Any, worker: dict[str, str]
) -> None:
    missing_volume = csi.ControllerPublishVolumeRequest(
        volume_id=f"{ZONE}/999999", node_id=worker["name"], volume_capability=MOUNT
    )
    assert code_of(stub.ControllerPublishVolume, missing_volume) == grpc.StatusCode.NOT_FOUND
    volume = new_volume(stub, worker)
    missing_node = csi.ControllerPublishVolumeRequest(
        volume_id=volume.volume_id, node_id="no-such-node", volume_capability=MOUNT
    )
    assert code_of(stub.ControllerPublishVolume, missing_node) == grpc.StatusCode.NOT_FOUND
    no_capability = csi.ControllerPublishVolumeRequest(volume_id=volume.volume_id, node_id=worker["name"])
    assert code_of(stub.ControllerPublishVolume, no_capability) == grpc.StatusCode.INVALID_ARGUMENT
    # Unpublishing what is published nowhere, or is gone, is done already.
    stub.ControllerUnpublishVolume(
        csi.ControllerUnpublishVolumeRequest(volume_id=volume.volume_id, node_id=worker["name"]), timeout=60
    )
    stub.ControllerUnpublishVolume(
        csi.ControllerUnpublishVolumeRequest(volume_id=f"{ZONE}/999999"), timeout=60
    )
    stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume.volume_id), timeout=60)


def test_a_volume_published_to_one_node_is_failed_precondition_for_another_and_not_deleted(
    api: InProcessApi, stub: Any, light: LightWorld, vdc: str, worker: dict[str, str]
) -> None:
    volume = new_volume(stub, worker)
    other = ok(create(api, "admin", vdc, name=f"{vdc}-w2"))["virtualMachine"]
    stub.ControllerPublishVolume(
        csi.ControllerPublishVolumeRequest(
            volume_id=volume.volume_id, node_id=worker["name"], volume_capability=MOUNT
        ),
        timeout=60,
    )
    elsewhere = csi.ControllerPublishVolumeRequest(
        volume_id=volume.volume_id, node_id=other["name"], volume_capability=MOUNT
    )
    assert code_of(stub.ControllerPublishVolume, elsewhere) == grpc.StatusCode.FAILED_PRECONDITION
    deleting = csi.DeleteVolumeRequest(volume_id=volume.volume_id)
    assert code_of(stub.DeleteVolume, deleting) == grpc.StatusCode.FAILED_PRECONDITION
    # Unpublishing it from the other node leaves it where it is.
    stub.ControllerUnpublishVolume(
        csi.ControllerUnpublishVolumeRequest(volume_id=volume.volume_id, node_id=other["name"]), timeout=60
    )
    assert present(light, volume.volume_id)["config"].get("scsi0") is None  # still attached
    stub.ControllerUnpublishVolume(
        csi.ControllerUnpublishVolumeRequest(volume_id=volume.volume_id, node_id=worker["name"]), timeout=60
    )
    stub.DeleteVolume(deleting, timeout=60)


def test_a_volume_grows_once_and_the_node_then_grows_its_file_system(
    stub: Any, light: LightWorld, worker: dict[str, str]
) -> None:
    volume = new_volume(stub, worker)
    grow = csi.ControllerExpandVolumeRequest(
        volume_id=volume.volume_id,
        capacity_range=csi.CapacityRange(required_bytes=int(14.2 * GIB)),
        volume_capability=MOUNT,
    )
    first = stub.ControllerExpandVolume(grow, timeout=60)
    again = stub.ControllerExpandVolume(grow, timeout=60)
    assert (first.capacity_bytes, first.node_expansion_required) == (15 * GIB, True)
    assert again.capacity_bytes == 15 * GIB
    assert "size=15G" in present(light, volume.volume_id)["config"]["scsi0"]
    block = csi.ControllerExpandVolumeRequest(
        volume_id=volume.volume_id,
        capacity_range=csi.CapacityRange(required_bytes=15 * GIB),
        volume_capability=BLOCK,
    )
    assert stub.ControllerExpandVolume(block, timeout=60).node_expansion_required is False
    missing = csi.ControllerExpandVolumeRequest(
        volume_id=f"{ZONE}/999999", capacity_range=csi.CapacityRange(required_bytes=20 * GIB)
    )
    assert code_of(stub.ControllerExpandVolume, missing) == grpc.StatusCode.NOT_FOUND
    stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume.volume_id), timeout=60)


def test_capabilities_are_confirmed_for_one_node_only(stub: Any, worker: dict[str, str]) -> None:
    volume = new_volume(stub, worker)
    ok_ = stub.ValidateVolumeCapabilities(
        csi.ValidateVolumeCapabilitiesRequest(volume_id=volume.volume_id, volume_capabilities=[MOUNT, BLOCK]),
        timeout=60,
    )
    assert list(ok_.confirmed.volume_capabilities) == [MOUNT, BLOCK]
    shared = stub.ValidateVolumeCapabilities(
        csi.ValidateVolumeCapabilitiesRequest(volume_id=volume.volume_id, volume_capabilities=[SHARED]),
        timeout=60,
    )
    assert not shared.HasField("confirmed")
    assert "one node" in shared.message
    missing = csi.ValidateVolumeCapabilitiesRequest(volume_id=f"{ZONE}/999999", volume_capabilities=[MOUNT])
    assert code_of(stub.ValidateVolumeCapabilities, missing) == grpc.StatusCode.NOT_FOUND
    stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume.volume_id), timeout=60)


def test_a_name_that_is_no_dns_label_becomes_a_stable_one() -> None:
    assert api_name("pvc-0b1f6a2e-8c43-4d5e-9f6a-1b2c3d4e5f60") == "pvc-0b1f6a2e-8c43-4d5e-9f6a-1b2c3d4e5f60"
    assert (
        api_name("snapshot-0b1f6a2e-8c43-4d5e-9f6a-1b2c3d4e5f60")
        == "snapshot-0b1f6a2e-8c43-4d5e-9f6a-1b2c3d4e5f60"
    )
    hashed = api_name("Some Volume/1")
    assert hashed == api_name("Some Volume/1")
    assert hashed.startswith("csi-")
    assert len(hashed) == 44


# ---------------------------------------------------------------------------------------------- snapshots


@dataclass
class Made:
    """What a test made through the controller, deleted after it (the calls are idempotent)."""

    snapshots: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)


@pytest.fixture
def made(stub: Any) -> Iterator[Made]:
    kept = Made()
    yield kept
    for snapshot_id in kept.snapshots:
        stub.DeleteSnapshot(csi.DeleteSnapshotRequest(snapshot_id=snapshot_id), timeout=60)
    for volume_id in kept.volumes:
        stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=volume_id), timeout=60)


def detached(stub: Any, worker: dict[str, str], made: Made, size: int = 10 * GIB) -> csi.Volume:
    volume = new_volume(stub, worker, size)
    made.volumes.append(volume.volume_id)
    return volume


def snapshot_of(stub: Any, volume: csi.Volume, made: Made, name: str = "") -> csi.Snapshot:
    request = csi.CreateSnapshotRequest(
        source_volume_id=volume.volume_id, name=name or f"snapshot-{uuid.uuid4()}"
    )
    snapshot: csi.Snapshot = stub.CreateSnapshot(request, timeout=60).snapshot
    made.snapshots.append(snapshot.snapshot_id)
    return snapshot


def snapshot_holders(light: LightWorld, vdc: str) -> dict[int, dict[str, Any]]:
    return holders_of(light, vdc, ".snapshot")


def listed(stub: Any, **fields: Any) -> list[csi.Snapshot]:
    answer = stub.ListSnapshots(csi.ListSnapshotsRequest(**fields), timeout=60)
    return [entry.snapshot for entry in answer.entries]


def test_a_detached_volumes_snapshot_is_taken_once_ready_of_its_size_and_source(
    stub: Any, light: LightWorld, vdc: str, worker: dict[str, str], made: Made
) -> None:
    volume = detached(stub, worker, made, 12 * GIB)
    request = csi.CreateSnapshotRequest(
        source_volume_id=volume.volume_id,
        name=f"snapshot-{uuid.uuid4()}",
        parameters={"csi.storage.k8s.io/volumesnapshot/name": "before-upgrade"},  # the sidecar's own
    )
    first = stub.CreateSnapshot(request, timeout=60).snapshot
    made.snapshots.append(first.snapshot_id)
    again = stub.CreateSnapshot(request, timeout=60).snapshot  # the sidecar's retry: the same snapshot
    assert again == first
    assert (first.ready_to_use, first.size_bytes, first.source_volume_id) == (
        True,
        12 * GIB,
        volume.volume_id,
    )
    taken_ago = datetime.datetime.now(datetime.UTC) - first.creation_time.ToDatetime(datetime.UTC)
    assert datetime.timedelta(0) <= taken_ago < datetime.timedelta(minutes=10)
    holder = present(light, first.snapshot_id)
    assert (holder["name"], holder["pool"], holder["status"]) == (
        f"{request.name}.snapshot",
        f"fp-{vdc}",
        "stopped",
    )
    assert len([h for h in snapshot_holders(light, vdc).values() if h["name"] == holder["name"]]) == 1


def test_a_snapshot_is_deleted_with_its_copy_and_deleting_it_again_or_one_never_taken_is_ok(
    stub: Any, light: LightWorld, worker: dict[str, str], made: Made
) -> None:
    volume = detached(stub, worker, made)
    snapshot = snapshot_of(stub, volume, made)
    delete = csi.DeleteSnapshotRequest(snapshot_id=snapshot.snapshot_id)
    stub.DeleteSnapshot(delete, timeout=60)
    assert fake_vm(light, snapshot.snapshot_id) is None
    stub.DeleteSnapshot(delete, timeout=60)  # gone already: deleted, as the spec says
    for never in (f"{ZONE}/999999", "no-such-snapshot"):
        stub.DeleteSnapshot(csi.DeleteSnapshotRequest(snapshot_id=never), timeout=60)
    assert code_of(stub.DeleteSnapshot, csi.DeleteSnapshotRequest()) == grpc.StatusCode.INVALID_ARGUMENT
    # The volume it was taken of is untouched.
    assert present(light, volume.volume_id)["config"]["scsi0"]


def test_a_snapshot_name_another_volumes_snapshot_has_already_exists(
    stub: Any, light: LightWorld, vdc: str, worker: dict[str, str], made: Made
) -> None:
    first, second = detached(stub, worker, made), detached(stub, worker, made)
    name = f"snapshot-{uuid.uuid4()}"
    snapshot_of(stub, first, made, name)
    holders = snapshot_holders(light, vdc)
    request = csi.CreateSnapshotRequest(source_volume_id=second.volume_id, name=name)
    assert code_of(stub.CreateSnapshot, request) == grpc.StatusCode.ALREADY_EXISTS
    assert snapshot_holders(light, vdc) == holders


def test_a_snapshot_of_a_published_volume_is_failed_precondition_saying_to_unpublish_it(
    stub: Any, light: LightWorld, vdc: str, worker: dict[str, str], made: Made
) -> None:
    volume = detached(stub, worker, made)
    publish = csi.ControllerPublishVolumeRequest(
        volume_id=volume.volume_id, node_id=worker["name"], volume_capability=MOUNT
    )
    stub.ControllerPublishVolume(publish, timeout=60)
    holders = snapshot_holders(light, vdc)
    request = csi.CreateSnapshotRequest(source_volume_id=volume.volume_id, name=f"snapshot-{uuid.uuid4()}")
    with pytest.raises(grpc.RpcError) as caught:
        stub.CreateSnapshot(request, timeout=60)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "detach it first" in (caught.value.details() or "")
    assert snapshot_holders(light, vdc) == holders
    stub.ControllerUnpublishVolume(
        csi.ControllerUnpublishVolumeRequest(volume_id=volume.volume_id, node_id=worker["name"]), timeout=60
    )


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (csi.CreateSnapshotRequest(name="snapshot-a"), grpc.StatusCode.INVALID_ARGUMENT),
        (csi.CreateSnapshotRequest(source_volume_id=f"{ZONE}/999999"), grpc.StatusCode.INVALID_ARGUMENT),
        (
            csi.CreateSnapshotRequest(source_volume_id=f"{ZONE}/999999", name="snapshot-b"),
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            csi.CreateSnapshotRequest(
                source_volume_id=f"{ZONE}/999999", name="snapshot-c", parameters={"retain": "forever"}
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ],
)
def test_a_snapshot_it_cannot_take_is_refused_with_the_specs_code_and_makes_nothing(
    stub: Any, light: LightWorld, vdc: str, request_: csi.CreateSnapshotRequest, code: grpc.StatusCode
) -> None:
    holders = snapshot_holders(light, vdc)
    assert code_of(stub.CreateSnapshot, request_) == code
    assert snapshot_holders(light, vdc) == holders


def test_a_snapshot_past_the_vdcs_disk_quota_is_resource_exhausted(
    api: InProcessApi, stub: Any, light: LightWorld, vdc: str, worker: dict[str, str], made: Made
) -> None:
    answer = api("{ vdcs { id quota { diskGb } usage { diskGb } } }", user="admin")
    (row,) = [v for v in answer.data["vdcs"] if v["id"] == vdc]
    room = row["quota"]["diskGb"] - row["usage"]["diskGb"]
    assert room >= 10, row
    volume = detached(stub, worker, made, room * GIB)  # the VDC's disk is full: no room for its copy
    holders = snapshot_holders(light, vdc)
    request = csi.CreateSnapshotRequest(source_volume_id=volume.volume_id, name=f"snapshot-{uuid.uuid4()}")
    assert code_of(stub.CreateSnapshot, request) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert snapshot_holders(light, vdc) == holders


def test_a_snapshot_whose_copy_is_under_way_is_not_ready_and_not_deleted_until_it_is_whole(
    stub: Any, light: LightWorld, worker: dict[str, str], made: Made
) -> None:
    volume = detached(stub, worker, made)
    name = f"snapshot-{uuid.uuid4()}"
    snapshot = snapshot_of(stub, volume, made, name)
    # Proxmox copying the disk holds its holder's config lock (the fake: set by hand).
    pve = light.fakes[ZONE].pve
    vmid = int(snapshot.snapshot_id.split("/")[1])
    light.fakes.on_loop(lambda: setattr(pve.vm(vmid), "lock", "clone"))
    request = csi.CreateSnapshotRequest(source_volume_id=volume.volume_id, name=name)
    delete = csi.DeleteSnapshotRequest(snapshot_id=snapshot.snapshot_id)
    try:
        copying = stub.CreateSnapshot(request, timeout=60).snapshot
        assert (copying.snapshot_id, copying.ready_to_use) == (snapshot.snapshot_id, False)
        assert [s.ready_to_use for s in listed(stub, snapshot_id=snapshot.snapshot_id)] == [False]
        assert code_of(stub.DeleteSnapshot, delete) == grpc.StatusCode.ABORTED  # an operation pending on it
        assert fake_vm(light, snapshot.snapshot_id) is not None
    finally:  # the copy is whole: whatever the test found, the next ones find no lock
        light.fakes.on_loop(lambda: setattr(pve.vm(vmid), "lock", None))
    assert stub.CreateSnapshot(request, timeout=60).snapshot.ready_to_use is True
    stub.DeleteSnapshot(delete, timeout=60)
    assert fake_vm(light, snapshot.snapshot_id) is None


def test_snapshots_are_listed_by_id_by_volume_and_a_page_at_a_time(
    stub: Any, worker: dict[str, str], made: Made
) -> None:
    first, second = detached(stub, worker, made), detached(stub, worker, made)
    one, two = snapshot_of(stub, first, made), snapshot_of(stub, first, made)
    other = snapshot_of(stub, second, made)

    assert listed(stub, snapshot_id=one.snapshot_id) == [one]
    assert listed(stub, snapshot_id=f"{ZONE}/999999") == []  # unknown: none, not an error
    assert listed(stub, snapshot_id="no-such-snapshot") == []
    assert listed(stub, snapshot_id=one.snapshot_id, source_volume_id=second.volume_id) == []
    by_volume = listed(stub, source_volume_id=first.volume_id)
    assert sorted(s.snapshot_id for s in by_volume) == sorted([one.snapshot_id, two.snapshot_id])
    assert listed(stub, source_volume_id=f"{ZONE}/999999") == []
    everything = listed(stub)
    assert {one.snapshot_id, two.snapshot_id, other.snapshot_id} <= {s.snapshot_id for s in everything}

    pages: list[csi.Snapshot] = []
    token = ""
    while True:
        page = stub.ListSnapshots(csi.ListSnapshotsRequest(max_entries=2, starting_token=token), timeout=60)
        assert len(page.entries) <= 2
        pages.extend(entry.snapshot for entry in page.entries)
        token = page.next_token
        if not token:
            break
    assert pages == everything
    for token in ("not-a-token", "-1", str(len(everything) + 1)):
        request = csi.ListSnapshotsRequest(max_entries=1, starting_token=token)
        assert code_of(stub.ListSnapshots, request) == grpc.StatusCode.ABORTED
    assert (
        code_of(stub.ListSnapshots, csi.ListSnapshotsRequest(max_entries=-1))
        == grpc.StatusCode.INVALID_ARGUMENT
    )

    # A snapshot outlives its volume, and is still listed as that volume's.
    stub.DeleteVolume(csi.DeleteVolumeRequest(volume_id=second.volume_id), timeout=60)
    assert listed(stub, source_volume_id=second.volume_id) == [other]


def test_a_deleted_volumes_snapshot_is_not_listed_under_the_volume_given_its_vmid_since(
    stub: Any, light: LightWorld, worker: dict[str, str], made: Made
) -> None:
    volume = detached(stub, worker, made)
    kept, old = snapshot_of(stub, volume, made), snapshot_of(stub, volume, made)
    # As if ``old`` were of a volume deleted before this one was given its VMID (``fp-was-<vmid>``).
    pve = light.fakes[ZONE].pve
    holder = light.fakes.on_loop(lambda: pve.vm(int(old.snapshot_id.split("/")[1])))
    vmid = volume.volume_id.split("/")[1]

    def retag(before: str, after: str) -> None:
        light.fakes.on_loop(lambda: holder.config.update(tags=holder.config["tags"].replace(before, after)))

    retag(f"fp-of-{vmid}", f"fp-was-{vmid}")
    try:
        assert [s.snapshot_id for s in listed(stub, source_volume_id=volume.volume_id)] == [kept.snapshot_id]
        assert old.snapshot_id in {s.snapshot_id for s in listed(stub)}
    finally:
        retag(f"fp-was-{vmid}", f"fp-of-{vmid}")


def from_snapshot(
    snapshot: csi.Snapshot, name: str = "", gib: int = 0, limit_gib: int = 0, zone: str = ZONE, **extra: Any
) -> csi.CreateVolumeRequest:
    return csi.CreateVolumeRequest(
        name=name or f"pvc-{uuid.uuid4()}",
        capacity_range=csi.CapacityRange(required_bytes=gib * GIB, limit_bytes=limit_gib * GIB),
        volume_capabilities=[MOUNT],
        parameters=extra.pop("parameters", CLASS),
        accessibility_requirements=csi.TopologyRequirement(
            requisite=[csi.Topology(segments={ZONE_KEY: zone})]
        ),
        volume_content_source=csi.VolumeContentSource(
            snapshot=csi.VolumeContentSource.SnapshotSource(snapshot_id=snapshot.snapshot_id)
        ),
    )


def test_a_volume_is_made_once_from_a_snapshot_of_at_least_its_size_and_says_so(
    stub: Any, light: LightWorld, vdc: str, worker: dict[str, str], made: Made
) -> None:
    source = detached(stub, worker, made, 12 * GIB)
    snapshot = snapshot_of(stub, source, made)
    request = from_snapshot(snapshot)
    first = stub.CreateVolume(request, timeout=60).volume
    made.volumes.append(first.volume_id)
    again = stub.CreateVolume(request, timeout=60).volume  # the provisioner's retry: the same volume
    assert again == first
    assert first.content_source == request.volume_content_source  # the provisioner checks it is there
    assert first.capacity_bytes == 12 * GIB  # the snapshot's, though no size was asked
    assert [dict(t.segments) for t in first.accessible_topology] == [{ZONE_KEY: ZONE}]
    holder = present(light, first.volume_id)
    assert (holder["name"], holder["pool"]) == (f"{request.name}.volume", f"fp-{vdc}")
    assert first.volume_id not in (source.volume_id, snapshot.snapshot_id)

    larger = stub.CreateVolume(from_snapshot(snapshot, gib=15, limit_gib=20), timeout=60).volume
    made.volumes.append(larger.volume_id)
    assert larger.capacity_bytes == 15 * GIB
    assert "size=15G" in present(light, larger.volume_id)["config"]["scsi0"]


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"limit_gib": 11}, grpc.StatusCode.OUT_OF_RANGE),  # below the snapshot's 12 GiB
        ({"gib": 101}, grpc.StatusCode.OUT_OF_RANGE),  # past the profile's most
        ({"zone": "zone-b"}, grpc.StatusCode.RESOURCE_EXHAUSTED),  # the snapshot's zone is not allowed
        ({"parameters": {"storageProfile": "standard"}}, grpc.StatusCode.INVALID_ARGUMENT),  # another profile
        ({"parameters": {**CLASS, "zone": "zone-b"}}, grpc.StatusCode.INVALID_ARGUMENT),  # another zone
    ],
)
def test_a_volume_from_a_snapshot_it_cannot_make_is_refused_with_the_specs_code_and_made_not(
    stub: Any,
    light: LightWorld,
    vdc: str,
    worker: dict[str, str],
    made: Made,
    fields: dict[str, Any],
    code: grpc.StatusCode,
) -> None:
    snapshot = snapshot_of(stub, detached(stub, worker, made, 12 * GIB), made)
    before = holders_of(light, vdc)
    assert code_of(stub.CreateVolume, from_snapshot(snapshot, **fields)) == code
    assert holders_of(light, vdc) == before
