"""The control plane's reconcile against the devstack's Kubernetes emulator, one step of the flow per test.

The management cluster is an emulator over HTTP; the tenant's API server is another, served over TLS
with the serving certificate the provider generated, at the address the test hands the Service as
a LoadBalancer controller would. Nothing runs the pods: the test writes the Deployment's status
as its controller would. The tests run in order, each from where the previous one left the world.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import kmock
import pytest
import yaml

from devstack.kube import KubeServer
from orchestrator.services.clusters import objects
from orchestrator.sources.kube_objects import CLUSTER
from providers.common.objects import owner_reference_to
from providers.controlplane import model, pki, steps
from providers.controlplane.kube import Kube
from tests import addresses

VDC_NS = "vdc-demo"
CP_NS = "fpcp-demo-web"
# The tenant API server's address: the world subnet's, at a third octet of this suite's own.
LB_ADDRESS = f"127.{addresses.WORLD}.205.1"
IMPOSTOR_ADDRESS = f"127.{addresses.WORLD}.205.3"
SETTINGS = steps.Settings()


def written(cluster: str) -> dict[str, dict[str, Any]]:
    """What the tenant API writes for ``cluster`` of VDC demo without node pools (its builders), by kind:
    the ProxmoxCluster, the FlexControlPlane and the Cluster, in the VDC's namespace."""
    plan = objects.ClusterPlan("demo", cluster, "v1.34.2", "debian-12", "net-1", 2, ())
    made = {}
    for resource, body in objects.all_objects(plan):
        body["metadata"]["namespace"] = VDC_NS
        made[resource.kind] = body
    return made


@pytest.fixture(scope="module")
def tenant_server(kube: Kube) -> Iterator[KubeServer]:
    """The tenant's API server, started once the provider made its serving certificate."""
    files = secret_files(kube, CP_NS, "pki")
    with KubeServer.start(LB_ADDRESS, 6443, tls=(files["apiserver.crt"], files["apiserver.key"])) as tenant:
        yield tenant


def secret_files(kube: Kube, namespace: str, name: str) -> dict[str, bytes]:
    secret = kube.get("v1", "Secret", name, namespace)
    assert secret is not None, f"Secret {namespace}/{name}"
    return {key: base64.b64decode(value) for key, value in secret["data"].items()}


def fcp(kube: Kube) -> dict[str, Any]:
    found = kube.get(steps.FCP_API, "FlexControlPlane", "web", VDC_NS)
    assert found is not None
    return found


def reconcile(kube: Kube) -> steps.Outcome:
    current = fcp(kube)
    outcome = steps.reconcile(kube, current, SETTINGS)
    assert outcome is not None, "paused"
    steps.write(kube, current, outcome)
    return outcome


def deployment(kube: Kube) -> dict[str, Any]:
    found = kube.get("apps/v1", "Deployment", model.DEPLOYMENT, CP_NS)
    assert found is not None
    return found


def roll_out(kube: Kube, *, ready: int) -> None:
    """What the Deployment controller would write once the pods of its current spec are ready."""
    current = deployment(kube)
    replicas = current["spec"]["replicas"]
    status = {
        "observedGeneration": current["metadata"]["generation"],
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
    }
    kube.patch("apps/v1", "Deployment", model.DEPLOYMENT, CP_NS, {"status": status}, subresource="status")


def set_spec(kube: Kube, **spec: Any) -> None:
    kube.patch(steps.FCP_API, "FlexControlPlane", "web", VDC_NS, {"spec": spec})


def test_nothing_happens_before_the_owner_cluster_is_there(kube: Kube) -> None:
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VDC_NS}})
    created = kube.ensure(written("web")["FlexControlPlane"])
    with pytest.raises(steps.Waiting) as waiting:
        steps.reconcile(kube, created, SETTINGS)
    assert waiting.value.reason == "WaitingForCluster"
    assert kube.get("v1", "Namespace", CP_NS) is None


