"""The flexplane chart's mesh: the mesh control server's Deployment, its UDP Service and NetworkPolicy,
off by default; the orchestrator and the hub given the same mesh settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import helm_python
import pytest

from tests.charts.test_flexplane_chart import CHART, RELEASE, Manifest, invalid, manifests, named, render

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
HUB = f"{RELEASE}-flexplane-mesh"


@pytest.fixture(scope="module")
def chart() -> Iterator[helm_python.Chart]:
    with helm_python.Chart.load(CHART) as loaded:
        yield loaded


@pytest.fixture(scope="module")
def meshed(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render(chart, MESH))


def env_of(deployment: Manifest) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in container["env"]}


def test_the_mesh_is_off_by_default_and_the_orchestrator_then_enrolls_nodes_off_it(
    chart: helm_python.Chart,
) -> None:
    default = manifests(render(chart, {}))
    assert not [m for m in default if m["metadata"]["name"] == HUB]
    orchestrator = named(default, "Deployment", f"{RELEASE}-flexplane")
    assert env_of(orchestrator)["FLEXPLANE_MESH_RANGE"] == ""


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
    assert container["ports"] == [{"name": "wireguard", "containerPort": 51820, "protocol": "UDP"}]


def test_the_orchestrator_and_the_hub_share_the_mesh_settings(meshed: list[Manifest]) -> None:
    hub = env_of(named(meshed, "Deployment", HUB))
    orchestrator = env_of(named(meshed, "Deployment", f"{RELEASE}-flexplane"))
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
    (ingress,) = policy["spec"]["ingress"]
    assert ingress == {"ports": [{"port": "wireguard", "protocol": "UDP"}]}
    assert "TCP" not in {port["protocol"] for rule in policy["spec"]["egress"][2:] for port in rule["ports"]}


def test_a_mesh_without_the_hubs_public_endpoint_is_refused(chart: helm_python.Chart) -> None:
    with pytest.raises(Exception, match=r"mesh\.hubEndpoint is required"):
        render(chart, {"mesh": {"enabled": True}})
