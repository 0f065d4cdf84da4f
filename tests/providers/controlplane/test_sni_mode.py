"""``serviceType: SNI``: the control plane behind the SNI router, at ``<cluster>.<vdc>.<domain>`` on the
router's port, its Service a ClusterIP naming its host names for the router.

What it renders (pure), then one reconcile against the devstack's Kubernetes emulator. That a client
reaches the API server and Konnectivity through the router with these names and certificates is
``tests/providers/sni/test_router.py``'s.
"""

from __future__ import annotations

import base64
import dataclasses
from importlib import metadata
from typing import Any

import kopf
import pytest
import yaml
from cryptography import x509

from orchestrator.services.clusters import objects
from orchestrator.sources.kube_objects import CLUSTER
from providers.common.objects import owner_reference_to
from providers.controlplane import handlers, model, pki, render, steps, tenant
from providers.controlplane.kube import Kube
from tests.kubeschema import invalid

DOMAIN = "k8s.example.test"
SETTINGS = steps.Settings(sni_domain=DOMAIN, sni_port=7443)
HOST = f"web.demo.{DOMAIN}"
KONNECTIVITY = f"konnectivity.web.demo.{DOMAIN}"
CP = model.ControlPlane(
    "demo",
    "web",
    "v1.34.2",
    service_type=model.SNI,
    endpoint_host=HOST,
    endpoint_port=7443,
    konnectivity_port=7443,
    konnectivity_host=KONNECTIVITY,
)


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return pki.ensure_pki({}, CP.names)


def sans(pem: bytes) -> tuple[set[str], set[str]]:
    return pki.san_names(x509.load_pem_x509_certificate(pem))


def flags(args: list[str]) -> dict[str, str]:
    return dict(arg.partition("=")[::2] for arg in args)


# ------------------------------------------------------------------------------------ rendering


def test_the_host_names_are_the_cluster_and_its_vdc_under_the_domain() -> None:
    assert model.sni_hosts("demo", "web", "K8s.Example.Test.") == (HOST, KONNECTIVITY)


def test_the_service_is_a_cluster_ip_naming_both_hosts_for_the_router() -> None:
    service = render.render_service(CP)
    assert service["spec"]["type"] == "ClusterIP"
    assert service["metadata"]["annotations"] == {
        model.APISERVER_HOST_ANNOTATION: HOST,
        model.KONNECTIVITY_HOST_ANNOTATION: KONNECTIVITY,
    }
    ports = {p["name"]: (p["port"], p["targetPort"]) for p in service["spec"]["ports"]}
    assert ports == {"https": (6443, 6443), "konnectivity": (8132, 8132)}
    assert all("nodePort" not in p for p in service["spec"]["ports"])


def test_every_manifest_of_the_sni_mode_validates_against_the_kubernetes_schema(
    files: dict[str, bytes],
) -> None:
    manifests = [
        render.render_namespace(CP),
        render.render_service(CP),
        *render.management_manifests(CP, files),
        *render.vdc_secrets(CP, files, "vdc-demo"),
        *tenant.tenant_manifests(CP, files["ca.crt"]),
    ]
    assert invalid(manifests) == []


def test_the_api_servers_certificate_names_its_host_and_konnectivitys_its_own(
    files: dict[str, bytes],
) -> None:
    apiserver_dns, _ = sans(files["apiserver.crt"])
    konnectivity_dns, _ = sans(files["konnectivity-server.crt"])
    assert HOST in apiserver_dns
    assert KONNECTIVITY not in apiserver_dns
    assert {KONNECTIVITY, HOST} <= konnectivity_dns


def test_a_konnectivity_name_added_later_reissues_only_konnectivitys_certificate() -> None:
    before = pki.ensure_pki({}, model.ControlPlane("demo", "web", "v1.34.2", endpoint_host=HOST).names)
    after = pki.ensure_pki(before, CP.names)
    changed = {name for name in after if after[name] != before[name]}
    assert changed == {"konnectivity-server.crt", "konnectivity-server.key"}


def test_the_agents_dial_konnectivitys_name_on_the_routers_port() -> None:
    args = flags(tenant.konnectivity_agent_args(CP))
    assert (args["--proxy-server-host"], args["--proxy-server-port"]) == (KONNECTIVITY, "7443")


