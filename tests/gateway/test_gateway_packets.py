"""Edge gateways for real: namespaces, bridges, nftables, and TCP/UDP packets checked where they arrive.

The network is :class:`tests.gateway.topology.Net`: two nodes whose bridges are joined, VDC A's VMs
a1 (node 1) and a2 (node 2), VDC B's VM b1, with the same subnet 10.20.0.0/24, and the internet on
the external network. The gateways are applied by each node's :class:`agent.gateways.GatewayManager`
(what the agent's service calls); tests/gateway/test_gateway_agent.py goes through the gRPC service.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from agent.gateways import ApplyFailed, GatewayManager
from agent.gateways.net import namespace
from agentclient.gateways import FirewallRule, GatewaySpec, Leg, PortForward, PublicIp, Uplink
from tests.gateway.topology import (
    INTERNET,
    Net,
    addresses_of,
    ask,
    echo_server,
    rules_of,
    sh,
    socket_in,
    source_address,
    unanswered,
)

EXTERNAL_A = "203.0.113.2"
EXTERNAL_B = "203.0.113.3"
PUBLIC_FORWARDS = "203.0.113.10"
PUBLIC_ONE_TO_ONE = "203.0.113.11"
PUBLIC_B = "203.0.113.20"
WAIT = 0.5  # how long a probe that must fail waits for an answer


def spec_a(net: Net, generation: int = 1, **changes: object) -> GatewaySpec:
    values: dict[str, object] = {
        "id": net.gateway_id("a"),
        "generation": generation,
        "uplink": net.uplink(EXTERNAL_A),
        "legs": (net.leg("vnet-a"),),
        "public_ips": (PublicIp(PUBLIC_FORWARDS), PublicIp(PUBLIC_ONE_TO_ONE, "10.20.0.6")),
        "forwards": (
            PortForward(PUBLIC_FORWARDS, "tcp", 8080, "10.20.0.5", 80),
            PortForward(PUBLIC_FORWARDS, "tcp", 8081, "10.20.0.6", 81),
            PortForward(PUBLIC_FORWARDS, "udp", 5353, "10.20.0.5", 53),
        ),
        "rules": (
            FirewallRule("in", "allow", "tcp", "0.0.0.0/0", "10.20.0.6/32", (22, 22)),
            FirewallRule("out", "deny", "tcp", "0.0.0.0/0", f"{INTERNET}/32", (9999, 9999)),
        ),
    }
    values.update(changes)
    return GatewaySpec(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def gateway_a(net: Net, nodes: dict[int, GatewayManager]) -> GatewaySpec:
    """VDC A's gateway, on node 1."""
    spec = spec_a(net)
    assert nodes[1].apply(spec).healthy
    return spec


@pytest.fixture(scope="module")
def gateway_b(net: Net, nodes: dict[int, GatewayManager]) -> GatewaySpec:
    """VDC B's gateway, on node 2, with the same subnet as VDC A's."""
    spec = GatewaySpec(
        id=net.gateway_id("b"),
        generation=1,
        uplink=net.uplink(EXTERNAL_B),
        legs=(net.leg("vnet-b"),),
        public_ips=(PublicIp(PUBLIC_B),),
        forwards=(PortForward(PUBLIC_B, "tcp", 8080, "10.20.0.7", 80),),
    )
    assert nodes[2].apply(spec).healthy
    return spec


def test_a_vm_reaches_the_internet_snat_ed_to_the_gateways_external_address(
    net: Net, gateway_a: GatewaySpec
) -> None:
    with echo_server(net.internet, 9000), echo_server(net.internet, 9000, "udp"):
        assert source_address(ask(net.vms["a1"].ns, INTERNET, 9000)) == EXTERNAL_A
        assert source_address(ask(net.vms["a1"].ns, INTERNET, 9000, "udp")) == EXTERNAL_A


def test_a_port_forward_delivers_to_the_right_vm_and_port(net: Net, gateway_a: GatewaySpec) -> None:
    with (
        echo_server(net.vms["a1"].ns, 80),
        echo_server(net.vms["a2"].ns, 81),
        echo_server(net.vms["a2"].ns, 80),
        echo_server(net.vms["a1"].ns, 53, "udp"),
    ):
        # The VM sees the internet's own address: port forwards are not SNAT-ed.
        assert source_address(ask(net.internet, PUBLIC_FORWARDS, 8080)) == INTERNET
        with socket_in(
            net.internet, lambda: socket.create_connection((PUBLIC_FORWARDS, 8081), timeout=2)
        ) as conn:
            conn.sendall(b"to a2:81\n")
            reader = conn.makefile()
            assert source_address(reader.readline().strip()) == INTERNET
            assert reader.readline().strip() == "to a2:81"
        assert source_address(ask(net.internet, PUBLIC_FORWARDS, 5353, "udp")) == INTERNET
        assert unanswered(net.internet, PUBLIC_FORWARDS, 8082, timeout=WAIT)  # no forward of 8082


