"""A tenant cluster's PersistentVolumeClaim is bound to a volume of its VDC through the driver, on the
stand-ins: the tenant's API server (the devstack's Kubernetes emulator), the CSI sidecars and the PV
controller's binding (``devstack/csi_sidecars.py``), the driver's controller on its socket, and flex.plane's
API in this process (``conftest.py``).

A claim of the StorageClass the provider installs waits for the scheduler's node, gets a volume in that
node's zone, is bound; its VolumeAttachment attaches the volume to the worker's VM (the disk in the VM's
config); a larger request grows it; the claim deleted, the volume goes. What each step did is checked in
the API (the VDC's volumes) and the fake Proxmox.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from devstack.csi_sidecars import SELECTED_NODE, CsiSidecars
from devstack.csi_snapshots import CONTENTS, SNAPSHOTS
from devstack.kube import KubeServer
from providers.controlplane.snapshots import GROUP, SNAPSHOT_CLASS, VERSION, crds, snapshot_class
from providers.csi.identity import DRIVER
from providers.csi.rules import ZONE_KEY
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.providers.csi.conftest import ZONE
from tests.vmkit import fake_vm, present

GIB = 1024**3
CLASS_NAME = "replicated"


@pytest.fixture(scope="module")
def tenant(shared_profile: str, worker: dict[str, str]) -> Iterator[client.ApiClient]:
    """The tenant cluster's API server, with the driver's StorageClass and the worker's Node."""
    with KubeServer.start() as server:
        configuration = client.Configuration()
        configuration.host = server.url
        api = client.ApiClient(configuration)
        client.StorageV1Api(api).create_storage_class(
            client.V1StorageClass(
                metadata=client.V1ObjectMeta(name=CLASS_NAME),
                provisioner=DRIVER,
                parameters={"storageProfile": shared_profile},
                reclaim_policy="Delete",
                allow_volume_expansion=True,
                volume_binding_mode="WaitForFirstConsumer",
            )
        )
        node = client.V1Node(metadata=client.V1ObjectMeta(name=worker["name"], labels={ZONE_KEY: ZONE}))
        client.CoreV1Api(api).create_node(node)
        # What the control-plane provider installs for VolumeSnapshots: the CRDs, the driver's class.
        for crd in crds():
            typed = client.V1CustomResourceDefinition.from_dict(crd)
            assert typed is not None  # from_dict answers None for None only
            client.ApiextensionsV1Api(api).create_custom_resource_definition(typed)
        client.CustomObjectsApi(api).create_cluster_custom_object(
            GROUP, VERSION, "volumesnapshotclasses", snapshot_class()
        )
        yield api
        api.close()


@pytest.fixture
def sidecars(tenant: client.ApiClient, channel: grpc.Channel) -> CsiSidecars:
    return CsiSidecars(tenant, channel)


def claim(api: client.ApiClient, name: str, size: str, node: str | None, snapshot: str | None = None) -> None:
    annotations = {SELECTED_NODE: node} if node else {}
    source = (
        client.V1TypedLocalObjectReference(api_group=GROUP, kind="VolumeSnapshot", name=snapshot)
        if snapshot
        else None
    )
    body = client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name=name, namespace="default", annotations=annotations),
        spec=client.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            storage_class_name=CLASS_NAME,
            resources=client.V1VolumeResourceRequirements(requests={"storage": size}),
            data_source=source,
        ),
    )
    client.CoreV1Api(api).create_namespaced_persistent_volume_claim("default", body)


def read_claim(api: client.ApiClient, name: str) -> dict[str, Any]:
    found: dict[str, Any] = api.sanitize_for_serialization(
        client.CoreV1Api(api).read_namespaced_persistent_volume_claim(name, "default")
    )
    return found


def vdc_volumes(api_: InProcessApi, vdc: str) -> dict[str, dict[str, Any]]:
    listed = api_("{ volumes { id name sizeGb status attachedTo } }", user="admin", vdc=vdc).data["volumes"]
    return {v["id"]: v for v in listed}


