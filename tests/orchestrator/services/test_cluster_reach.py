"""Which of an edge gateway's firewall rules stands in the way of a cluster's workers and their control
plane (``services.clusters.reach.in_the_way``): the first rule that matches the whole way decides, as the
gateway decides a connection. No world: these run in milliseconds (the stack: ``graphql/test_cluster_reach``).
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from orchestrator.models.clusters import LOAD_BALANCER, SHARED
from orchestrator.models.gateways import FirewallRule
from orchestrator.services.clusters.reach import control_plane_networks, in_the_way, ports_of

SUBNET = ipaddress.IPv4Network("10.0.0.0/24")
MANAGEMENT = [ipaddress.IPv4Network("192.0.2.0/28")]


def rule(action: str = "deny", **changes: Any) -> FirewallRule:
    values: dict[str, Any] = {"direction": "out", "action": action, "protocol": "tcp", **changes}
    return FirewallRule(**values)


def blocked(rules: list[FirewallRule], targets: list[ipaddress.IPv4Network] | None = None) -> Any:
    found = in_the_way(rules, SUBNET, MANAGEMENT if targets is None else targets)
    return None if found is None else (found[0], found[2])


def test_no_rule_leaves_the_way_open() -> None:
    assert blocked([]) is None


def test_a_rule_denying_all_egress_blocks_the_api_server_first() -> None:
    assert blocked([rule()]) == (0, 6443)
    assert blocked([rule(protocol="any")]) == (0, 6443)


def test_a_rule_for_one_port_blocks_that_port_only() -> None:
    assert blocked([rule(ports=(8132, 8132))]) == (0, 8132)
    assert blocked([rule(ports=(80, 443))]) is None


def test_an_allowing_rule_before_a_denying_one_keeps_the_way_open() -> None:
    assert blocked([rule("allow", ports=(6443, 6443)), rule("allow", ports=(8132, 8132)), rule()]) is None
    assert blocked([rule("allow", ports=(6443, 6443)), rule()]) == (1, 8132)


def test_inbound_udp_and_icmp_rules_are_not_the_workers_way_out() -> None:
    assert blocked([rule(direction="in"), rule(protocol="udp"), rule(protocol="icmp")]) is None


def test_a_rule_for_other_sources_or_destinations_does_not_decide() -> None:
    assert blocked([rule(source="10.0.1.0/24")]) is None  # another network's workers
    assert blocked([rule(source="10.0.0.0/16")]) == (0, 6443)  # the network's with others
    assert blocked([rule(destination="198.51.100.0/24")]) is None
    assert blocked([rule(destination="192.0.2.0/24")]) == (0, 6443)  # holds the control planes
    assert blocked([rule(destination="192.0.2.0/30")]) is None  # some of them: not decided here


def test_where_the_control_planes_are_not_known_only_a_rule_for_everywhere_decides() -> None:
    assert blocked([rule(destination="192.0.2.0/24")], targets=[]) is None
    assert blocked([rule()], targets=[]) == (0, 6443)


def test_the_control_planes_addresses_come_from_the_setting_and_a_bad_one_is_named() -> None:
    with override_settings(FLEXPLANE_CONTROL_PLANE_ADDRESSES=["192.0.2.10", "198.51.100.0/24"]):
        assert [str(n) for n in control_plane_networks()] == ["192.0.2.10/32", "198.51.100.0/24"]
    with (
        override_settings(FLEXPLANE_CONTROL_PLANE_ADDRESSES=["not-an-address"]),
        pytest.raises(ImproperlyConfigured, match="FLEXPLANE_CONTROL_PLANE_ADDRESSES"),
    ):
        control_plane_networks()


def test_behind_the_shared_address_the_workers_way_is_its_one_port() -> None:
    with override_settings(FLEXPLANE_CONTROL_PLANE_SHARED_PORT="7443"):
        shared = ports_of(SHARED)
    assert shared == ((7443, "the shared control-plane address"),)
    assert ports_of(LOAD_BALANCER) == ((6443, "the API server"), (8132, "Konnectivity"))
    found = in_the_way([rule(ports=(7000, 8000))], SUBNET, MANAGEMENT, shared)
    assert found is not None
    assert found[2:] == (7443, "the shared control-plane address")
    # 6443 and 8132 are not on that way.
    assert (
        in_the_way([rule(ports=(6443, 6443)), rule(ports=(8132, 8132))], SUBNET, MANAGEMENT, shared) is None
    )
