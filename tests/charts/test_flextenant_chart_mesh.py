"""The flextenant chart's mesh: the mesh control server's Deployment, its UDP Service and NetworkPolicy,
on by default (direct mutual TLS is the explicit opt-out); the orchestrator and the hub given the same
mesh settings; the hub's own account; the hub's CONNECT proxy, which the orchestrator's pods (no route to
the mesh's range) reach the agents through."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest

from tests.charts.kit import env_of as container_env
from tests.charts.kit import loaded, sole_container
from tests.charts.test_flextenant_chart import (
    CHART,
    NAMESPACE,
    RELEASE,
    REQUIRED,
    Manifest,
    invalid,
    manifests,
    named,
    render,
    render_exactly,
)

MESH = {
    "mesh": {"enabled": True, "hubEndpoint": "203.0.113.7:51820", "range": "10.99.0.0/22", "keepalive": 20},
    "networkPolicy": {
        "enabled": True,
        "egress": {
            "enabled": True,
            "kubeAPI": {"cidrs": ["10.0.0.1/32"]},
            "identity": {"to": [{"ipBlock": {"cidr": "198.51.100.10/32"}}]},
            "agents": {"cidrs": ["10.99.0.0/22"]},  # the agents at their mesh addresses
        },
    },
}
HUB = f"{RELEASE}-flextenant-mesh"
PROXY = f"{RELEASE}-flextenant-mesh-proxy"
ORCHESTRATOR = f"{RELEASE}-flextenant"


chart = loaded(CHART)


@pytest.fixture(scope="module")
def meshed(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render(chart, MESH))


def env_of(deployment: Manifest) -> dict[str, Any]:
    return container_env(sole_container(deployment["spec"]["template"]["spec"]))


def test_the_mesh_is_on_by_default_and_the_orchestrator_enrolls_nodes_on_it(chart: helm_python.Chart) -> None:
    default = manifests(render(chart, {}))
    assert named(default, "Deployment", HUB)
    orchestrator = env_of(named(default, "Deployment", ORCHESTRATOR))
    assert orchestrator["FLEXPLANE_MESH_RANGE"] == "10.99.0.0/22"
    assert orchestrator["FLEXPLANE_MESH_HUB_ENDPOINT"] == REQUIRED["mesh"]["hubEndpoint"]
    assert orchestrator["FLEXPLANE_MESH_PROXY"] == f"http://{PROXY}.{NAMESPACE}.svc:3128"


def test_direct_mutual_tls_is_the_explicit_opt_out_and_the_orchestrator_then_enrolls_nodes_off_the_mesh(
    chart: helm_python.Chart,
) -> None:
    direct = manifests(render(chart, {"mesh": {"enabled": False, "hubEndpoint": ""}}))
    assert invalid(direct) == []
    assert not [m for m in direct if m["metadata"]["name"] in (HUB, PROXY)]
    orchestrator = named(direct, "Deployment", ORCHESTRATOR)
    assert env_of(orchestrator)["FLEXPLANE_MESH_RANGE"] == ""
    assert env_of(orchestrator)["FLEXPLANE_MESH_PROXY"] == ""


def test_the_hub_runs_as_its_own_account_that_reads_its_key_and_the_catalog_only(
    meshed: list[Manifest],
) -> None:
    spec = named(meshed, "Deployment", HUB)["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == HUB
    assert named(meshed, "ServiceAccount", HUB)["automountServiceAccountToken"] is False
    binding = named(meshed, "RoleBinding", HUB)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": HUB, "namespace": NAMESPACE}]
    assert binding["roleRef"]["name"] == HUB
    rules = named(meshed, "Role", HUB)["rules"]
    assert rules == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["flexplane-mesh-hub"],
            "verbs": ["get"],
        },
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "update"]},
    ]
    # Its fence admits its key's Secret and the mesh peers only (tests/charts/test_rbac.py evaluates it).
    assert named(meshed, "ValidatingAdmissionPolicyBinding", f"{HUB}-fence")["spec"]["validationActions"] == [
        "Deny"
    ]


def test_the_mesh_renders_valid_manifests(meshed: list[Manifest]) -> None:
    assert invalid(meshed) == []


def test_the_hub_is_one_replica_recreated_with_net_admin_only(meshed: list[Manifest]) -> None:
    hub = named(meshed, "Deployment", HUB)
    assert hub["spec"]["replicas"] == 1
    assert hub["spec"]["strategy"] == {"type": "Recreate"}
    (container,) = hub["spec"]["template"]["spec"]["containers"]
    assert container["command"][-1] == "mesh_hub"
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["NET_ADMIN"]}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["ports"] == [
        {"name": "wireguard", "containerPort": 51820, "protocol": "UDP"},
        {"name": "proxy", "containerPort": 3128, "protocol": "TCP"},
    ]


def test_the_orchestrator_and_the_hub_share_the_mesh_settings(meshed: list[Manifest]) -> None:
    hub = env_of(named(meshed, "Deployment", HUB))
    orchestrator = env_of(named(meshed, "Deployment", f"{RELEASE}-flextenant"))
    for name in ("FLEXPLANE_MESH_RANGE", "FLEXPLANE_MESH_HUB_ENDPOINT", "FLEXPLANE_MESH_HUB_SECRET"):
        assert hub[name] == orchestrator[name]
    assert (hub["FLEXPLANE_MESH_RANGE"], hub["FLEXPLANE_MESH_HUB_ENDPOINT"]) == (
        "10.99.0.0/22",
        "203.0.113.7:51820",
    )
    assert hub["FLEXPLANE_MESH_KEEPALIVE"] == "20"


def test_nodes_reach_the_hub_on_udp_only(meshed: list[Manifest]) -> None:
    service = named(meshed, "Service", HUB)
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["ports"] == [
        {"name": "wireguard", "port": 51820, "targetPort": "wireguard", "protocol": "UDP"}
    ]
    policy = named(meshed, "NetworkPolicy", HUB)
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "mesh"
    udp, _ = policy["spec"]["ingress"]
    assert udp == {"ports": [{"port": "wireguard", "protocol": "UDP"}]}
    assert "TCP" not in {port["protocol"] for rule in policy["spec"]["egress"][2:] for port in rule["ports"]}


@pytest.mark.parametrize("endpoint", ["", "203.0.113.7", "hub.example.com:"])
def test_a_mesh_without_the_hubs_public_endpoint_is_refused_by_the_schema(
    chart: helm_python.Chart, endpoint: str
) -> None:
    values = {**REQUIRED, "mesh": {"hubEndpoint": endpoint}}
    with pytest.raises(helm_python.HelmValuesError, match=r"mesh/hubEndpoint"):
        render_exactly(chart, values)


def test_the_orchestrator_dials_the_agents_through_the_hubs_proxy_inside_the_cluster(
    meshed: list[Manifest],
) -> None:
    assert env_of(named(meshed, "Deployment", ORCHESTRATOR))["FLEXPLANE_MESH_PROXY"] == (
        f"http://{PROXY}.{NAMESPACE}.svc:3128"
    )
    service = named(meshed, "Service", PROXY)
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "mesh"
    assert service["spec"]["ports"] == [
        {"name": "proxy", "port": 3128, "targetPort": "proxy", "protocol": "TCP"}
    ]
    hub = named(meshed, "Deployment", HUB)
    (container,) = hub["spec"]["template"]["spec"]["containers"]
    # On the pod's own address: not on the mesh's side, where nodes could use it.
    assert "--proxy-listen=$(POD_IP):3128" in container["args"]
    assert env_of(hub)["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert container["readinessProbe"]["tcpSocket"] == {"port": "proxy"}
    assert container["livenessProbe"]["tcpSocket"] == {"port": "proxy"}
    # The orchestrator's pods need nothing of the mesh: no capability, no route.
    (orchestrator,) = named(meshed, "Deployment", ORCHESTRATOR)["spec"]["template"]["spec"]["containers"]
    assert "add" not in orchestrator["securityContext"].get("capabilities", {})


def test_only_the_orchestrators_pods_reach_the_proxy(meshed: list[Manifest]) -> None:
    def pods(component: str) -> dict[str, str]:
        return {
            "app.kubernetes.io/name": "flextenant",
            "app.kubernetes.io/instance": RELEASE,
            "app.kubernetes.io/component": component,
        }

    orchestrator_pods = pods("orchestrator")
    _, proxy = named(meshed, "NetworkPolicy", HUB)["spec"]["ingress"]
    # The orchestrator's, and the gateway reconciler's, which calls the agents as the orchestrator does.
    assert proxy == {
        "ports": [{"port": "proxy", "protocol": "TCP"}],
        "from": [
            {"podSelector": {"matchLabels": orchestrator_pods}},
            {"podSelector": {"matchLabels": pods("gateways")}},
        ],
    }
    # With egress restricted, the orchestrator's pods may reach the proxy too (policies add up).
    egress = named(meshed, "NetworkPolicy", PROXY)["spec"]
    assert egress["podSelector"]["matchLabels"] == orchestrator_pods
    assert egress["policyTypes"] == ["Egress"]
    (rule,) = egress["egress"]
    assert rule["ports"] == [{"port": 3128, "protocol": "TCP"}]
    assert rule["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "mesh"


def test_the_cluster_api_providers_pods_are_admitted_to_the_proxy_when_named(
    chart: helm_python.Chart,
) -> None:
    providers = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "providers"}}}
    values = {**MESH, "mesh": {**MESH["mesh"], "proxy": {"clients": [providers]}}}
    rendered = manifests(render(chart, values))
    assert invalid(rendered) == []
    _, proxy = named(rendered, "NetworkPolicy", HUB)["spec"]["ingress"]
    assert proxy["from"][-1] == providers
    assert len(proxy["from"]) == 3


def test_the_orchestrators_egress_is_not_narrowed_when_the_chart_does_not_restrict_it(
    chart: helm_python.Chart,
) -> None:
    values = {**MESH, "networkPolicy": {"enabled": True}}
    rendered = manifests(render(chart, values))
    assert not [m for m in rendered if m["kind"] == "NetworkPolicy" and m["metadata"]["name"] == PROXY]
    _, proxy = named(rendered, "NetworkPolicy", HUB)["spec"]["ingress"]
    assert proxy["ports"] == [{"port": "proxy", "protocol": "TCP"}]


def test_the_proxy_can_be_turned_off_for_orchestrators_that_route_the_mesh_themselves(
    chart: helm_python.Chart,
) -> None:
    values = {**MESH, "mesh": {**MESH["mesh"], "proxy": {"enabled": False}}}
    rendered = manifests(render(chart, values))
    assert invalid(rendered) == []
    assert not [m for m in rendered if m["metadata"]["name"] == PROXY]
    assert env_of(named(rendered, "Deployment", ORCHESTRATOR))["FLEXPLANE_MESH_PROXY"] == ""
    (container,) = named(rendered, "Deployment", HUB)["spec"]["template"]["spec"]["containers"]
    assert not [arg for arg in container["args"] if arg.startswith("--proxy-listen")]
    assert named(rendered, "NetworkPolicy", HUB)["spec"]["ingress"] == [
        {"ports": [{"port": "wireguard", "protocol": "UDP"}]}
    ]
