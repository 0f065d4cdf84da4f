"""Edge gateways' pure logic: the public pool, the zone's external settings, placement, the spec a node
takes, and tenants' inputs checked (no world: these run in milliseconds)."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from orchestrator.errors import ValidationFailed
from orchestrator.models import Host, Zone
from orchestrator.models.catalog import ZONE_INPUTS
from orchestrator.models.gateways import (
    MAX_NODE_ID,
    FirewallRule,
    Gateway,
    Leg,
    PortForward,
    PublicIp,
    in_pool,
    next_free,
    node_id,
    parse_range,
    pool_addresses,
    pool_problem,
)
from orchestrator.models.networks import reserved
from orchestrator.services.catalog.kinds import ZONE_KIND
from orchestrator.services.gateways import inputs, node
from orchestrator.services.gateways.inputs import ForwardRequest

POOL = ["203.0.113.10-203.0.113.12", "203.0.113.20"]


def zone(**external: Any) -> Zone:
    values = {
        "external_bridge": "vmbr1",
        "external_cidr": "203.0.113.0/24",
        "external_gateway": "203.0.113.1",
        "external_pool": ", ".join(POOL),
        **external,
    }
    return Zone(id="zone-a", name="zone-a", **values)


def host(name: str, *, cordoned: bool = False, zone_id: str = "zone-a") -> Host:
    return Host(key=f"{zone_id}/{name}", zone=zone_id, node=name, endpoint=f"{name}:9443", cordoned=cordoned)


def gateway(**changes: Any) -> Gateway:
    values: dict[str, Any] = {
        "vdc": "demo",
        "zone": "zone-a",
        "uplink_address": "203.0.113.10",
        "generation": 3,
        "public_ips": (PublicIp("203.0.113.11"),),
        "legs": (Leg("zone-a/fpabc123", "fpabc123", "10.0.0.1/24"),),
        **changes,
    }
    return Gateway(**values)


# ------------------------------------------------------------------------------------------ the pool


def test_a_pool_entry_is_a_range_a_cidr_or_one_address() -> None:
    assert [str(a) for a in parse_range("203.0.113.10 - 203.0.113.11")] == ["203.0.113.10", "203.0.113.11"]
    assert [str(a) for a in parse_range("203.0.113.8/30")] == ["203.0.113.9", "203.0.113.10"]
    assert [str(a) for a in parse_range("203.0.113.7")] == ["203.0.113.7", "203.0.113.7"]
    with pytest.raises(ValueError, match="backwards"):
        parse_range("203.0.113.12-203.0.113.10")


def test_the_pool_hands_out_its_lowest_free_address_and_none_when_used_up() -> None:
    assert [str(a) for a in pool_addresses(POOL)] == [
        "203.0.113.10",
        "203.0.113.11",
        "203.0.113.12",
        "203.0.113.20",
    ]
    assert next_free(POOL, ["203.0.113.10", "203.0.113.12"]) == "203.0.113.11"
    assert next_free(POOL, [str(a) for a in pool_addresses(POOL)]) is None
    assert in_pool(POOL, "203.0.113.20")
    assert not in_pool(POOL, "203.0.113.13")


@pytest.mark.parametrize(
    ("pool", "cidr", "router", "field"),
    [
        (POOL, "203.0.113.0/33", "203.0.113.1", "external_cidr"),
        (POOL, "203.0.113.0/24", "198.51.100.1", "external_gateway"),
        (POOL, "203.0.113.0/24", "203.0.113.0", "external_gateway"),
        ([], "203.0.113.0/24", "203.0.113.1", "external_pool"),
        (["198.51.100.5"], "203.0.113.0/24", "203.0.113.1", "external_pool"),
        (["203.0.113.1-203.0.113.5"], "203.0.113.0/24", "203.0.113.1", "external_pool"),
        (["203.0.113.250-203.0.113.255"], "203.0.113.0/24", "203.0.113.1", "external_pool"),
        (["nonsense"], "203.0.113.0/24", "203.0.113.1", "external_pool"),
    ],
)
def test_external_settings_that_do_not_hold_together_name_the_field(
    pool: list[str], cidr: str, router: str, field: str
) -> None:
    problem = pool_problem(pool, cidr, router)
    assert problem is not None
    assert problem[0] == field


def test_a_zone_is_stored_with_its_external_network_and_read_back_alike() -> None:
    made = ZONE_KIND.validate(
        None,  # type: ignore[arg-type]  # the zone's checks read no neighbour
        {
            **ZONE_INPUTS.defaults,
            "id": "zone-x",
            "external_bridge": "vmbr1",
            "external_vlan": 30,
            "external_cidr": "203.0.113.0/24",
            "external_gateway": "203.0.113.1",
            "external_pool": "203.0.113.10-203.0.113.20, 203.0.113.64/28",
            "gateway_nodes": "pve1, pve2",
        },
    )
    again = Zone.from_spec(made.to_spec())
    assert again.has_external_network
    assert (again.external_vlan, again.public_pool, again.gateway_hosts) == (
        30,
        ["203.0.113.10-203.0.113.20", "203.0.113.64/28"],
        ["pve1", "pve2"],
    )


def test_a_zone_with_a_pool_outside_its_external_cidr_is_invalid_naming_the_pool() -> None:
    with pytest.raises(ValidationFailed) as caught:
        ZONE_KIND.validate(
            None,  # type: ignore[arg-type]
            {
                **ZONE_INPUTS.defaults,
                "id": "zone-x",
                "external_bridge": "vmbr1",
                "external_cidr": "203.0.113.0/24",
                "external_gateway": "203.0.113.1",
                "external_pool": "198.51.100.10-198.51.100.20",
            },
        )
    assert caught.value.field == "external_pool"


def test_a_zone_without_external_settings_has_no_gateways_and_is_still_valid() -> None:
    made = ZONE_KIND.validate(None, {**ZONE_INPUTS.defaults, "id": "zone-x"})  # type: ignore[arg-type]
    assert not made.has_external_network


# ------------------------------------------------------------------------------------------ the gateway


def test_a_gateway_is_stored_and_read_back_alike() -> None:
    made = gateway(
        forwards=(PortForward("203.0.113.11", "tcp", 8080, "10.0.0.5", 80),),
        rules=(FirewallRule("in", "allow", "tcp", "0.0.0.0/0", "10.0.0.5/32", (80, 80), "web"),),
        node="pve1",
        applied_generation=2,
        left_on=("pve2",),
    )
    assert Gateway.from_spec(made.to_spec()) == made
    assert made.addresses == ["203.0.113.10", "203.0.113.11"]
    assert not made.applied


def test_a_gateways_id_on_the_node_stays_within_the_agents_limit_and_unique() -> None:
    assert node_id("demo", "zone-a") == "demo.zone-a"
    long_one = node_id("v" * 60, "zone-" + "a" * 50)
    other = node_id("v" * 60, "zone-" + "a" * 49 + "b")
    assert len(long_one) <= MAX_NODE_ID
    assert len(other) <= MAX_NODE_ID
    assert long_one != other


def test_placement_keeps_a_gateway_on_its_host_while_that_host_may_run_it() -> None:
    hosts = [host("pve1"), host("pve2")]
    chosen = node.choose(zone(), hosts, "pve2", load={"pve2": 9})
    assert chosen is not None
    assert chosen.node == "pve2"


@pytest.mark.parametrize(
    ("hosts", "allowed", "offline"),
    [
        ([host("pve1"), host("pve2", cordoned=True)], "", ()),  # cordoned (drained)
        ([host("pve1")], "", ()),  # gone from the catalog
        ([host("pve1"), host("pve2")], "pve1", ()),  # no longer allowed
        ([host("pve1"), host("pve2")], "", ("pve2",)),  # offline
    ],
)
def test_placement_moves_a_gateway_off_a_host_that_may_no_longer_run_it(
    hosts: list[Host], allowed: str, offline: tuple[str, ...]
) -> None:
    chosen = node.choose(zone(gateway_nodes=allowed), hosts, "pve2", offline)
    assert chosen is not None
    assert chosen.node == "pve1"


def test_placement_puts_a_new_gateway_on_the_allowed_host_with_the_fewest() -> None:
    hosts = [host("pve1"), host("pve2"), host("pve3"), host("pve9", zone_id="zone-b")]
    chosen = node.choose(zone(gateway_nodes="pve1, pve2"), hosts, None, load={"pve1": 3, "pve2": 1})
    assert chosen is not None
    assert chosen.node == "pve2"
    assert node.choose(zone(), [host("pve1", cordoned=True)], None) is None


def test_the_spec_a_node_takes_carries_the_zones_uplink_and_the_gateways_state() -> None:
    made = gateway(
        public_ips=(PublicIp("203.0.113.11", "10.0.0.5"),),
        forwards=(PortForward("203.0.113.11", "tcp", 8080, "10.0.0.6", 80),),
        rules=(FirewallRule("in", "allow", "tcp", "0.0.0.0/0", "10.0.0.6/32", (80, 80)),),
    )
    spec = node.spec_of(zone(external_vlan=0), made)
    assert spec.id == "demo.zone-a"
    assert spec.generation == 3
    assert (spec.uplink.bridge, spec.uplink.vlan, spec.uplink.address, spec.uplink.gateway) == (
        "vmbr1",
        None,
        "203.0.113.10/24",
        "203.0.113.1",
    )
    assert [(leg.vnet, leg.address) for leg in spec.legs] == [("fpabc123", "10.0.0.1/24")]
    assert spec.public_ips[0].nat_to == "10.0.0.5"
    assert spec.forwards[0].to_port == 80
    assert spec.rules[0].ports == (80, 80)
    assert node.spec_of(zone(external_vlan=30), made).uplink.vlan == 30


# ------------------------------------------------------------------------------------------ inputs


def forward(**changes: Any) -> ForwardRequest:
    values: dict[str, Any] = {
        "public_ip": "203.0.113.11",
        "protocol": "tcp",
        "port": 8080,
        "to_address": "10.0.0.5",
        "to_port": 80,
        **changes,
    }
    return ForwardRequest(**values)


def test_a_port_forward_to_a_vm_address_is_made_with_the_same_port_by_default() -> None:
    made = inputs.forward(forward(to_port=None), gateway())
    assert made == PortForward("203.0.113.11", "tcp", 8080, "10.0.0.5", 8080)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"port": 0}, "port"),
        ({"port": 65536}, "port"),
        ({"to_port": 70000}, "toPort"),
        ({"protocol": "sctp"}, "protocol"),
        ({"public_ip": "203.0.113.12"}, "publicIp"),  # another VDC's, or nobody's: alike
        ({"to_address": "10.9.0.5"}, "toAddress"),  # not on the VDC's networks
        ({"to_address": "10.0.0.1"}, "toAddress"),  # the network's gateway
        ({"to_address": "10.0.0.2"}, "toAddress"),  # kept back by NIC allocation: no VM holds it
        ({"to_address": "10.0.0.3"}, "toAddress"),
        ({"to_address": "10.0.0.255"}, "toAddress"),  # the network's broadcast address
        ({"to_address": "nonsense"}, "toAddress"),
    ],
)
def test_a_bad_port_forward_is_invalid_naming_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        inputs.forward(forward(**changes), gateway())
    assert caught.value.field == field


@pytest.mark.parametrize("leg_address", ["10.0.0.1/24", "10.0.0.254/24", "192.168.8.1/29"])
def test_a_forwards_or_a_one_to_one_nats_target_is_refused_exactly_where_nic_allocation_keeps_back(
    leg_address: str,
) -> None:
    """Every address of the network: refused (naming toAddress, saying why) iff no NIC may get it."""
    legs = (Leg("zone-a/fpabc123", "fpabc123", leg_address),)
    interface = ipaddress.IPv4Interface(leg_address)
    kept = reserved(interface.network, interface.ip)
    assert interface.ip in kept
    for address in interface.network:
        if address in kept:
            with pytest.raises(ValidationFailed) as caught:
                inputs.vm_address(str(address), legs, "toAddress")
            assert caught.value.field == "toAddress"
            assert "reserved" in caught.value.message
        else:
            assert inputs.vm_address(str(address), legs, "toAddress") == str(address)


def test_a_port_already_forwarded_is_invalid_naming_the_port() -> None:
    taken = gateway(forwards=(PortForward("203.0.113.11", "tcp", 8080, "10.0.0.9", 22),))
    with pytest.raises(ValidationFailed) as caught:
        inputs.forward(forward(), taken)
    assert caught.value.field == "port"
    assert inputs.forward(forward(protocol="udp"), taken).protocol == "udp"  # another protocol is free


def test_a_firewall_rule_defaults_to_anywhere_and_every_port() -> None:
    made = inputs.rule({"direction": "in", "action": "allow", "protocol": "tcp"}, gateway())
    assert made == FirewallRule("in", "allow", "tcp", "0.0.0.0/0", "0.0.0.0/0", None, "")
    ranged = inputs.rule(
        {"direction": "out", "action": "deny", "protocol": "udp", "port_from": 53}, gateway()
    )
    assert ranged.ports == (53, 53)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"direction": "sideways", "action": "allow"}, "direction"),
        ({"direction": "in", "action": "maybe"}, "action"),
        ({"direction": "in", "action": "allow", "protocol": "icmp", "port_from": 1}, "portFrom"),
        ({"direction": "in", "action": "allow", "protocol": "tcp", "port_from": 90, "port_to": 80}, "portTo"),
        ({"direction": "in", "action": "allow", "source": "10.0.0.0/99"}, "source"),
    ],
)
def test_a_bad_firewall_rule_is_invalid_naming_the_field(values: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        inputs.rule(values, gateway())
    assert caught.value.field == field
