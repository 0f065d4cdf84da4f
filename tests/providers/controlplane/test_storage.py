"""The CSI driver installed with a tenant cluster (providers/controlplane/storage.py): the tenant's half
validates against every offered Kubernetes version's schemas and holds what the driver's design says; the
controller's half beside the control plane runs the controller as the cluster's service account with its
sidecars reaching the tenant's API server with their own certificate; the provider deploys the controller
only where the cluster has storage profiles and the providers know flex.plane's URL and hold its key."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest
import yaml

from devstack.seed import KUBERNETES_VERSIONS
from providers.controlplane import model, pki, render, storage, tenant
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


@pytest.mark.parametrize("version", OFFERED)
def test_the_tenant_install_with_storage_validates_against_the_schemas_of_every_offered_version(
    version: str,
) -> None:
    manifests = tenant.tenant_manifests(dataclasses.replace(CP, version=version), CA)
    assert of_kind(manifests, "CSIDriver")
    assert invalid(manifests, minor(version)) == []


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
    assert set(named) == {"csi-controller", "csi-provisioner", "csi-attacher", "csi-resizer"}
    controller = named["csi-controller"]
    assert controller["command"] == ["python", "-m", "providers.csi", "controller"]
    assert env(controller)["FLEXPLANE_CSI_VDC"] == "demo"
    assert env(controller)["FLEXPLANE_URL"] == CLOUD.url
    for name in ("csi-provisioner", "csi-attacher", "csi-resizer"):
        assert "--csi-address=/csi/csi.sock" in named[name]["args"]
        assert f"--kubeconfig={storage.CONTROLLER_DIR}/{storage.KUBECONFIG_FILE}" in named[name]["args"]
        assert named[name]["image"].startswith("registry.k8s.io/sig-storage/")
    assert "--feature-gates=Topology=true" in named["csi-provisioner"]["args"]
    assert invalid([secret, deployment], minor(CP.version)) == []


def test_a_moved_registry_serves_the_sidecars_under_the_same_paths() -> None:
    moved = dataclasses.replace(CP, registry="mirror.example.test/k8s")
    _, deployment = storage.render_controller(
        moved, CLOUD, pki.ensure_pki({}, CP.names), KEY, "https://x:6443"
    )
    images = {c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert "mirror.example.test/k8s/sig-storage/csi-provisioner:v5.3.0" in images


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