def test_kubelets_kube_proxy_and_the_admin_reach_the_api_server_by_its_name_on_the_routers_port(
    files: dict[str, bytes],
) -> None:
    url = f"https://{HOST}:7443"
    assert tenant.kubeadm_config(CP)["controlPlaneEndpoint"] == f"{HOST}:7443"
    assert tenant.kube_proxy_kubeconfig(CP)["clusters"][0]["cluster"]["server"] == url
    kubeconfig = render.vdc_secrets(CP, files, "vdc-demo")[0]
    config = yaml.safe_load(pki.admin_kubeconfig(files, cluster="web", server=url))
    assert kubeconfig["data"]["value"] == model.b64(pki.dump(config))


def test_the_api_server_listens_on_6443_and_advertises_the_node_local_address() -> None:
    args = flags(render.apiserver_args(CP))
    assert args["--secure-port"] == "6443"
    # The tenant's kubernetes Service leads there: each node's proxy (providers.sni.nodelocal).
    assert args["--advertise-address"] == model.NODE_LOCAL_ADDRESS == CP.node_local_address


def node_local_proxy() -> dict[str, Any]:
    (daemonset,) = [
        m
        for m in tenant.tenant_manifests(CP, b"ca")
        if m["kind"] == "DaemonSet" and m["metadata"]["name"] == model.NODE_LOCAL_PROXY
    ]
    return daemonset


