"""The gateway types: checked on construction, the field named; the same through JSON and the wire."""

from __future__ import annotations

import pytest

from agentclient.gateways import (
    FirewallRule,
    GatewaySpec,
    GatewaySpecError,
    GatewayState,
    Leg,
    PortForward,
    PublicIp,
    Uplink,
    spec_from_proto,
    spec_to_proto,
    state_from_proto,
    state_to_proto,
)

UPLINK = Uplink("vmbr0", None, "203.0.113.2/24", "203.0.113.1")


def spec(**changes: object) -> GatewaySpec:
    values: dict[str, object] = {
        "id": "vdc-a.zone1",
        "generation": 3,
        "uplink": UPLINK,
        "legs": (Leg("vnet1", "10.20.0.1/24"), Leg("vnet2", "10.30.0.1/24")),
        "public_ips": (PublicIp("203.0.113.10"), PublicIp("203.0.113.11", "10.20.0.6")),
        "forwards": (PortForward("203.0.113.10", "tcp", 8080, "10.20.0.5", 80),),
        "rules": (
            FirewallRule("in", "allow", "tcp", "0.0.0.0/0", "10.20.0.6/32", (22, 22)),
            FirewallRule("out", "deny", "any", "10.30.0.0/24", "0.0.0.0/0"),
        ),
    }
    values.update(changes)
    return GatewaySpec(**values)  # type: ignore[arg-type]


def test_a_spec_survives_json_and_the_wire_unchanged() -> None:
    original = spec()
    assert GatewaySpec.from_dict(original.to_dict()) == original
    assert spec_from_proto(spec_to_proto(original)) == original


def test_a_state_survives_the_wire_with_its_counters() -> None:
    state = GatewayState("vdc-a.zone1", 3, "pve1", True, "", {"egress_packets": 5})
    assert state_from_proto(state_to_proto(state)) == state
    assert dict(state.counters) == {"egress_packets": 5}


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: PortForward("203.0.113.10", "tcp", 70000, "10.20.0.5", 80), "port"),
        (lambda: PortForward("203.0.113.10", "sctp", 80, "10.20.0.5", 80), "protocol"),  # type: ignore[arg-type]
        (lambda: Uplink("vmbr0", 5000, "203.0.113.2/24", "203.0.113.1"), "vlan"),
        (lambda: Uplink("vmbr0", None, "203.0.113.2", "203.0.113.1"), "address"),
        (lambda: Uplink("vmbr0", None, "203.0.113.2/24", "198.51.100.1"), "gateway"),
        (lambda: Leg("a-bridge-name-too-long", "10.20.0.1/24"), "vnet"),
        (lambda: FirewallRule("in", "allow", "icmp", "0.0.0.0/0", "0.0.0.0/0", (1, 2)), "ports"),
        (lambda: FirewallRule("in", "allow", "tcp", "10.0.0.1/8", "0.0.0.0/0"), "source"),
        (lambda: spec(id="Not/Safe"), "id"),
        (
            lambda: spec(legs=(Leg("vnet1", "10.20.0.1/24"), Leg("vnet2", "10.20.0.129/25"))),
            "legs[1].address",
        ),
        (
            lambda: spec(
                forwards=(
                    PortForward("203.0.113.10", "tcp", 8080, "10.20.0.5", 80),
                    PortForward("203.0.113.10", "tcp", 8080, "10.20.0.7", 81),
                )
            ),
            "forwards[1].port",
        ),
        (
            lambda: spec(forwards=(PortForward("203.0.113.10", "tcp", 80, "10.99.0.5", 80),)),
            "forwards[0].to_address",
        ),
        (
            lambda: spec(forwards=(PortForward("203.0.113.99", "tcp", 80, "10.20.0.5", 80),)),
            "forwards[0].public_ip",
        ),
        (lambda: spec(public_ips=(PublicIp("203.0.113.10", "10.99.0.6"),)), "public_ips[0].nat_to"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(build: object, field: str) -> None:
    with pytest.raises(GatewaySpecError) as refused:
        build()  # type: ignore[operator]
    assert refused.value.field == field


def test_a_bad_value_from_json_is_named_with_its_place() -> None:
    data = spec().to_dict()
    data["forwards"][0]["port"] = 0
    with pytest.raises(GatewaySpecError) as refused:
        GatewaySpec.from_dict(data)
    assert refused.value.field == "forwards[0].port"
    assert "outside 1-65535" in str(refused.value)
