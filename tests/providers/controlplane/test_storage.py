"""The CSI driver installed with a tenant cluster (providers/controlplane/storage.py): the tenant's half
validates against every offered Kubernetes version's schemas (its custom resources against the CRDs it
installs) and holds what the driver's design says; the controller's half beside the control plane runs the
controller as the cluster's service account with its sidecars and the snapshot-controller reaching the
tenant's API server with their own certificate; the provider deploys the controller only where the cluster
has storage profiles and the providers know flex.plane's URL and hold its key. The snapshot API's CRDs
(providers/controlplane/snapshots.py) are structural and declare all that the snapshot-controller and the
csi-snapshotter write."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterable
from typing import Any

import jsonschema
import pytest
import yaml

from devstack.seed import KUBERNETES_VERSIONS
from providers.controlplane import model, pki, render, snapshots, storage, tenant
from providers.controlplane.kube import manifest_path
from providers.csi.identity import DRIVER
from providers.csi.rules import ZONE_KEY
from tests.kubeschema import invalid

OFFERED = [v["version"] for v in KUBERNETES_VERSIONS]
CA = pki.new_ca("kubernetes").cert_pem
CP = model.ControlPlane(
    vdc="demo",
    cluster="web",
    version="v1.34.2",
    endpoint_host="10.20.0.7",
    zone="zone-a",
    storage_profiles=("standard", "replicated"),
)
CLOUD = model.CloudController(
    url="https://flexplane.example.com", identity_url="https://id.example.com", project_id="42"
)
KEY = b'{"type": "serviceaccount", "keyId": "k1"}'


def minor(version: str) -> str:
    return ".".join(version.removeprefix("v").split(".")[:2])


def of_kind(manifests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == kind]


def containers(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in workload["spec"]["template"]["spec"]["containers"]}


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def crd_schemas(manifests: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the openAPIV3Schema of every kind the CRDs among ``manifests`` define."""
    return {
        (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"]): version["schema"][
            "openAPIV3Schema"
        ]
        for crd in of_kind(list(manifests), "CustomResourceDefinition")
        for version in crd["spec"]["versions"]
    }


def refused_by(schema: dict[str, Any], body: dict[str, Any]) -> list[str]:
    """What a CRD's schema refuses of an object (the API server's checks short of CEL and formats)."""
    return [
        f"{'.'.join(map(str, e.path))}: {e.message}"
        for e in jsonschema.Draft4Validator(schema).iter_errors(body)
    ]


def undeclared(schema: dict[str, Any], body: Any, path: str = "") -> list[str]:
    """The fields of ``body`` its schema does not declare: what the API server would prune from it."""
    if not isinstance(body, dict) or schema.get("type") != "object" or "properties" not in schema:
        return []
    found = []
    for key, value in body.items():
        if key in schema["properties"]:
            found += undeclared(schema["properties"][key], value, f"{path}.{key}")
        elif "additionalProperties" not in schema:
            found.append(f"{path}.{key}")
    return found