def test_every_node_runs_the_proxy_that_holds_that_address_and_names_the_cluster_to_the_router() -> None:
    pod = node_local_proxy()["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["tolerations"] == [{"operator": "Exists"}]  # before the CNI, on every node
    assert pod["dnsPolicy"] == "Default"  # the node's DNS: CoreDNS needs this path first
    assert pod["automountServiceAccountToken"] is False
    (hold,) = pod["initContainers"]
    (proxy,) = pod["containers"]
    env = {e["name"]: e["value"] for e in proxy["env"]}
    assert env["FLEXPLANE_NODE_LOCAL_LISTEN"] == f"{model.NODE_LOCAL_ADDRESS}:6443"
    assert env["FLEXPLANE_NODE_LOCAL_UPSTREAM"] == f"{HOST}:7443"
    assert env["FLEXPLANE_NODE_LOCAL_INTERFACE"] == model.NODE_LOCAL_INTERFACE
    assert "FLEXPLANE_NODE_LOCAL_NAME" not in env  # the upstream's host is the name asked for
    assert proxy["command"] == ["python", "-m", "providers.sni.nodelocal"]
    assert hold["command"] == [*proxy["command"], "hold"]
    # Only the init container may change the node's interfaces; the proxy runs with no capability.
    assert hold["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["NET_ADMIN"]}
    assert proxy["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert proxy["securityContext"]["runAsNonRoot"] is True
    assert proxy["readinessProbe"]["tcpSocket"] == {"host": model.NODE_LOCAL_ADDRESS, "port": 6443}


def test_the_proxys_image_is_flexplanes_own_moved_with_the_registry() -> None:
    version = metadata.version("flexplane")
    assert tenant.flexplane_image(CP) == f"ghcr.io/flexplane/flexplane:{version}"
    moved = dataclasses.replace(CP, registry="mirror.example.test/k8s")
    assert tenant.flexplane_image(moved) == f"mirror.example.test/k8s/flexplane/flexplane:{version}"


def test_a_load_balancer_cluster_gets_no_node_local_proxy() -> None:
    cp = model.ControlPlane("demo", "web", "v1.34.2", endpoint_host="10.20.0.7")
    names = {m["metadata"]["name"] for m in tenant.tenant_manifests(cp, b"ca")}
    assert model.NODE_LOCAL_PROXY not in names


def test_the_endpoint_is_the_clusters_name_and_the_routers_port_for_both() -> None:
    cp = model.ControlPlane("demo", "web", "v1.34.2", service_type=model.SNI)
    assert steps.find_endpoint({}, cp, SETTINGS) == (HOST, 7443, 7443)


def test_without_a_domain_the_sni_mode_waits_and_says_so() -> None:
    cp = model.ControlPlane("demo", "web", "v1.34.2", service_type=model.SNI)
    with pytest.raises(steps.Waiting) as waiting:
        steps.find_endpoint({}, cp, steps.Settings())
    assert waiting.value.reason == "NoSNIDomain"


def test_a_load_balancer_control_plane_carries_no_router_annotation() -> None:
    service = render.render_service(model.ControlPlane("demo", "web", "v1.34.2", endpoint_host="10.20.0.7"))
    assert service["spec"]["type"] == "LoadBalancer"
    assert "annotations" not in service["metadata"]


# ------------------------------------------------------------------------------------ settings


def test_the_domain_and_port_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_SNI_DOMAIN", "K8s.Example.Test.")
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_SNI_PORT", "7443")
    settings = handlers.settings()
    assert (settings.sni_domain, settings.sni_port) == (DOMAIN, 7443)


def test_the_port_defaults_to_443(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLEXPLANE_PROVIDERS_SNI_PORT", raising=False)
    assert handlers.settings().sni_port == 443


def test_the_node_local_address_comes_from_the_environment_else_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS", raising=False)
    assert handlers.settings().sni_node_address == model.NODE_LOCAL_ADDRESS
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS", "192.168.255.1")
    assert handlers.settings().sni_node_address == "192.168.255.1"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FLEXPLANE_PROVIDERS_SNI_DOMAIN", "https://k8s.example.test"),
        ("FLEXPLANE_PROVIDERS_SNI_DOMAIN", "k8s..example.test"),
        ("FLEXPLANE_PROVIDERS_SNI_DOMAIN", "*.example.test"),
        ("FLEXPLANE_PROVIDERS_SNI_PORT", "0"),
        ("FLEXPLANE_PROVIDERS_SNI_PORT", "https"),
        ("FLEXPLANE_PROVIDERS_SNI_PORT", "70000"),
        # Kubernetes refuses these as an endpoint's address.
        ("FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS", "169.254.20.10"),
        ("FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS", "127.0.0.2"),
        ("FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS", "fd00::1"),
        ("FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS", "node"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(kopf.PermanentError, match=name):
        handlers.settings()


# ------------------------------------------------------------------------------------ the reconcile

VDC_NS = "vdc-demo"
CP_NS = "fpcp-demo-web"


def made() -> dict[str, dict[str, Any]]:
    plan = objects.ClusterPlan("demo", "web", "v1.34.2", "debian-12", "net-1", 2, ())
    found = {}
    for resource, body in objects.all_objects(plan):
        body["metadata"]["namespace"] = VDC_NS
        found[resource.kind] = body
    found["FlexControlPlane"]["spec"]["serviceType"] = model.SNI
    return found


def test_a_reconcile_in_the_sni_mode_needs_no_load_balancer_and_names_the_endpoint(kube: Kube) -> None:
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VDC_NS}})
    bodies = made()
    kube.ensure(bodies["ProxmoxCluster"])
    cluster = kube.ensure(bodies["Cluster"])
    fcp = bodies["FlexControlPlane"]
    fcp["metadata"]["ownerReferences"] = [owner_reference_to(cluster, CLUSTER)]
    fcp = kube.ensure(fcp)

    outcome = steps.reconcile(kube, fcp, SETTINGS)
    assert outcome is not None
    steps.write(kube, fcp, outcome)

    assert outcome.spec == {"controlPlaneEndpoint": {"host": HOST, "port": 7443}}
    service = kube.get("v1", "Service", model.SERVICE, CP_NS)
    assert service is not None
    assert service["spec"]["type"] == "ClusterIP"
    assert service["metadata"]["annotations"][model.KONNECTIVITY_HOST_ANNOTATION] == KONNECTIVITY
    infra = kube.get(steps.PROXMOX_CLUSTER_API, "ProxmoxCluster", "web", VDC_NS)
    assert infra is not None
    assert infra["spec"]["controlPlaneEndpoint"] == {"host": HOST, "port": 7443}
    secret = kube.get("v1", "Secret", model.PKI_SECRET, CP_NS)
    assert secret is not None
    files = {key: base64.b64decode(value) for key, value in secret["data"].items()}
    assert HOST in sans(files["apiserver.crt"])[0]
    assert KONNECTIVITY in sans(files["konnectivity-server.crt"])[0]


def test_a_second_reconcile_in_the_sni_mode_changes_nothing(kube: Kube) -> None:
    fcp = kube.get(steps.FCP_API, "FlexControlPlane", "web", VDC_NS)
    assert fcp is not None
    before = kube.get("v1", "Service", model.SERVICE, CP_NS)
    outcome = steps.reconcile(kube, fcp, SETTINGS)
    assert outcome is not None
    assert outcome.spec == {}
    after = kube.get("v1", "Service", model.SERVICE, CP_NS)
    assert before is not None
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
