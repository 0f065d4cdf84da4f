"""A gateway's private legs are unseen from outside: whatever the upstream routes to the gateway, its
addresses on the VDC's networks answer nothing that arrives on the uplink, while the VMs behind them
still reach them.

The network is :class:`tests.gateway.topology.Net` (this module's own). One gateway on node 1 has two
legs, VDC network 10.20.0.0/24 on vnet-a (VM a1, 10.20.0.5) and 10.30.0.0/24 on vnet-b (VM c1,
10.30.0.5), as a VDC with two networks has. The internet's router routes private space to the
gateway's uplink address, as an upstream that routes 10/8 to it would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from agent.gateways import GatewayManager
from agent.gateways.net import namespace
from agentclient.gateways import GatewaySpec, Leg, PortForward, PublicIp
from tests.gateway.topology import (
    INTERNET,
    Net,
    Vm,
    ask,
    echo_server,
    echoed,
    neighbour,
    sh,
    silent,
    source_address,
)

EXTERNAL = "203.0.113.2"
PUBLIC = "203.0.113.10"
LEG_A, LEG_C = "10.20.0.1", "10.30.0.1"
PRIVATE_SPACE = "10.0.0.0/8"
PORT = 7000
WAIT = 0.5  # how long a probe that must go unanswered waits


@pytest.fixture(scope="module")
def c1(net: Net) -> Vm:
    """A VM on the gateway's second network (vnet-b, 10.30.0.0/24)."""
    return net.add_vm("c1", 1, "vnet-b", "10.30.0.5", gateway=LEG_C)


@pytest.fixture(scope="module")
def gateway(net: Net, nodes: dict[int, GatewayManager], c1: Vm) -> Iterator[GatewaySpec]:
    """The gateway on node 1, and the internet routing private space to its uplink address."""
    spec = GatewaySpec(
        id=net.gateway_id("p"),
        generation=1,
        uplink=net.uplink(EXTERNAL),
        legs=(Leg("vnet-a", f"{LEG_A}/24"), Leg("vnet-b", f"{LEG_C}/24")),
        public_ips=(PublicIp(PUBLIC),),
        forwards=(PortForward(PUBLIC, "tcp", 8080, "10.20.0.5", 80),),
    )
    assert nodes[1].apply(spec).healthy
    sh("ip", "-n", net.internet, "route", "add", PRIVATE_SPACE, "via", EXTERNAL)
    try:
        yield spec
    finally:
        sh("ip", "-n", net.internet, "route", "delete", PRIVATE_SPACE, check=False)
        nodes[1].remove(spec.id)


def dropped(nodes: dict[int, GatewayManager], spec: GatewaySpec) -> int:
    """The gateway's ``dropped`` counter: packets its ruleset dropped."""
    state = nodes[1].state(spec.id)
    assert state is not None
    return state.counters["dropped_packets"]


def test_from_outside_no_private_address_of_the_gateway_answers_a_ping_from_inside_both_do(
    net: Net, nodes: dict[int, GatewayManager], gateway: GatewaySpec, c1: Vm
) -> None:
    a1 = net.vms["a1"].ns
    # The probe works: the internet's ping to the gateway's uplink address is answered, and so are the
    # VMs' pings to their gateway addresses, each its own network's and the other network's.
    assert echoed(net.internet, EXTERNAL)
    for vm in (a1, c1.ns):
        for address in (LEG_A, LEG_C):
            assert echoed(vm, address), (vm, address)
    # From outside, routed to the gateway: its private addresses answer nothing, and the requests did
    # arrive (the gateway counted them dropped; they were not lost on the way).
    before = dropped(nodes, gateway)
    for address in (LEG_A, LEG_C):
        assert not echoed(net.internet, address, timeout=WAIT), address
    assert dropped(nodes, gateway) >= before + 2
    # And the VMs' pings still work after.
    assert echoed(a1, LEG_A)
    assert echoed(c1.ns, LEG_C)


def test_from_outside_tcp_and_udp_to_a_private_address_get_no_answer_not_even_a_refusal(
    net: Net, nodes: dict[int, GatewayManager], gateway: GatewaySpec
) -> None:
    inside = namespace(gateway.id)
    with echo_server(inside, PORT), echo_server(inside, PORT, "udp"):
        # The listeners in the gateway's namespace answer on its private addresses (asked from there)...
        for address in (LEG_A, LEG_C):
            assert ask(inside, address, PORT)
            assert ask(inside, address, PORT, "udp")
        # ...and from outside nothing comes back: no answer, no reset, no port unreachable; counted.
        before = dropped(nodes, gateway)
        for address in (LEG_A, LEG_C):
            assert silent(net.internet, address, PORT, timeout=WAIT), address
            assert silent(net.internet, address, PORT, "udp", timeout=WAIT), address
            assert silent(net.internet, address, PORT + 1, timeout=WAIT), address  # a closed port alike
        assert dropped(nodes, gateway) >= before + 6


def test_the_uplink_answers_no_arp_for_a_private_address(net: Net, gateway: GatewaySpec) -> None:
    """An upstream that takes the private space as on its link asks ARP for it: no answer either."""
    on_link = "10.30.0.0/24"
    sh("ip", "-n", net.internet, "route", "add", on_link, "dev", "eth0")
    try:
        for address in (EXTERNAL, LEG_A, LEG_C):
            sh("ip", "-n", net.internet, "neigh", "flush", "to", address)
        # The probe works: asked for the uplink's own address, the gateway answers with its MAC.
        silent(net.internet, EXTERNAL, PORT, "udp", timeout=WAIT)
        uplink_mac = neighbour(net.internet, EXTERNAL)
        assert uplink_mac is not None
        silent(net.internet, LEG_C, PORT, "udp", timeout=WAIT)
        time.sleep(WAIT)
        assert neighbour(net.internet, LEG_C) is None
    finally:
        sh("ip", "-n", net.internet, "route", "delete", on_link, check=False)


def test_everything_else_still_works_with_the_private_space_routed_to_the_gateway(
    net: Net, gateway: GatewaySpec, c1: Vm
) -> None:
    a1 = net.vms["a1"].ns
    with echo_server(net.internet, 9000), echo_server(a1, 80):
        assert source_address(ask(a1, INTERNET, 9000)) == EXTERNAL  # SNAT
        assert source_address(ask(c1.ns, INTERNET, 9000)) == EXTERNAL
        assert source_address(ask(net.internet, PUBLIC, 8080)) == INTERNET  # the port forward
        assert silent(net.internet, "10.20.0.5", 80, timeout=WAIT)  # the VM itself: default deny