def test_one_to_one_nat_works_both_ways(net: Net, gateway_a: GatewaySpec) -> None:
    with echo_server(net.internet, 9001), echo_server(net.vms["a2"].ns, 22):
        # a2's egress leaves with its public address, a1's with the gateway's.
        assert source_address(ask(net.vms["a2"].ns, INTERNET, 9001)) == PUBLIC_ONE_TO_ONE
        assert source_address(ask(net.vms["a1"].ns, INTERNET, 9001)) == EXTERNAL_A
        # And the public address reaches a2 (its port 22 is allowed in).
        assert source_address(ask(net.internet, PUBLIC_ONE_TO_ONE, 22)) == INTERNET


def test_a_deny_rule_is_enforced_and_an_allow_rule_honoured(
    net: Net, nodes: dict[int, GatewayManager], gateway_a: GatewaySpec
) -> None:
    a1, a2 = net.vms["a1"].ns, net.vms["a2"].ns
    with echo_server(a2, 22), echo_server(a2, 23), echo_server(net.internet, 9999), echo_server(a1, 80):
        assert ask(net.internet, PUBLIC_ONE_TO_ONE, 22)  # allowed in
        assert unanswered(
            net.internet, PUBLIC_ONE_TO_ONE, 23, timeout=WAIT
        )  # inbound default deny, even through a 1:1 NAT
        assert unanswered(a1, INTERNET, 9999, timeout=WAIT)  # egress denied to the internet's port 9999
        denied = nodes[1].state(gateway_a.id)
        assert denied is not None
        assert denied.counters["dropped_packets"] >= 2

        # A deny before the forward closes it; an allow for 23 opens it; the egress deny goes.
        closing = spec_a(
            net,
            2,
            rules=(
                FirewallRule("in", "deny", "tcp", f"{INTERNET}/32", "10.20.0.5/32", (80, 80)),
                FirewallRule("in", "allow", "tcp", "0.0.0.0/0", "10.20.0.6/32", (22, 23)),
            ),
        )
        nodes[1].apply(closing)
        assert unanswered(net.internet, PUBLIC_FORWARDS, 8080, timeout=WAIT)
        assert ask(net.internet, PUBLIC_ONE_TO_ONE, 23)
        assert source_address(ask(a1, INTERNET, 9999)) == EXTERNAL_A
    nodes[1].apply(gateway_a)


def test_vdc_a_cannot_reach_vdc_b_even_with_overlapping_cidrs(
    net: Net, gateway_a: GatewaySpec, gateway_b: GatewaySpec
) -> None:
    a1, b1 = net.vms["a1"].ns, net.vms["b1"].ns
    with echo_server(b1, 80), echo_server(net.internet, 9002):
        # B's VM works through its own gateway...
        assert source_address(ask(b1, INTERNET, 9002)) == EXTERNAL_B
        # ...but its private address, the same subnet as A's, is A's own (no such VM there).
        assert unanswered(a1, "10.20.0.7", 80, timeout=WAIT)
        # Only B's public forward reaches it, seen as coming from A's external address.
        assert source_address(ask(a1, PUBLIC_B, 8080)) == EXTERNAL_A


def test_re_applying_keeps_an_established_tcp_connection_and_changes_nothing(
    net: Net, nodes: dict[int, GatewayManager], gateway_a: GatewaySpec
) -> None:
    before = (rules_of(gateway_a.id), addresses_of(gateway_a.id))
    with echo_server(net.internet, 9003):
        conn = socket_in(net.vms["a1"].ns, lambda: socket.create_connection((INTERNET, 9003), timeout=2))
        with conn:
            reader = conn.makefile()
            assert source_address(reader.readline().strip()) == EXTERNAL_A
            nodes[1].apply(gateway_a)
            assert (rules_of(gateway_a.id), addresses_of(gateway_a.id)) == before
            conn.sendall(b"after the same spec\n")
            assert reader.readline().strip() == "after the same spec"
            # A new generation (one more forward, one more public IP) keeps it too.
            grown = spec_a(
                net,
                2,
                public_ips=(*gateway_a.public_ips, PublicIp("203.0.113.12")),
                forwards=(*gateway_a.forwards, PortForward("203.0.113.12", "tcp", 443, "10.20.0.5", 443)),
            )
            nodes[1].apply(grown)
            conn.sendall(b"after a new generation\n")
            assert reader.readline().strip() == "after a new generation"
    nodes[1].apply(gateway_a)
    assert (rules_of(gateway_a.id), addresses_of(gateway_a.id)) == before


def test_an_apply_the_node_cannot_carry_out_leaves_the_previous_state_running(
    net: Net, nodes: dict[int, GatewayManager], gateway_a: GatewaySpec
) -> None:
    before = (rules_of(gateway_a.id), addresses_of(gateway_a.id))
    broken = spec_a(net, 3, legs=(net.leg("vnet-a"), Leg("vnet-gone", "10.30.0.1/24")))
    with pytest.raises(ApplyFailed, match="no bridge vnet-gone"):
        nodes[1].apply(broken)
    assert (rules_of(gateway_a.id), addresses_of(gateway_a.id)) == before
    state = nodes[1].state(gateway_a.id)
    assert state is not None
    assert state.generation == gateway_a.generation
    assert state.healthy


