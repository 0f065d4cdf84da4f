"""The ruleset a spec renders: every kind of rule one nft accepts; the same spec, the same text."""

from __future__ import annotations

import dataclasses
import itertools

from agent.gateways.rules import ruleset
from agentclient.gateways import FirewallRule, GatewaySpec, Leg, PortForward, PublicIp, Uplink
from tests.gateway.topology import sh

RULES = tuple(
    FirewallRule(direction, action, protocol, source, destination, ports)  # type: ignore[arg-type]
    for direction, action, (protocol, ports), (source, destination) in itertools.product(
        ("in", "out"),
        ("allow", "deny"),
        (("tcp", (22, 22)), ("udp", (5000, 5100)), ("icmp", None), ("any", None), ("tcp", None)),
        (("0.0.0.0/0", "0.0.0.0/0"), ("198.51.100.0/24", "10.20.0.6/32")),
    )
)


def spec() -> GatewaySpec:
    return GatewaySpec(
        id="rules.zone1",
        generation=7,
        uplink=Uplink("vmbr0", None, "203.0.113.2/24", "203.0.113.1"),
        legs=(Leg("vnet1", "10.20.0.1/24"), Leg("vnet2", "10.30.0.1/24")),
        public_ips=(PublicIp("203.0.113.10"), PublicIp("203.0.113.11", "10.20.0.6")),
        forwards=(
            PortForward("203.0.113.10", "tcp", 80, "10.20.0.5", 8080),
            PortForward("203.0.113.10", "udp", 53, "10.30.0.5", 53),
            PortForward("203.0.113.2", "tcp", 2222, "10.30.0.5", 22),
        ),
        rules=RULES,
    )


def test_every_kind_of_rule_renders_a_ruleset_nft_accepts() -> None:
    text = ruleset(spec())
    sh("nft", "-c", "-f", "-", stdin=text)
    assert (
        text.count("ct original ip daddr 10.20.0.6/32") == len(RULES) // 4
    )  # the in rules with a destination


def test_the_same_spec_renders_the_same_ruleset() -> None:
    assert ruleset(spec()) == ruleset(spec())


def test_from_the_uplink_the_legs_own_addresses_are_dropped_before_anything_is_accepted() -> None:
    text = ruleset(spec())
    input_chain = text.split("chain input {", 1)[1].split("\n  }", 1)[0].splitlines()
    rules = [line.strip() for line in input_chain if line.strip()][1:]  # past the hook
    assert rules[:3] == [
        'iif "lo" accept',
        'iifname "uplink" ip daddr { 10.20.0.1, 10.30.0.1 } counter name "dropped" drop',
        "ct state established,related accept",
    ]
    # The legs in another order render the same text.
    swapped = dataclasses.replace(spec(), legs=tuple(reversed(spec().legs)))
    assert ruleset(swapped) == text


def test_a_gateway_without_legs_renders_no_set_of_leg_addresses_and_nft_accepts_it() -> None:
    text = ruleset(dataclasses.replace(spec(), legs=(), forwards=(), public_ips=()))
    sh("nft", "-c", "-f", "-", stdin=text)
    assert "ip daddr {" not in text