def test_a_claim_is_bound_to_a_volume_of_the_vdc_attached_grown_and_deleted_with_it(
    api: InProcessApi,
    light: LightWorld,
    vdc: str,
    worker: dict[str, str],
    tenant: client.ApiClient,
    sidecars: CsiSidecars,
) -> None:
    core, storage = client.CoreV1Api(tenant), client.StorageV1Api(tenant)

    # Before the scheduler chose a node (WaitForFirstConsumer), nothing is made.
    claim(tenant, "data", "12Gi", None)
    sidecars.sweep()
    assert read_claim(tenant, "data")["spec"].get("volumeName") is None

    # The scheduler chose the worker: a volume of the VDC, in its zone, and the claim bound to it.
    core.patch_namespaced_persistent_volume_claim(
        "data", "default", {"metadata": {"annotations": {SELECTED_NODE: worker["name"]}}}
    )
    sidecars.sweep()
    assert sidecars.failures == {}
    bound = read_claim(tenant, "data")
    assert bound["status"]["phase"] == "Bound"
    pv = api_sanitized(tenant, core.read_persistent_volume(bound["spec"]["volumeName"]))
    handle = pv["spec"]["csi"]["volumeHandle"]
    volume = vdc_volumes(api, vdc)[handle]
    assert (volume["name"], volume["sizeGb"], volume["status"]) == (
        f"pvc-{bound['metadata']['uid']}",
        12,
        "available",
    )
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
        "values"
    ] == [ZONE]

    # A pod on the worker: its VolumeAttachment attaches the volume to the worker's VM.
    attachment = client.V1VolumeAttachment(
        metadata=client.V1ObjectMeta(name="csi-data"),
        spec=client.V1VolumeAttachmentSpec(
            attacher=DRIVER,
            node_name=worker["name"],
            source=client.V1VolumeAttachmentSource(persistent_volume_name=pv["metadata"]["name"]),
        ),
    )
    storage.create_volume_attachment(attachment)
    sidecars.sweep()
    attached = api_sanitized(tenant, storage.read_volume_attachment("csi-data"))
    assert attached["status"]["attached"] is True
    serial = attached["status"]["attachmentMetadata"]["serial"]
    disks = [k for k, v in present(light, worker["id"])["config"].items() if f"serial={serial}" in str(v)]
    assert len(disks) == 1
    assert vdc_volumes(api, vdc)[handle]["attachedTo"] == worker["id"]

    # The claim asks for more: the volume grows where it is; the node grows the file system.
    core.patch_namespaced_persistent_volume_claim(
        "data", "default", {"spec": {"resources": {"requests": {"storage": "20Gi"}}}}
    )
    sidecars.sweep()
    assert vdc_volumes(api, vdc)[handle]["sizeGb"] == 20
    assert api_sanitized(tenant, core.read_persistent_volume(pv["metadata"]["name"]))["spec"]["capacity"][
        "storage"
    ] == str(20 * GIB)

    # The pod gone, the attachment goes: the volume is detached from the VM.
    storage.delete_volume_attachment("csi-data")
    sidecars.sweep()
    assert [
        k for k, v in present(light, worker["id"])["config"].items() if f"serial={serial}" in str(v)
    ] == []
    assert vdc_volumes(api, vdc)[handle]["status"] == "available"

    # The claim deleted: the volume and its PersistentVolume go.
    core.delete_namespaced_persistent_volume_claim("data", "default", _preload_content=False)
    sidecars.sweep()
    assert handle not in vdc_volumes(api, vdc)
    assert fake_vm(light, handle) is None
    assert core.list_persistent_volume().items == []


def test_a_claim_the_vdc_has_no_room_for_stays_pending_saying_why(
    api: InProcessApi, vdc: str, worker: dict[str, str], tenant: client.ApiClient, sidecars: CsiSidecars
) -> None:
    claim(tenant, "huge", "95Gi", worker["name"])
    try:
        sidecars.sweep()
        assert read_claim(tenant, "huge")["spec"].get("volumeName") is None
        assert "RESOURCE_EXHAUSTED" in sidecars.failures["claim default/huge"]
        assert not [v for v in vdc_volumes(api, vdc).values() if v["sizeGb"] == 95]
    finally:
        client.CoreV1Api(tenant).delete_namespaced_persistent_volume_claim(
            "huge", "default", _preload_content=False
        )


def api_sanitized(api: client.ApiClient, value: Any) -> dict[str, Any]:
    plain: dict[str, Any] = api.sanitize_for_serialization(value)
    return plain