def test_with_its_cluster_it_waits_for_the_load_balancers_address(kube: Kube) -> None:
    made = written("web")
    kube.ensure(made["ProxmoxCluster"])
    cluster = kube.ensure(made["Cluster"])
    owner = owner_reference_to(cluster, CLUSTER)
    kube.patch(steps.FCP_API, "FlexControlPlane", "web", VDC_NS, {"metadata": {"ownerReferences": [owner]}})
    with pytest.raises(steps.Waiting) as waiting:
        steps.reconcile(kube, fcp(kube), SETTINGS)
    assert waiting.value.reason == "WaitingForEndpoint"
    namespace = kube.get("v1", "Namespace", CP_NS)
    assert namespace is not None
    assert namespace["metadata"]["labels"]["flexplane.io/control-plane"] == "web"
    service = kube.get("v1", "Service", "kube-apiserver", CP_NS)
    assert service is not None
    assert service["spec"]["type"] == "LoadBalancer"


def test_once_the_service_has_an_address_the_control_plane_is_rendered_around_it(kube: Kube) -> None:
    ingress = {"loadBalancer": {"ingress": [{"ip": LB_ADDRESS}]}}
    kube.patch("v1", "Service", "kube-apiserver", CP_NS, {"status": ingress}, subresource="status")
    outcome = reconcile(kube)
    assert outcome.spec == {"controlPlaneEndpoint": {"host": LB_ADDRESS, "port": 6443}}
    assert fcp(kube)["spec"]["controlPlaneEndpoint"] == {"host": LB_ADDRESS, "port": 6443}
    for kind, name in [
        ("Secret", "pki"),
        ("Secret", "kubeconfigs"),
        ("ConfigMap", "konnectivity"),
        ("Service", "etcd"),
    ]:
        assert kube.get("v1", kind, name, CP_NS) is not None, (kind, name)
    assert kube.get("apps/v1", "StatefulSet", "etcd", CP_NS) is not None
    assert kube.get("policy/v1", "PodDisruptionBudget", model.DEPLOYMENT, CP_NS) is not None
    assert deployment(kube)["spec"]["replicas"] == 2
    _, ips = pki.san_names(
        pki.x509.load_pem_x509_certificate(secret_files(kube, CP_NS, "pki")["apiserver.crt"])
    )
    assert LB_ADDRESS in ips


