"""An air-gapped mirror: FLEXPLANE_PROVIDERS_IMAGE_REGISTRY moves every image a hosted control plane runs
(etcd, kube-apiserver, controller-manager, scheduler, Konnectivity's server) and every image the provider
installs in the tenant cluster (Konnectivity's agents, CoreDNS, kube-proxy, Cilium, kubeadm's
imageRepository), keeping each image's path and tag.

The management cluster is the devstack's Kubernetes emulator: the provider's own reconcile writes the
Deployment and the etcd StatefulSet, and the test reads them back as the cluster would run them.
"""

from __future__ import annotations

from typing import Any

import kopf
import pytest
import yaml

from orchestrator.services.clusters import objects
from orchestrator.sources.kube_objects import CLUSTER
from providers.common.objects import owner_reference_to
from providers.controlplane import handlers, model, network, pki, steps, tenant
from providers.controlplane.kube import Kube
from tests import addresses

MIRROR = "registry.example.internal"
SETTINGS = steps.Settings(image_registry=MIRROR)
VDC_NS = "vdc-mirror"
CP_NS = "fpcp-mirror-web"
LB_ADDRESS = f"127.{addresses.WORLD}.206.1"  # only written into the Service's status: nothing listens
VERSION = "v1.34.2"
# What the control plane runs, as paths and tags under the registry: unchanged by the move.
CONTROL_PLANE_IMAGES = {
    "kube-apiserver": f"kube-apiserver:{VERSION}",
    "kube-controller-manager": f"kube-controller-manager:{VERSION}",
    "kube-scheduler": f"kube-scheduler:{VERSION}",
    "konnectivity-server": model.KONNECTIVITY_SERVER_IMAGE,
    "etcd": model.ETCD_IMAGE,
}


def pod_images(manifest: dict[str, Any]) -> dict[str, str]:
    """Every container's and init container's image of a workload's pod template, by container name."""
    pod = manifest["spec"]["template"]["spec"]
    return {c["name"]: c["image"] for c in [*pod.get("initContainers", []), *pod["containers"]]}


def workloads(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] in {"Deployment", "StatefulSet", "DaemonSet"}]


@pytest.fixture(scope="module")
def rendered(kube: Kube) -> list[dict[str, Any]]:
    """The control plane's Deployment and etcd StatefulSet, as the provider's reconcile wrote them."""
    plan = objects.ClusterPlan("mirror", "web", VERSION, "debian-12", "net-1", 2, ())
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VDC_NS}})
    made = {}
    for resource, body in objects.all_objects(plan):
        body["metadata"]["namespace"] = VDC_NS
        made[resource.kind] = kube.ensure(body)
    owner = owner_reference_to(made["Cluster"], CLUSTER)
    kube.patch(steps.FCP_API, "FlexControlPlane", "web", VDC_NS, {"metadata": {"ownerReferences": [owner]}})
    with pytest.raises(steps.Waiting):  # the Service is made; it waits for its address
        steps.reconcile(kube, fcp(kube), SETTINGS)
    ingress = {"loadBalancer": {"ingress": [{"ip": LB_ADDRESS}]}}
    kube.patch("v1", "Service", "kube-apiserver", CP_NS, {"status": ingress}, subresource="status")
    outcome = steps.reconcile(kube, fcp(kube), SETTINGS)
    assert outcome is not None
    deployment = kube.get("apps/v1", "Deployment", model.DEPLOYMENT, CP_NS)
    statefulset = kube.get("apps/v1", "StatefulSet", model.ETCD, CP_NS)
    assert deployment is not None
    assert statefulset is not None
    return [deployment, statefulset]


def fcp(kube: Kube) -> dict[str, Any]:
    found = kube.get(steps.FCP_API, "FlexControlPlane", "web", VDC_NS)
    assert found is not None
    return found


def test_every_control_plane_image_comes_from_the_mirror_with_its_path_and_tag(
    rendered: list[dict[str, Any]],
) -> None:
    images = {name: image for workload in rendered for name, image in pod_images(workload).items()}
    assert images == {name: f"{MIRROR}/{path}" for name, path in CONTROL_PLANE_IMAGES.items()}


def test_what_the_provider_installs_in_the_tenant_cluster_comes_from_the_mirror_too(kube: Kube) -> None:
    cluster = kube.get(CLUSTER.api_version, CLUSTER.kind, "web", VDC_NS)
    assert cluster is not None
    cp = steps.control_plane(fcp(kube), cluster, SETTINGS)
    manifests = tenant.tenant_manifests(cp, pki.new_ca("kubernetes").cert_pem)
    images = {
        name: image for workload in workloads(manifests) for name, image in pod_images(workload).items()
    }
    assert images == {
        "konnectivity-agent": f"{MIRROR}/{model.KONNECTIVITY_AGENT_IMAGE}",
        "coredns": f"{MIRROR}/{tenant.COREDNS_IMAGE}",
        "kube-proxy": f"{MIRROR}/kube-proxy:{VERSION}",
        # The network plugin's, published on quay.io: the same paths under the mirror.
        **dict.fromkeys(
            ["mount-bpf-fs", "clean-cilium-state", "install-cni-binaries", "cilium"],
            f"{MIRROR}/cilium/cilium:{network.CILIUM_RELEASES[(1, 34)]}",
        ),
        "cilium-operator": f"{MIRROR}/cilium/operator-generic:{network.CILIUM_RELEASES[(1, 34)]}",
    }
    (kubeadm,) = [m for m in manifests if m["metadata"]["name"] == "kubeadm-config"]
    # kubeadm join pulls what it needs (the sandbox image's default) from the same registry.
    assert yaml.safe_load(kubeadm["data"]["ClusterConfiguration"])["imageRepository"] == MIRROR


def test_without_the_setting_the_images_come_from_registry_k8s_io(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLEXPLANE_PROVIDERS_IMAGE_REGISTRY", raising=False)
    assert handlers.settings().image_registry == "registry.k8s.io"


@pytest.mark.parametrize(
    ("value", "registry"),
    [
        ("registry.example.internal", "registry.example.internal"),
        ("registry.example.internal:5000/", "registry.example.internal:5000"),
        ("mirror.example.internal/registry.k8s.io", "mirror.example.internal/registry.k8s.io"),
    ],
)
def test_the_provider_reads_the_registry_from_its_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, registry: str
) -> None:
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_IMAGE_REGISTRY", value)
    assert handlers.settings().image_registry == registry


@pytest.mark.parametrize(
    "value", ["https://registry.example.internal", "registry.example.internal/etcd@sha256:00", "a b"]
)
def test_a_registry_that_is_no_registry_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_IMAGE_REGISTRY", value)
    with pytest.raises(kopf.PermanentError, match="FLEXPLANE_PROVIDERS_IMAGE_REGISTRY must be a registry"):
        handlers.settings()