def test_a_claims_volume_snapshot_is_taken_once_detached_and_a_claim_is_made_from_it(
    api: InProcessApi,
    light: LightWorld,
    vdc: str,
    worker: dict[str, str],
    tenant: client.ApiClient,
    sidecars: CsiSidecars,
) -> None:
    """A VolumeSnapshot of the driver's class is a volume snapshot of the VDC: it waits while a pod holds
    the claim's volume (FAILED_PRECONDITION), is taken once the pod is gone, a claim whose data source it is
    gets a new volume made from it, and it goes with its copy when deleted."""
    core, storage, custom = (
        client.CoreV1Api(tenant),
        client.StorageV1Api(tenant),
        client.CustomObjectsApi(tenant),
    )
    claim(tenant, "source", "10Gi", worker["name"])
    sidecars.sweep()
    pv_name = read_claim(tenant, "source")["spec"]["volumeName"]
    handle = api_sanitized(tenant, core.read_persistent_volume(pv_name))["spec"]["csi"]["volumeHandle"]
    attachment = client.V1VolumeAttachment(
        metadata=client.V1ObjectMeta(name="csi-source"),
        spec=client.V1VolumeAttachmentSpec(
            attacher=DRIVER,
            node_name=worker["name"],
            source=client.V1VolumeAttachmentSource(persistent_volume_name=pv_name),
        ),
    )
    storage.create_volume_attachment(attachment)
    sidecars.sweep()

    def snapshot_status() -> dict[str, Any]:
        found = custom.get_namespaced_custom_object(GROUP, VERSION, "default", SNAPSHOTS, "before")
        assert isinstance(found, dict)
        status: dict[str, Any] = found.get("status") or {}
        return status

    def vdc_snapshots() -> dict[str, dict[str, Any]]:
        listed = api("{ volumeSnapshots { id source status } }", user="admin", vdc=vdc).data[
            "volumeSnapshots"
        ]
        return {s["id"]: s for s in listed}

    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "VolumeSnapshot",
        "metadata": {"name": "before"},
        "spec": {
            "volumeSnapshotClassName": SNAPSHOT_CLASS,
            "source": {"persistentVolumeClaimName": "source"},
        },
    }
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", SNAPSHOTS, body)
    try:
        # A pod holds the volume: the snapshot waits.
        sidecars.sweep()
        assert "FAILED_PRECONDITION" in sidecars.failures["snapshot default/before"]
        assert not snapshot_status().get("readyToUse")
        assert not [s for s in vdc_snapshots().values() if s["source"] == handle]

        # The pod gone, the volume detached (the attacher's pass), then the snapshotter's retry: taken, a
        # copy of the VDC's.
        storage.delete_volume_attachment("csi-source")
        sidecars.sweep()
        sidecars.sweep()
        status = snapshot_status()
        assert (status["readyToUse"], status["restoreSize"]) == (True, str(10 * GIB))
        content = custom.get_cluster_custom_object(
            GROUP, VERSION, CONTENTS, status["boundVolumeSnapshotContentName"]
        )
        assert isinstance(content, dict)
        snapshot_id = content["status"]["snapshotHandle"]
        assert vdc_snapshots()[snapshot_id] == {"id": snapshot_id, "source": handle, "status": "available"}

        # A claim whose data source it is: a new volume made from it, as large as asked.
        claim(tenant, "restored", "15Gi", worker["name"], snapshot="before")
        sidecars.sweep()
        restored = read_claim(tenant, "restored")
        assert restored["status"]["phase"] == "Bound"
        made = api_sanitized(tenant, core.read_persistent_volume(restored["spec"]["volumeName"]))
        copy = made["spec"]["csi"]["volumeHandle"]
        assert vdc_volumes(api, vdc)[copy]["sizeGb"] == 15
        holder = fake_vm(light, copy)
        assert holder is not None
        assert "made from volume snapshot snapshot-" in holder["config"]["description"]
    finally:
        custom.delete_namespaced_custom_object(GROUP, VERSION, "default", SNAPSHOTS, "before")
        for name in ("source", "restored"):
            with contextlib.suppress(ApiException):  # made, or not, by the steps above
                core.delete_namespaced_persistent_volume_claim(name, "default", _preload_content=False)
        sidecars.sweep()

    # The VolumeSnapshot deleted: its content and the VDC's copy went; so did the claims' volumes.
    contents = custom.list_cluster_custom_object(GROUP, VERSION, CONTENTS)
    assert isinstance(contents, dict)
    assert contents["items"] == []
    assert not [s for s in vdc_snapshots().values() if s["source"] == handle]
    assert handle not in vdc_volumes(api, vdc)
