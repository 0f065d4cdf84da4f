"""A cluster's workers reach their control plane (``services.clusters.reach``), through the whole stack: in
a zone that does not route its tenant networks to the management cluster, a create makes the VDC's edge
gateway (run by the world's agents in namespaces of this machine) with a leg on the workers' network, is
refused with what is missing where the zone has no external network, and is refused naming the gateway's
firewall rule that denies the way out. The rule logic itself:
``tests/orchestrator/services/test_cluster_reach``.

zone-a is not routed for the module (the devstack's zones are), and gets an external network for the
tests that need one; each test acts in scratch VDCs of its own (admin acting).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devstack.world import World
from tests.apikit import GraphQL
from tests.gatewaykit import (
    UPDATE_ZONE,
    bridge,
    clean_gateway,
    demo_gateway,
    external_network,
    unbridge,
    vnets_of,
)
from tests.orchestrator.clusterkit import (
    CREATE_CLUSTER,
    cluster_input,
    delete_all,
    ensure_versions,
    install_crds,
)
from tests.vmkit import scratch_vdcs

ZONE = "zone-a"
ERRORS = "errors { field message code }"
GATEWAY = "query($zone: String) { edgeGateway(zone: $zone) { id networks applied } }"
RULE = f"""mutation($zone: String, $input: GatewayFirewallRuleInput!) {{
  addGatewayFirewallRule(zone: $zone, input: $input) {{ edgeGateway {{ id }} {ERRORS} }} }}"""
NETWORKS = "{ networks { id zone } }"
CLUSTERS = "{ kubernetesClusters { name } }"


def routed(api: GraphQL, on: bool) -> None:
    answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": {"networkRouted": on}})
    assert answer.data["updateZone"]["errors"] == [], answer.body


@pytest.fixture(scope="module")
def unrouted(api: GraphQL, world: World) -> Iterator[None]:
    """zone-a, for the module, a zone whose tenant networks the site does not route."""
    install_crds(world)
    ensure_versions(api)
    routed(api, False)
    try:
        yield
    finally:
        routed(api, True)


@pytest.fixture
def vdc(api: GraphQL, world: World, unrouted: None) -> Iterator[Callable[[], tuple[str, str]]]:
    """Scratch VDCs of zone-a: (its id, its default network's id), the network's VNet a bridge on this
    machine as on a node; their clusters and gateways go with them."""
    made: list[str] = []
    vnets: list[str] = []
    with scratch_vdcs(api, world) as make:

        def scratch() -> tuple[str, str]:
            ident = make(publicIps=2)
            made.append(ident)
            for vnet in vnets_of(api, ident):
                vnets.append(vnet)
                bridge(vnet)
            [network] = [n["id"] for n in api(NETWORKS, user="admin", vdc=ident).data["networks"]]
            return ident, network

        try:
            yield scratch
        finally:
            for ident in made:
                delete_all(world, ident)
                clean_gateway(api, ident)
            for vnet in vnets:
                unbridge(vnet)


def create(api: GraphQL, vdc: str, network: str, name: str) -> dict[str, Any]:
    answer = api(CREATE_CLUSTER, user="admin", vdc=vdc, variables={"input": cluster_input(name, network)})
    assert answer.errors == [], answer.body
    result: dict[str, Any] = answer.data["createKubernetesCluster"]
    return result


def test_without_a_route_or_an_external_network_a_create_is_refused_saying_what_is_missing(
    api: GraphQL, vdc: Callable[[], tuple[str, str]]
) -> None:
    ident, network = vdc()

    made = create(api, ident, network, "nowhere")

    [error] = made["errors"]
    assert (error["field"], error["code"]) == ("network", "INVALID")
    assert f"the workers on network {network} would not reach their control plane" in error["message"]
    assert "does not route its tenant networks" in error["message"]
    assert "no external network for an edge gateway" in error["message"]
    assert made["kubernetesCluster"] is None
    assert api(CLUSTERS, user="admin", vdc=ident).data["kubernetesClusters"] == []
    assert api(GATEWAY, user="admin", vdc=ident, variables={"zone": ZONE}).data["edgeGateway"] is None


def test_a_create_makes_the_vdcs_edge_gateway_with_a_leg_on_the_workers_network(
    api: GraphQL, world: World, vdc: Callable[[], tuple[str, str]]
) -> None:
    with external_network(api, world, "r"), demo_gateway():
        ident, network = vdc()

        made = create(api, ident, network, "outward")

        assert made["errors"] == [], made
        assert made["kubernetesCluster"]["name"] == "outward"
        gateway = api(GATEWAY, user="admin", vdc=ident, variables={"zone": ZONE}).data["edgeGateway"]
        assert gateway["networks"] == [network]
        assert gateway["applied"] is True  # a host of the zone runs it


def test_a_gateway_rule_that_denies_the_way_out_refuses_the_create_naming_it(
    api: GraphQL, world: World, vdc: Callable[[], tuple[str, str]]
) -> None:
    with external_network(api, world, "q"), demo_gateway():
        ident, network = vdc()
        rule = {"direction": "out", "action": "deny", "protocol": "tcp", "portFrom": 8000, "portTo": 8200}
        answer = api(RULE, user="admin", vdc=ident, variables={"zone": ZONE, "input": rule})
        assert answer.data["addGatewayFirewallRule"]["errors"] == [], answer.body

        made = create(api, ident, network, "walled")

        [error] = made["errors"]
        assert (error["field"], error["code"]) == ("network", "INVALID")
        assert f"rule 0 of VDC {ident}'s edge gateway in zone {ZONE}" in error["message"]
        assert "denies egress to Konnectivity (tcp/8132)" in error["message"]
        assert api(CLUSTERS, user="admin", vdc=ident).data["kubernetesClusters"] == []