def not_structural(schema: dict[str, Any], path: str = "") -> list[str]:
    """Where a schema is not structural (Kubernetes' rule): a node without its type, short of an
    int-or-string; an object's properties and an array's items are nodes too."""
    if schema.get("x-kubernetes-int-or-string"):
        return [] if all("properties" not in branch for branch in schema.get("anyOf", [])) else [path]
    if "type" not in schema:
        return [path or "."]
    found = []
    for name, child in schema.get("properties", {}).items():
        found += not_structural(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found += not_structural(schema[key], f"{path}.{key}")
    return found


@pytest.mark.parametrize("version", OFFERED)
def test_the_tenant_install_with_storage_validates_against_the_schemas_of_every_offered_version(
    version: str,
) -> None:
    manifests = tenant.tenant_manifests(dataclasses.replace(CP, version=version), CA)
    assert of_kind(manifests, "CSIDriver")
    defined = crd_schemas(manifests)
    custom = [m for m in manifests if (m["apiVersion"], m["kind"]) in defined]
    assert [m["kind"] for m in custom] == ["VolumeSnapshotClass"]
    assert invalid([m for m in manifests if m not in custom], minor(version)) == []
    for manifest in custom:
        schema = defined[manifest["apiVersion"], manifest["kind"]]
        assert refused_by(schema, manifest) == []
        assert undeclared(schema, manifest) == []


def test_a_cluster_without_storage_profiles_gets_no_driver() -> None:
    assert storage.tenant_manifests(dataclasses.replace(CP, storage_profiles=())) == []


def test_each_profile_is_a_class_waiting_for_its_consumer_in_the_zone_the_first_the_default() -> None:
    classes = storage.storage_classes(CP)
    assert [c["metadata"]["name"] for c in classes] == ["standard", "replicated"]
    assert [c["metadata"].get("annotations", {}).get(storage.DEFAULT_CLASS_ANNOTATION) for c in classes] == [
        "true",
        None,
    ]
    for cls, profile in zip(classes, CP.storage_profiles, strict=True):
        assert cls["provisioner"] == DRIVER
        assert cls["parameters"]["storageProfile"] == profile
        assert (cls["volumeBindingMode"], cls["allowVolumeExpansion"], cls["reclaimPolicy"]) == (
            "WaitForFirstConsumer",
            True,
            "Delete",
        )
        assert cls["allowedTopologies"] == [
            {"matchLabelExpressions": [{"key": ZONE_KEY, "values": ["zone-a"]}]}
        ]


def test_the_driver_is_attached_before_it_is_staged() -> None:
    spec = storage.csi_driver()["spec"]
    assert spec["attachRequired"] is True
    assert spec["volumeLifecycleModes"] == ["Persistent"]


def test_the_node_plugin_runs_privileged_everywhere_sharing_the_kubelets_mounts_with_no_credential() -> None:
    _, daemonset = storage.node_plugin(CP)
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["automountServiceAccountToken"] is False
    plugin = containers(daemonset)["csi-node"]
    assert plugin["command"] == ["python", "-m", "providers.csi", "node"]
    assert plugin["securityContext"]["privileged"] is True
    assert env(plugin)["FLEXPLANE_CSI_NODE_ID"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env(plugin)["FLEXPLANE_CSI_ZONE"] == "zone-a"
    kubelet = next(m for m in plugin["volumeMounts"] if m["name"] == "kubelet-dir")
    assert kubelet["mountPropagation"] == "Bidirectional"
    registrar = containers(daemonset)["node-driver-registrar"]
    assert f"--kubelet-registration-path=/var/lib/kubelet/plugins/{DRIVER}/csi.sock" in registrar["args"]
    volumes = {v["name"] for v in pod["volumes"]}
    for container in containers(daemonset).values():
        assert {m["name"] for m in container["volumeMounts"]} <= volumes


def test_the_sidecars_may_do_their_work_and_touch_no_secret() -> None:
    role, binding, leases, lease_binding = storage.rbac()
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "flexplane:csi-controller"}
    ]
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert {"persistentvolumes", "persistentvolumeclaims", "volumeattachments", "storageclasses"} <= resources
    assert "secrets" not in resources
    # The snapshot-controller makes and binds contents; the snapshotter writes their status.
    granted = {
        (resource, verb)
        for rule in role["rules"]
        if rule["apiGroups"] == ["snapshot.storage.k8s.io"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert {
        ("volumesnapshotclasses", "watch"),
        ("volumesnapshots", "update"),
        ("volumesnapshots/status", "patch"),
        ("volumesnapshotcontents", "create"),
        ("volumesnapshotcontents", "delete"),
        ("volumesnapshotcontents/status", "update"),
    } <= granted
    assert leases["metadata"]["namespace"] == "kube-system"
    assert lease_binding["roleRef"]["name"] == leases["metadata"]["name"]


def test_the_controller_runs_as_the_clusters_account_with_its_sidecars_on_one_socket() -> None:
    files = pki.ensure_pki({}, CP.names)
    server = render.cloud_controller_server(CP)
    secret, deployment = storage.render_controller(CP, CLOUD, files, KEY, server)
    data = {name: base64.b64decode(value) for name, value in secret["data"].items()}
    assert data[storage.KEY_FILE] == KEY
    kubeconfig = yaml.safe_load(data[storage.KUBECONFIG_FILE])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == server
    assert kubeconfig["users"][0]["name"] == "flexplane:csi-controller"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    named = containers(deployment)
    assert set(named) == {
        "csi-controller",
        "csi-provisioner",
        "csi-attacher",
        "csi-resizer",
        "csi-snapshotter",
        "snapshot-controller",
    }
    controller = named["csi-controller"]
    assert controller["command"] == ["python", "-m", "providers.csi", "controller"]
    assert env(controller)["FLEXPLANE_CSI_VDC"] == "demo"
    assert env(controller)["FLEXPLANE_URL"] == CLOUD.url
    for name in ("csi-provisioner", "csi-attacher", "csi-resizer", "csi-snapshotter"):
        assert "--csi-address=/csi/csi.sock" in named[name]["args"]
        assert f"--kubeconfig={storage.CONTROLLER_DIR}/{storage.KUBECONFIG_FILE}" in named[name]["args"]
        assert named[name]["image"].startswith("registry.k8s.io/sig-storage/")
    assert "--feature-gates=Topology=true" in named["csi-provisioner"]["args"]
    # The snapshot-controller is the tenant cluster's, not the driver's: it reaches the API server only.
    snapshot_controller = named["snapshot-controller"]
    assert snapshot_controller["image"] == "registry.k8s.io/sig-storage/snapshot-controller:v8.4.0"
    assert f"--kubeconfig={storage.CONTROLLER_DIR}/{storage.KUBECONFIG_FILE}" in snapshot_controller["args"]
    assert "--leader-election-namespace=kube-system" in snapshot_controller["args"]
    assert not [a for a in snapshot_controller["args"] if a.startswith("--csi-address")]
    assert [m["name"] for m in snapshot_controller["volumeMounts"]] == [storage.CONTROLLER]
    assert invalid([secret, deployment], minor(CP.version)) == []


def test_a_moved_registry_serves_the_sidecars_under_the_same_paths() -> None:
    moved = dataclasses.replace(CP, registry="mirror.example.test/k8s")
    _, deployment = storage.render_controller(
        moved, CLOUD, pki.ensure_pki({}, CP.names), KEY, "https://x:6443"
    )
    images = {c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert {
        "mirror.example.test/k8s/sig-storage/csi-provisioner:v5.3.0",
        "mirror.example.test/k8s/sig-storage/csi-snapshotter:v8.4.0",
        "mirror.example.test/k8s/sig-storage/snapshot-controller:v8.4.0",
    } <= images


def test_the_provider_knows_where_each_manifest_it_installs_lives() -> None:
    """Every kind the tenant install and the controller render has its API path (``kube.RESOURCES``): a kind
    missing there fails every reconcile of a cluster with storage."""
    files = pki.ensure_pki({}, CP.names)
    rendered = [
        *tenant.tenant_manifests(CP, CA),
        *storage.render_controller(CP, CLOUD, files, KEY, "https://x:6443"),
    ]
    for manifest in rendered:
        assert manifest_path(manifest).startswith(("/api/v1/", "/apis/")), manifest["kind"]


# ---------------------------------------------------------------------------------------------- snapshots


def test_the_snapshot_api_is_its_three_v1_kinds_approved_with_a_status_where_the_controllers_write_one() -> (
    None
):
    crds = {crd["spec"]["names"]["kind"]: crd for crd in snapshots.crds()}
    assert set(crds) == {"VolumeSnapshotClass", "VolumeSnapshotContent", "VolumeSnapshot"}
    for kind, crd in crds.items():
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.snapshot.storage.k8s.io"
        assert spec["group"] == "snapshot.storage.k8s.io"
        # A k8s.io group's CRD says where Kubernetes approved its API, or the API server refuses it.
        assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"].startswith("https://")
        (version,) = spec["versions"]
        assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
        assert ("status" in version.get("subresources", {})) == (kind != "VolumeSnapshotClass")
        assert not_structural(version["schema"]["openAPIV3Schema"]) == [], kind
    assert crds["VolumeSnapshot"]["spec"]["scope"] == "Namespaced"
    assert crds["VolumeSnapshotContent"]["spec"]["scope"] == "Cluster"
    assert crds["VolumeSnapshotClass"]["spec"]["scope"] == "Cluster"
    assert invalid(snapshots.crds(), minor(CP.version)) == []


def test_the_drivers_snapshot_class_is_the_default_deletes_its_copies_and_comes_after_its_crd() -> None:
    manifests = storage.tenant_manifests(CP)
    (snapshot_class,) = of_kind(manifests, "VolumeSnapshotClass")
    assert (snapshot_class["driver"], snapshot_class["deletionPolicy"]) == (DRIVER, "Delete")
    assert snapshot_class["metadata"]["annotations"] == {
        "snapshot.storage.kubernetes.io/is-default-class": "true"
    }
    crd = next(
        m for m in manifests if m["metadata"]["name"] == "volumesnapshotclasses.snapshot.storage.k8s.io"
    )
    assert manifests.index(crd) < manifests.index(snapshot_class)


# A VolumeSnapshot and its VolumeSnapshotContent as the snapshot-controller and the csi-snapshotter leave them
# once the snapshot is taken (every field of their status the API's types have).
TAKEN_SNAPSHOT: dict[str, Any] = {
    "apiVersion": "snapshot.storage.k8s.io/v1",
    "kind": "VolumeSnapshot",
    "metadata": {
        "name": "before-upgrade",
        "namespace": "db",
        "finalizers": ["snapshot.storage.kubernetes.io/x"],
    },
    "spec": {"source": {"persistentVolumeClaimName": "data"}, "volumeSnapshotClassName": "flexplane"},
    "status": {
        "boundVolumeSnapshotContentName": "snapcontent-1",
        "creationTime": "2026-12-01T10:00:00Z",
        "readyToUse": True,
        "restoreSize": "12Gi",
        "error": {"message": "detach it first", "time": "2026-12-01T09:59:00Z"},
        "volumeGroupSnapshotName": "",
    },
}
TAKEN_CONTENT: dict[str, Any] = {
    "apiVersion": "snapshot.storage.k8s.io/v1",
    "kind": "VolumeSnapshotContent",
    "metadata": {
        "name": "snapcontent-1",
        "annotations": {"snapshot.storage.kubernetes.io/deletion-secret-name": "x"},
    },
    "spec": {
        "deletionPolicy": "Delete",
        "driver": DRIVER,
        "source": {"volumeHandle": "zone-a/4242"},
        "sourceVolumeMode": "Filesystem",
        "volumeSnapshotClassName": "flexplane",
        "volumeSnapshotRef": {
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshot",
            "name": "before-upgrade",
            "namespace": "db",
            "resourceVersion": "1234",
            "uid": "5f0c2a4e-0000-4000-8000-000000000001",
        },
    },
    "status": {
        "creationTime": 1_796_119_200_000_000_000,
        "readyToUse": True,
        "restoreSize": 12 * 1024**3,
        "snapshotHandle": "zone-a/4343",
        "error": {"message": "copying", "time": "2026-12-01T09:59:00Z"},
        "volumeGroupSnapshotHandle": "",
    },
}


@pytest.mark.parametrize(
    "body", [TAKEN_SNAPSHOT, TAKEN_CONTENT], ids=["VolumeSnapshot", "VolumeSnapshotContent"]
)
def test_all_that_the_snapshot_controllers_write_is_declared_so_none_of_it_is_pruned(
    body: dict[str, Any],
) -> None:
    schema = crd_schemas(snapshots.crds())[body["apiVersion"], body["kind"]]
    assert refused_by(schema, body) == []
    assert undeclared(schema, body) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**TAKEN_SNAPSHOT, "spec": {"volumeSnapshotClassName": "flexplane"}}, "source"),
        ({**TAKEN_CONTENT, "spec": {**TAKEN_CONTENT["spec"], "deletionPolicy": "Forget"}}, "deletionPolicy"),
        ({**TAKEN_CONTENT, "status": {"restoreSize": -1}}, "restoreSize"),
        ({**snapshots.snapshot_class(), "driver": None}, "driver"),
    ],
)
def test_the_schemas_refuse_what_the_api_does_not_allow(body: dict[str, Any], field: str) -> None:
    schema = crd_schemas(snapshots.crds())[body["apiVersion"], body["kind"]]
    assert [refusal for refusal in refused_by(schema, body) if field in refusal]