def test_the_endpoint_reaches_the_proxmox_cluster_and_the_vdc_gets_cluster_apis_secrets(kube: Kube) -> None:
    owner = fcp(kube)["metadata"]["uid"]
    infra = kube.get(steps.PROXMOX_CLUSTER_API, "ProxmoxCluster", "web", VDC_NS)
    assert infra is not None
    assert infra["spec"]["controlPlaneEndpoint"] == {"host": LB_ADDRESS, "port": 6443}
    pki_files = secret_files(kube, CP_NS, "pki")
    assert secret_files(kube, VDC_NS, "web-ca") == {
        "tls.crt": pki_files["ca.crt"],
        "tls.key": pki_files["ca.key"],
    }
    kubeconfig = yaml.safe_load(secret_files(kube, VDC_NS, "web-kubeconfig")["value"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == f"https://{LB_ADDRESS}:6443"
    secret = kube.get("v1", "Secret", "web-kubeconfig", VDC_NS)
    assert secret is not None
    assert secret["type"] == "cluster.x-k8s.io/secret"
    assert secret["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "web"
    assert [ref["uid"] for ref in secret["metadata"]["ownerReferences"]] == [owner]


def test_without_ready_replicas_the_control_plane_is_not_available(kube: Kube) -> None:
    status = fcp(kube)["status"]
    assert status["externalManagedControlPlane"] is True
    assert status["readyReplicas"] == 0
    assert status["selector"] == model.selector_string(model.ControlPlane("demo", "web", "v1.34.2"))
    assert "initialization" not in status
    (available,) = status["conditions"]
    assert (available["type"], available["status"], available["reason"]) == (
        "Available",
        "False",
        "WaitingForReplicas",
    )


def test_when_the_api_server_answers_the_tenant_gets_what_joins_and_konnectivity_need(
    kube: Kube, tenant_server: KubeServer
) -> None:
    roll_out(kube, ready=2)
    reconcile(kube)
    objects = tenant_server.emulator.objects
    cluster_info = objects[kmock.resource("", "v1", "configmaps"), "kube-public", "cluster-info"]
    assert cluster_info is not None
    rbac = "rbac.authorization.k8s.io"
    assert (
        objects[kmock.resource(rbac, "v1", "clusterrolebindings"), None, "flexplane:vdc-admins"] is not None
    )
    assert (
        objects[kmock.resource("apps", "v1", "daemonsets"), "kube-system", "konnectivity-agent"] is not None
    )
    status = fcp(kube)["status"]
    assert status["initialization"] == {"controlPlaneInitialized": True}
    assert status["version"] == "v1.34.2"
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (2, 2, 2)
    assert status["conditions"][0]["status"] == "True"
    assert steps.converged(fcp(kube), status)


def test_a_second_reconcile_reads_each_object_once_and_writes_nothing_anywhere(
    server: KubeServer, kube: Kube, tenant_server: KubeServer
) -> None:
    before = (server.emulator.revision, tenant_server.emulator.revision)
    requests = (len(list(server.emulator)), len(list(tenant_server.emulator)))
    reconcile(kube)
    assert (server.emulator.revision, tenant_server.emulator.revision) == before
    made = (len(list(server.emulator)) - requests[0], len(list(tenant_server.emulator)) - requests[1])
    # One read per object: the FlexControlPlane (the test's), the Cluster, the ProxmoxCluster, the
    # namespace and its nine objects, the VDC's two Secrets, the cloud controller's and the CSI controller's
    # Deployments (none: no flex.plane URL set), the API server's ServiceMonitor (none: the setting is off);
    # and the tenant's /readyz and its Konnectivity agents' DaemonSet.
    assert made == (18, 2)


def test_an_api_server_whose_certificate_another_ca_signed_is_not_trusted(kube: Kube) -> None:
    files = secret_files(kube, CP_NS, "pki")
    cp = model.ControlPlane("demo", "web", "v1.34.2", endpoint_host=IMPOSTOR_ADDRESS)
    impostor = pki.ensure_pki({}, cp.names)
    with KubeServer.start(
        IMPOSTOR_ADDRESS, 6443, tls=(impostor["apiserver.crt"], impostor["apiserver.key"])
    ) as other:
        digest, seen = steps.ensure_tenant_objects(cp, files, installed="")
        assert digest is None
        assert (seen.reason, seen.agents) == ("Unreachable", None)
        assert "CERTIFICATE_VERIFY_FAILED" in seen.message
        with pytest.raises(KeyError):  # nothing was installed there
            other.emulator.objects[kmock.resource("", "v1", "configmaps"), "kube-public", "cluster-info"]


def test_a_restarted_provider_keeps_the_pki(kube: Kube) -> None:
    before = secret_files(kube, CP_NS, "pki")
    reconcile(kube)
    assert secret_files(kube, CP_NS, "pki") == before


def test_a_pki_written_meanwhile_by_another_reconcile_is_not_overwritten(kube: Kube) -> None:
    cluster = kube.get(steps.CLUSTER_API, "Cluster", "web", VDC_NS) or {}
    cp = steps.control_plane(fcp(kube), cluster, SETTINGS)
    read = kube.get("v1", "Secret", "pki", CP_NS)
    assert read is not None
    kube.patch("v1", "Secret", "pki", CP_NS, {"metadata": {"labels": {"touched": "meanwhile"}}})
    before = secret_files(kube, CP_NS, "pki")
    with pytest.raises(steps.Waiting) as waiting:
        steps.write_pki(kube, cp, read, pki.ensure_pki({}, cp.names))
    assert waiting.value.reason == "PKIChanged"
    assert secret_files(kube, CP_NS, "pki") == before
    with pytest.raises(steps.Waiting):
        steps.write_pki(kube, cp, None, pki.ensure_pki({}, cp.names))  # made meanwhile
    assert secret_files(kube, CP_NS, "pki") == before


def test_a_certificate_taken_out_is_reissued_and_the_pods_roll_onto_it(kube: Kube) -> None:
    template = deployment(kube)["spec"]["template"]["metadata"]["annotations"]
    kube.patch("v1", "Secret", "pki", CP_NS, {"data": {"scheduler.crt": None, "scheduler.key": None}})
    reconcile(kube)
    files = secret_files(kube, CP_NS, "pki")
    assert "scheduler.crt" in files
    after = deployment(kube)["spec"]["template"]["metadata"]["annotations"]
    assert after[model.PKI_DIGEST_ANNOTATION] != template[model.PKI_DIGEST_ANNOTATION]
    roll_out(kube, ready=2)
    reconcile(kube)


def test_an_upgrade_rolls_the_images_and_the_status_version_follows_the_rollout(kube: Kube) -> None:
    set_spec(kube, version="v1.35.0")
    reconcile(kube)
    images = {c["name"]: c["image"] for c in deployment(kube)["spec"]["template"]["spec"]["containers"]}
    assert images["kube-apiserver"] == "registry.k8s.io/kube-apiserver:v1.35.0"
    assert images["kube-scheduler"] == "registry.k8s.io/kube-scheduler:v1.35.0"
    assert fcp(kube)["status"]["version"] == "v1.34.2"  # the Deployment has not rolled yet
    roll_out(kube, ready=2)
    reconcile(kube)
    assert fcp(kube)["status"]["version"] == "v1.35.0"


def test_scaling_through_the_scale_subresource_changes_the_deployments_replicas(kube: Kube) -> None:
    scale = kube.request("GET", f"/apis/{steps.FCP_API}/namespaces/{VDC_NS}/flexcontrolplanes/web/scale")
    assert scale is not None
    assert (
        scale["status"]["selector"]
        == "app.kubernetes.io/component=control-plane,flexplane.io/control-plane=web"
    )
    kube.patch(
        steps.FCP_API, "FlexControlPlane", "web", VDC_NS, {"spec": {"replicas": 3}}, subresource="scale"
    )
    reconcile(kube)
    assert deployment(kube)["spec"]["replicas"] == 3
    assert not steps.converged(fcp(kube), fcp(kube)["status"])
    roll_out(kube, ready=3)
    reconcile(kube)
    assert fcp(kube)["status"]["readyReplicas"] == 3


def test_a_paused_control_plane_is_left_alone(server: KubeServer, kube: Kube) -> None:
    kube.patch(
        steps.FCP_API,
        "FlexControlPlane",
        "web",
        VDC_NS,
        {"metadata": {"annotations": {steps.PAUSED_ANNOTATION: ""}}},
    )
    set_spec(kube, replicas=1)
    before = server.emulator.revision
    assert steps.reconcile(kube, fcp(kube), SETTINGS) is None
    assert server.emulator.revision == before
    assert deployment(kube)["spec"]["replicas"] == 3
    kube.patch(
        steps.FCP_API,
        "FlexControlPlane",
        "web",
        VDC_NS,
        {"metadata": {"annotations": {steps.PAUSED_ANNOTATION: None}}},
    )
    set_spec(kube, replicas=3)


def test_deleting_leaves_nothing_of_the_control_plane_even_once_its_owner_reference_is_gone(
    kube: Kube,
) -> None:
    current = fcp(kube)
    current["metadata"]["ownerReferences"] = []
    current["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] = "web"
    assert steps.delete(kube, current, SETTINGS)
    assert kube.get("v1", "Namespace", CP_NS) is None
    assert kube.get("apps/v1", "Deployment", model.DEPLOYMENT, CP_NS) is None
    assert kube.get("v1", "Secret", "pki", CP_NS) is None
    assert kube.get("v1", "Secret", "web-kubeconfig", VDC_NS) is None
    assert kube.get("v1", "Secret", "web-ca", VDC_NS) is None


# ------------------------------------------------------------------------------------ the endpoint, pure


def service(**fields: Any) -> dict[str, Any]:
    ports = [
        {"name": "https", "port": 6443, "nodePort": 31443},
        {"name": "konnectivity", "port": 8132, "nodePort": 31132},
    ]
    return {"spec": {"ports": ports}, **fields}


def test_a_load_balancer_named_by_host_name_is_the_endpoint() -> None:
    cp = model.ControlPlane("demo", "web", "v1.34.2")
    ingress = {"loadBalancer": {"ingress": [{"hostname": "web.lb.example.net"}]}}
    assert steps.find_endpoint(service(status=ingress), cp, SETTINGS) == ("web.lb.example.net", 6443, 8132)


def test_a_node_port_service_is_reached_on_the_configured_address_and_its_node_ports() -> None:
    cp = model.ControlPlane("demo", "web", "v1.34.2", service_type="NodePort")
    settings = steps.Settings(nodeport_address="192.0.2.10")
    assert steps.find_endpoint(service(), cp, settings) == ("192.0.2.10", 31443, 31132)


def test_a_node_port_service_without_the_address_setting_waits_and_says_so() -> None:
    cp = model.ControlPlane("demo", "web", "v1.34.2", service_type="NodePort")
    with pytest.raises(steps.Waiting) as waiting:
        steps.find_endpoint(service(), cp, SETTINGS)
    assert waiting.value.reason == "NoNodePortAddress"