def test_an_apply_after_the_namespace_vanished_rebuilds_it(
    net: Net, nodes: dict[int, GatewayManager], gateway_a: GatewaySpec
) -> None:
    sh("ip", "netns", "delete", namespace(gateway_a.id))
    # Its name left behind, as when the agent that pinned it had a mount namespace of its own.
    Path("/run/netns", namespace(gateway_a.id)).touch()
    gone = nodes[1].state(gateway_a.id)
    assert gone is not None
    assert not gone.healthy
    assert "missing" in gone.detail
    assert nodes[1].apply(gateway_a).healthy
    with echo_server(net.internet, 9004):
        assert source_address(ask(net.vms["a1"].ns, INTERNET, 9004)) == EXTERNAL_A


def test_moving_the_gateway_to_the_other_node_restores_reachability(
    net: Net, nodes: dict[int, GatewayManager], gateway_a: GatewaySpec
) -> None:
    a1 = net.vms["a1"].ns
    with echo_server(net.internet, 9005), echo_server(net.vms["a1"].ns, 80):
        assert ask(a1, INTERNET, 9005)
        # Node 1 is lost (its gateway with it); the orchestrator applies the same spec on node 2.
        lost = time.monotonic()
        sh("ip", "netns", "delete", namespace(gateway_a.id))
        assert nodes[2].apply(gateway_a).healthy
        applied = time.monotonic()
        outbound = _until_answered(lambda: ask(a1, INTERNET, 9005, timeout=0.2))
        inbound = _until_answered(lambda: ask(net.internet, PUBLIC_FORWARDS, 8080, timeout=0.2))
        print(
            f"\ngateway move: applied on node 2 {applied - lost:.3f} s after node 1 was lost; "
            f"egress back {outbound - lost:.3f} s, a port forward {inbound - lost:.3f} s after the loss"
        )
        assert source_address(ask(a1, INTERNET, 9005)) == EXTERNAL_A
        assert outbound - lost < 5.0
        assert inbound - lost < 5.0
    # The old node answers again: the orchestrator removes the gateway there (nothing left to remove).
    nodes[1].remove(gateway_a.id)
    nodes[2].remove(gateway_a.id)
    assert nodes[2].state(gateway_a.id) is None
    assert namespace(gateway_a.id) not in sh("ip", "netns", "list").stdout


def _until_answered(probe: object, within: float = 10.0) -> float:
    """When probe() first answered (polling), as time.monotonic()."""
    deadline = time.monotonic() + within
    while True:
        try:
            probe()  # type: ignore[operator]
            return time.monotonic()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _kernel_has_vlans(net: Net) -> bool:
    scratch = net.ns("vlan-probe")
    sh("ip", "netns", "add", scratch)
    try:
        made = sh(
            "ip",
            "-n",
            scratch,
            "link",
            "add",
            "link",
            "lo",
            "name",
            "probe",
            "type",
            "vlan",
            "id",
            "2",
            check=False,
        )
        return made.returncode == 0
    finally:
        sh("ip", "netns", "delete", scratch)


def test_an_uplink_vlan_is_tagged_or_the_apply_fails_whole(
    net: Net, nodes: dict[int, GatewayManager]
) -> None:
    """A kernel without 802.1Q (this test machine's has none) fails the apply midway: nothing stays."""
    spec = GatewaySpec(
        id=net.gateway_id("v"),
        generation=1,
        uplink=Uplink("ext", 42, "198.51.100.2/24", "198.51.100.1"),
        legs=(Leg("vnet-b", "10.40.0.1/24"),),
    )
    try:
        if not _kernel_has_vlans(net):
            with pytest.raises(ApplyFailed, match=r"vlan|Unknown device type"):
                nodes[1].apply(spec)
            assert namespace(spec.id) not in sh("ip", "netns", "list").stdout
            assert nodes[1].state(spec.id) is None
            assert "fgu" not in sh("ip", "-n", net.node(1), "-br", "link", "show").stdout
            return
        assert nodes[1].apply(spec).healthy
        assert (
            "vlan protocol 802.1Q id 42"
            in sh("ip", "-n", namespace(spec.id), "-d", "link", "show", "uplink").stdout
        )
        untagged = GatewaySpec(
            **{**spec.__dict__, "uplink": Uplink("ext", None, "198.51.100.2/24", "198.51.100.1")}
        )
        assert nodes[1].apply(untagged).healthy
        assert "vlan" not in sh("ip", "-n", namespace(spec.id), "-d", "link", "show", "uplink").stdout
    finally:
        nodes[1].remove(spec.id)
