"""The CSI driver's controller over its gRPC surface (a real server on a Unix socket, called as the sidecars
call it), against flex.plane's API in this process on the light world, as a service account of a scratch
VDC (USER there only): ``conftest.py``.

Every call of the spec the controller serves is made twice where the spec asks for idempotency, and its
refusals are checked against the codes the spec names: the cases of the CSI sanity suite that apply to a
controller of single-node block volumes, written as our own tests. What a call did is checked in the fake
Proxmox (a volume's holder, a worker's disk), not only in the answer.
"""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest

from providers.csi.controller import GIB, volume_name
from providers.csi.proto import csi_pb2 as csi
from providers.csi.rules import SERIAL_KEY, ZONE_KEY
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


def holders_of(light: LightWorld, vdc: str) -> dict[int, dict[str, Any]]:
    return {
        vmid: vm
        for vmid, vm in fake_vms(light, ZONE).items()
        if vm["pool"] == f"fp-{vdc}" and vm["name"].endswith(".volume")
    }


def test_it_says_what_it_serves(stub: Any) -> None:
    answered = stub.ControllerGetCapabilities(csi.ControllerGetCapabilitiesRequest(), timeout=10)
    kinds = {c.rpc.type for c in answered.capabilities}
    rpc = csi.ControllerServiceCapability.RPC
    assert kinds == {rpc.CREATE_DELETE_VOLUME, rpc.PUBLISH_UNPUBLISH_VOLUME, rpc.EXPAND_VOLUME}


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
                    snapshot=csi.VolumeContentSource.SnapshotSource(snapshot_id="s")
                ),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
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
    assert (
        volume_name("pvc-0b1f6a2e-8c43-4d5e-9f6a-1b2c3d4e5f60") == "pvc-0b1f6a2e-8c43-4d5e-9f6a-1b2c3d4e5f60"
    )
    hashed = volume_name("Some Volume/1")
    assert hashed == volume_name("Some Volume/1")
    assert hashed.startswith("csi-")
    assert len(hashed) == 44
