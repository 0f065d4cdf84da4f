"""The CSI driver's controller over its gRPC surface (a real server on a Unix socket, called as the sidecars
call it), against flex.plane's API in this process on the light world, as a service account of a scratch
VDC (USER there only), as ``tests/providers/cloud/conftest.py`` reaches it.

Every call of the spec the controller serves is made twice where the spec asks for idempotency, and its
refusals are checked against the codes the spec names: the cases of the CSI sanity suite that apply to a
controller of single-node block volumes, written as our own tests. What a call did is checked in the fake
Proxmox (a volume's holder, a worker's disk), not only in the answer.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler

from apiclient import FlexPlane
from providers.csi.__main__ import controller_services, serve
from providers.csi.controller import GIB, ControllerService, volume_name
from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc
from providers.csi.rules import SERIAL_KEY, ZONE_KEY
from tests.apiclient.conftest import ORIGIN
from tests.orchestrator.api.light.conftest import api, issuer, kube, light, tenant_clusters, zitadel
from tests.orchestrator.api.light.test_service_accounts import machine_token
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import create, fake_vm, fake_vms, ok, payload, present, scratch_vdcs

__all__ = ["api", "issuer", "kube", "light", "tenant_clusters", "zitadel"]

ZONE = "zone-a"
CREATE_ACCOUNT = (
    "mutation($v: ID!, $n: String!, $e: DateTime!) { createServiceAccount(vdc: $v, name: $n, expiresAt: $e) "
    "{ serviceAccount { id } errors { field code message } } }"
)
REVOKE_ACCOUNT = "mutation($id: ID!) { revokeServiceAccount(id: $id) { errors { code } } }"
MOUNT = csi.VolumeCapability(
    mount=csi.VolumeCapability.MountVolume(fs_type="ext4"),
    access_mode=csi.VolumeCapability.AccessMode(mode=csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER),
)
BLOCK = csi.VolumeCapability(
    block=csi.VolumeCapability.BlockVolume(),
    access_mode=csi.VolumeCapability.AccessMode(mode=csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER),
)
SHARED = csi.VolumeCapability(
    mount=csi.VolumeCapability.MountVolume(),
    access_mode=csi.VolumeCapability.AccessMode(mode=csi.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER),
)
# Shared storage, as a StorageClass of a tenant cluster wants it (a volume attaches to a VM on any host).
SHARED_STORAGE = "rbd-tenants"
PROFILE = f"t{uuid.uuid4().hex[:8]}-replicated"
CLASS = {"storageProfile": PROFILE, "csi.storage.k8s.io/pv/name": "pvc-x"}
CREATE_PROFILE = (
    "mutation($input: StorageProfileInput!) { createStorageProfile(input: $input) { errors { message } } }"
)
DELETE_PROFILE = "mutation($name: String!) { deleteStorageProfile(name: $name) { errors { message } } }"


@pytest.fixture(scope="module")
def shared_profile(api: InProcessApi, light: LightWorld) -> Iterator[str]:
    """A storage profile on a shared (Ceph RBD) storage of zone-a's, made for the module."""
    pve = light.fakes[ZONE].pve
    storage = {"type": "rbd", "content": "images", "shared": 1, "active": 1, "files": set()}
    light.fakes.on_loop(lambda: pve.storages.__setitem__(SHARED_STORAGE, storage))
    limits = {"defaultGb": 10, "minGb": 10, "maxGb": 100}
    storages = [{"zone": ZONE, "storage": SHARED_STORAGE}]
    made = api(
        CREATE_PROFILE, user="admin", variables={"input": {"name": PROFILE, "storages": storages, **limits}}
    )
    assert payload(made, "createStorageProfile")["errors"] == []
    yield PROFILE
    api(DELETE_PROFILE, user="admin", variables={"name": PROFILE})
    light.fakes.on_loop(lambda: pve.storages.pop(SHARED_STORAGE, None))


@pytest.fixture(scope="module")
def vdc(api: InProcessApi, light: LightWorld, shared_profile: str) -> Iterator[str]:
    """The cluster's VDC, of zone-a, 100 GiB of disk; its VMs and volumes go with it."""
    with scratch_vdcs(api, light) as make:
        yield make(storage_profiles=("standard", shared_profile), diskGb=100)


@pytest.fixture(scope="module")
def controller_api(api: InProcessApi, zitadel: FakeZitadel, vdc: str) -> Iterator[FlexPlane]:
    """flex.plane's API as the cluster's service account, in its VDC, through the WSGI app in this process."""
    expires = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    made = payload(
        api(CREATE_ACCOUNT, user="admin", variables={"v": vdc, "n": "csi-web", "e": expires}),
        "createServiceAccount",
    )
    assert made["errors"] == [], made["errors"]
    token = machine_token(api, zitadel, made["serviceAccount"]["id"])
    with FlexPlane(ORIGIN, token, vdc=vdc, transport=httpx.WSGITransport(app=WSGIHandler())) as client:
        yield client
    api(REVOKE_ACCOUNT, user="admin", variables={"id": made["serviceAccount"]["id"]})


@pytest.fixture(scope="module")
def stub(controller_api: FlexPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The controller served on a Unix socket, as its sidecars reach it; its Controller stub."""
    socket = Path(tmp_path_factory.mktemp("csi")) / "csi.sock"
    server, _ = serve(f"unix://{socket}", controller_services(ControllerService(controller_api)))
    channel = grpc.insecure_channel(f"unix://{socket}")
    yield csi_pb2_grpc.ControllerStub(channel)
    channel.close()
    server.stop(None).wait()


@pytest.fixture(scope="module")
def worker(api: InProcessApi, vdc: str) -> dict[str, str]:
    """A worker VM of the VDC: the node the volumes are published to (its name is the node id)."""
    vm: dict[str, str] = ok(create(api, "admin", vdc, name=f"{vdc}-w1"))["virtualMachine"]
    return vm


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
