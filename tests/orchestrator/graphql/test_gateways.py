"""Edge gateways through the whole stack: the GraphQL API, the orchestrator, the management cluster
(each gateway's ConfigMap) and the world's agents, which run the gateways a node is sent.

zone-a gets an external network for the module (its pool 203.0.113.10-203.0.113.60, gateways on pve1 and
pve2) and loses it afterwards; each test acts in VDCs of its own (scratch VDCs of zone-a, admin acting).
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from devstack.world import World
from orchestrator.models.gateways import GATEWAY_KIND, gateway_id
from tests.apikit import GraphQL, eventually
from tests.gatewaykit import (
    POOL,
    UPDATE_ZONE,
    bridge,
    clean_gateway,
    external_network,
    external_settings,
    unbridge,
    vnets_of,
)
from tests.kubekit import world_kube
from tests.vmkit import payload, scratch_vdcs

ZONE = "zone-a"
EXTERNAL = external_settings("")  # the module's bridge is named in each use
ERRORS = "errors { field message code }"
GATEWAY_FIELDS = """id vdc zone node generation appliedGeneration applied uplinkAddress networks
  publicIps { address natTo portForwards { port } } portForwards { publicIp protocol port toAddress toPort }
  firewallRules { position direction action protocol source destination portFrom portTo }"""
ALLOCATE = f"""mutation($zone: String) {{ allocatePublicIp(zone: $zone) {{
  publicIp {{ address zone vdc natTo }} {ERRORS} }} }}"""
RELEASE = f"""mutation($address: String!) {{ releasePublicIp(address: $address) {{
  publicIp {{ address }} {ERRORS} }} }}"""
ATTACH = f"""mutation($address: String!, $to: String!) {{ attachPublicIp(address: $address, toAddress: $to) {{
  publicIp {{ address natTo }} {ERRORS} }} }}"""
FORWARD = f"""mutation($input: PortForwardInput!) {{ addPortForward(input: $input) {{
  publicIp {{ address portForwards {{ protocol port toAddress toPort }} }} {ERRORS} }} }}"""
UNFORWARD = f"""mutation($ip: String!, $protocol: String!, $port: Int!) {{
  removePortForward(publicIp: $ip, protocol: $protocol, port: $port) {{
    publicIp {{ address }} {ERRORS} }} }}"""
RULE = f"""mutation($zone: String, $input: GatewayFirewallRuleInput!) {{
  addGatewayFirewallRule(zone: $zone, input: $input) {{ edgeGateway {{ {GATEWAY_FIELDS} }} {ERRORS} }} }}"""
GATEWAY = f"""query($zone: String) {{ edgeGateway(zone: $zone) {{ {GATEWAY_FIELDS}
  status {{ answered healthy generation detail counters {{ name value }} }} }} }}"""
CREATE = f"""mutation($zone: String) {{ createEdgeGateway(zone: $zone) {{
  edgeGateway {{ applied node }} {ERRORS} }} }}"""
CREATE_NETWORK = f"""mutation($input: CreateNetworkInput!) {{ createNetwork(input: $input) {{
  network {{ id vnet }} {ERRORS} }} }}"""
PUBLIC_IPS = "{ publicIps { address zone vdc } }"
USAGE = "query($id: ID!) { vdc(id: $id) { quota { publicIps } usage { publicIps } } }"


@pytest.fixture(scope="module")
def external(api: GraphQL, world: World) -> Iterator[str]:
    """zone-a with an external network for the module's tests, on a bridge of the module's own."""
    with external_network(api, world, "x") as name:
        yield name


@pytest.fixture
def vdc(api: GraphQL, world: World, external: str) -> Iterator[Callable[..., str]]:
    """Scratch VDCs of zone-a (admin acts in them), their default network's VNet a bridge on this
    machine as on a node; their gateways go with them."""
    made: list[str] = []
    vnets: list[str] = []
    with scratch_vdcs(api, world) as make:

        def scratch(**quota: int) -> str:
            ident = make(**quota)
            made.append(ident)
            for vnet in vnets_of(api, ident):
                vnets.append(vnet)
                bridge(vnet)
            return ident

        try:
            yield scratch
        finally:
            for ident in made:
                clean_gateway(api, ident)
            for vnet in vnets:
                unbridge(vnet)


def stored(world: World, vdc: str) -> dict[str, Any] | None:
    """The gateway's ConfigMap spec as the management cluster holds it."""
    source = world_kube(world)
    entry = source.get_catalog(GATEWAY_KIND, gateway_id(vdc, ZONE))
    return None if entry is None else entry.spec


def allocate(api: GraphQL, vdc: str) -> dict[str, Any]:
    return payload(api(ALLOCATE, user="admin", vdc=vdc, variables={"zone": ZONE}), "allocatePublicIp")


def gateway_of(api: GraphQL, vdc: str) -> dict[str, Any]:
    answer = api(GATEWAY, user="admin", vdc=vdc, variables={"zone": ZONE})
    assert answer.errors == [], answer.errors
    found: dict[str, Any] = answer.data["edgeGateway"]
    return found


def codes(result: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(e["field"], e["code"]) for e in result["errors"]]


# ------------------------------------------------------------------------------------------ the zone


def test_a_zones_external_network_that_does_not_hold_together_is_invalid_naming_the_field(
    api: GraphQL, external: str
) -> None:
    bad = {**EXTERNAL, "externalBridge": external, "externalPool": "198.51.100.10-198.51.100.20"}
    answer = payload(api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": bad}), "updateZone")
    assert [(e["field"], e["code"]) for e in answer["errors"]] == [("externalPool", "INVALID")]
    now = api("{ zones { id externalNetwork { pool nodes } } }", user="admin").data["zones"]
    assert {"pool": [POOL], "nodes": ["pve1", "pve2"]} in [
        z["externalNetwork"] for z in now if z["id"] == ZONE
    ]


# ------------------------------------------------------------------------------------------ public IPs


def test_the_first_public_ip_makes_the_gateway_records_it_and_runs_it_on_an_allowed_host(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    ident = vdc()
    made = allocate(api, ident)
    assert made["errors"] == []
    address = made["publicIp"]["address"]
    assert ipaddress.IPv4Address(address) in ipaddress.IPv4Network("203.0.113.0/24")
    spec = stored(world, ident)
    assert spec is not None
    assert [p["address"] for p in spec["publicIps"]] == [address]
    assert spec["uplinkAddress"] != address
    gateway = gateway_of(api, ident)
    assert gateway["node"] in ("pve1", "pve2")
    assert gateway["generation"] == spec["generation"]
    assert [n.split("/")[0] for n in gateway["networks"]] == [ZONE]  # its default network's leg
    assert gateway["applied"] is True, gateway
    assert spec["appliedGeneration"] == spec["generation"]


def test_public_ips_are_counted_in_the_vdcs_quota_and_refused_past_it(
    api: GraphQL, vdc: Callable[..., str]
) -> None:
    """The gateway's uplink address (made with the first allocation) is one of the VDC's public IPs."""
    ident = vdc(publicIps=3)
    for _ in range(2):
        assert allocate(api, ident)["errors"] == []
    refused = allocate(api, ident)
    assert codes(refused) == [(None, "QUOTA_EXCEEDED")], refused
    assert "public IPs" in refused["errors"][0]["message"]
    answer = api(USAGE, user="admin", vdc=ident, variables={"id": ident}).data["vdc"]
    assert answer == {"quota": {"publicIps": 3}, "usage": {"publicIps": 3}}


def test_a_vdc_without_public_ips_in_its_quota_gets_no_gateway(api: GraphQL, vdc: Callable[..., str]) -> None:
    """A gateway's uplink address comes from the zone's public pool, which every tenant shares."""
    ident = vdc(publicIps=0)
    refused = payload(api(CREATE, user="admin", vdc=ident, variables={"zone": ZONE}), "createEdgeGateway")
    assert codes(refused) == [(None, "QUOTA_EXCEEDED")], refused
    assert "public IPs" in refused["errors"][0]["message"]
    answer = api(USAGE, user="admin", vdc=ident, variables={"id": ident}).data["vdc"]
    assert answer == {"quota": {"publicIps": 0}, "usage": {"publicIps": 0}}


def test_concurrent_allocations_never_take_a_vdc_past_its_public_ips_its_gateways_uplink_included(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    ident = vdc(publicIps=3)
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda _: allocate(api, ident), range(6)))
    assert sorted(codes(r) for r in results) == [[]] * 2 + [[(None, "QUOTA_EXCEEDED")]] * 4
    answer = api(USAGE, user="admin", vdc=ident, variables={"id": ident}).data["vdc"]
    assert answer == {"quota": {"publicIps": 3}, "usage": {"publicIps": 3}}


def test_twenty_concurrent_allocations_in_two_vdcs_never_hand_out_an_address_twice(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    first, second = vdc(publicIps=11), vdc(publicIps=11)  # each: its gateway's uplink and 10
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda i: allocate(api, first if i % 2 else second), range(20)))
    assert [r["errors"] for r in results] == [[]] * 20, [r["errors"] for r in results if r["errors"]]
    addresses = [r["publicIp"]["address"] for r in results]
    uplinks = [stored(world, v)["uplinkAddress"] for v in (first, second)]  # type: ignore[index]
    assert len(set(addresses + uplinks)) == 22
    held = {v: [p["address"] for p in stored(world, v)["publicIps"]] for v in (first, second)}  # type: ignore[index]
    assert sorted(held[first] + held[second]) == sorted(addresses)


# ------------------------------------------------------------------------------------------ bad input


def test_bad_port_forwards_are_invalid_naming_the_field_and_change_nothing(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    mine, theirs = vdc(), vdc()
    address = allocate(api, mine)["publicIp"]["address"]
    foreign = allocate(api, theirs)["publicIp"]["address"]
    good = {"publicIp": address, "protocol": "tcp", "port": 8080, "toAddress": "10.0.0.20", "toPort": 80}
    assert (
        payload(api(FORWARD, user="admin", vdc=mine, variables={"input": good}), "addPortForward")["errors"]
        == []
    )
    before = stored(world, mine)
    for changes, field in (
        ({}, "port"),  # already forwarded
        ({"port": 70000}, "port"),
        ({"port": 8081, "toPort": 0}, "toPort"),
        ({"port": 8081, "publicIp": foreign}, "publicIp"),  # another VDC's
        ({"port": 8081, "publicIp": "203.0.113.250"}, "publicIp"),  # nobody's: alike
        ({"port": 8081, "toAddress": "10.99.0.5"}, "toAddress"),  # not on the VDC's networks
        ({"port": 8081, "toAddress": "10.0.0.2"}, "toAddress"),  # kept back by NIC allocation
        ({"port": 8081, "protocol": "sctp"}, "protocol"),
    ):
        answer = payload(
            api(FORWARD, user="admin", vdc=mine, variables={"input": {**good, **changes}}), "addPortForward"
        )
        assert codes(answer) == [(field, "INVALID")], (changes, answer)
    # A 1:1 NAT's target alike.
    nat = payload(
        api(ATTACH, user="admin", vdc=mine, variables={"address": address, "to": "10.0.0.2"}),
        "attachPublicIp",
    )
    assert codes(nat) == [("toAddress", "INVALID")], nat
    assert stored(world, mine) == before


def test_a_port_forward_a_one_to_one_nat_and_a_firewall_rule_reach_the_host_in_one_generation_each(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    ident = vdc()
    first = allocate(api, ident)["publicIp"]["address"]
    second = allocate(api, ident)["publicIp"]["address"]
    start = gateway_of(api, ident)["generation"]
    forward = {"publicIp": first, "protocol": "tcp", "port": 8080, "toAddress": "10.0.0.20", "toPort": 80}
    answer = payload(api(FORWARD, user="admin", vdc=ident, variables={"input": forward}), "addPortForward")
    assert answer["errors"] == []
    assert answer["publicIp"]["portForwards"] == [
        {"protocol": "tcp", "port": 8080, "toAddress": "10.0.0.20", "toPort": 80}
    ]
    nat = payload(
        api(ATTACH, user="admin", vdc=ident, variables={"address": second, "to": "10.0.0.21"}),
        "attachPublicIp",
    )
    assert nat["errors"] == []
    assert nat["publicIp"]["natTo"] == "10.0.0.21"
    rule = {
        "direction": "in",
        "action": "allow",
        "protocol": "tcp",
        "destination": "10.0.0.20/32",
        "portFrom": 80,
    }
    ruled = payload(
        api(RULE, user="admin", vdc=ident, variables={"zone": ZONE, "input": rule}), "addGatewayFirewallRule"
    )
    assert ruled["errors"] == []
    gateway = gateway_of(api, ident)
    assert gateway["generation"] == start + 3
    assert gateway["firewallRules"] == [
        {
            "position": 0,
            "direction": "in",
            "action": "allow",
            "protocol": "tcp",
            "source": "0.0.0.0/0",
            "destination": "10.0.0.20/32",
            "portFrom": 80,
            "portTo": 80,
        }
    ]
    assert gateway["applied"] is True
    status = gateway_of(api, ident)
    removed = payload(
        api(UNFORWARD, user="admin", vdc=ident, variables={"ip": first, "protocol": "tcp", "port": 8080}),
        "removePortForward",
    )
    assert removed["errors"] == []
    assert gateway_of(api, ident)["portForwards"] == []
    assert status["applied"] is True


# ------------------------------------------------------------------------------------------ isolation


def test_another_vdcs_gateway_and_public_ips_are_as_missing_as_none(
    api: GraphQL, vdc: Callable[..., str]
) -> None:
    ident = vdc()
    address = allocate(api, ident)["publicIp"]["address"]
    theirs = api(GATEWAY, user="bob", vdc="other", variables={"zone": ZONE})
    assert [e["extensions"]["code"] for e in theirs.errors] == ["NOT_FOUND"]
    assert address not in [p["address"] for p in api(PUBLIC_IPS, user="bob", vdc="other").data["publicIps"]]
    assert address not in [p["address"] for p in api(PUBLIC_IPS, user="alice").data["publicIps"]]
    released = payload(
        api(RELEASE, user="bob", vdc="other", variables={"address": address}), "releasePublicIp"
    )
    assert codes(released) == [("address", "INVALID")]
    nobodys = payload(
        api(RELEASE, user="bob", vdc="other", variables={"address": "203.0.113.250"}), "releasePublicIp"
    )
    assert released["errors"][0]["message"].replace(address, "X") == nobodys["errors"][0]["message"].replace(
        "203.0.113.250", "X"
    )


# ------------------------------------------------------------------------------------------ faults and moves


def test_an_agent_that_does_not_answer_is_unavailable_naming_its_host_and_the_change_is_applied_later(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    ident = vdc()
    address = allocate(api, ident)["publicIp"]["address"]
    host = gateway_of(api, ident)["node"]
    world.stop_agent(ZONE, host)
    try:
        forward = {"publicIp": address, "protocol": "udp", "port": 5353, "toAddress": "10.0.0.20"}
        answer = payload(
            api(FORWARD, user="admin", vdc=ident, variables={"input": forward}), "addPortForward"
        )
        assert codes(answer) == [(None, "UNAVAILABLE")], answer
        assert host in answer["errors"][0]["message"]
        spec = stored(world, ident)
        assert spec is not None
        assert [f["port"] for f in spec["forwards"]] == [5353]  # recorded
        assert spec["appliedGeneration"] < spec["generation"]
    finally:
        world.start_agent(ZONE, host)
    # The next change of the gateway (here: asking for it again) sends what was recorded, once the
    # orchestrator's channel to the agent is back (gRPC reconnects with a backoff).

    def resent() -> dict[str, Any] | None:
        answer = payload(api(CREATE, user="admin", vdc=ident, variables={"zone": ZONE}), "createEdgeGateway")
        return answer if answer["errors"] == [] else None

    again = eventually(resent, 30, "a resend once the agent is back", interval=0.5)
    assert again is not None
    assert again["edgeGateway"] == {"applied": True, "node": host}


def test_draining_the_gateways_host_moves_it_to_the_other_allowed_host(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    ident = vdc()
    allocate(api, ident)
    host = gateway_of(api, ident)["node"]
    other = "pve2" if host == "pve1" else "pve1"
    drain = f"""mutation {{ drainHost(zone: "{ZONE}", host: "{host}") {{ errors {{ message }} }} }}"""
    undo = f"""mutation {{ uncordonHost(zone: "{ZONE}", host: "{host}") {{ errors {{ message }} }} }}"""
    try:
        assert payload(api(drain, user="admin"), "drainHost")["errors"] == []
        moved = eventually(
            lambda: (s := stored(world, ident)) is not None and s["node"] == other and s, 30, "the move"
        )
        assert isinstance(moved, dict)
        assert moved["appliedGeneration"] == moved["generation"]
        assert moved["leftOn"] == []  # removed from the drained host, which answers
    finally:
        # The drain goes on moving the host's VMs, and uncordoning is refused (CONFLICT) while it runs:
        # let it end, so that the host is usable again for the modules after this one.
        state = f"""{{ hostDrain(zone: "{ZONE}", host: "{host}") {{ state }} }}"""
        eventually(
            lambda: (payload(api(state, user="admin"), "hostDrain") or {}).get("state") != "RUNNING",
            120,
            "the drain's end",
        )
        assert payload(api(undo, user="admin"), "uncordonHost")["errors"] == []


def test_deleting_a_vdc_removes_its_gateway_from_its_host_and_gives_its_addresses_back(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    ident = vdc()
    assert allocate(api, ident)["errors"] == []
    assert stored(world, ident) is not None
    gone = api(
        "mutation($id: ID!) { deleteVdc(id: $id) { errors { message } } }",
        user="admin",
        variables={"id": ident},
    )
    assert gone.data["deleteVdc"]["errors"] == []
    assert stored(world, ident) is None
    namespaces = subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, text=True).stdout
    assert f"fpgw-{ident}.{ZONE}" not in namespaces


def test_a_network_made_after_the_gateway_gets_a_leg_on_it_and_loses_it_when_deleted(
    api: GraphQL, world: World, vdc: Callable[..., str]
) -> None:
    ident = vdc()
    assert allocate(api, ident)["errors"] == []
    made = payload(
        api(
            CREATE_NETWORK,
            user="admin",
            vdc=ident,
            variables={"input": {"name": "later", "zone": ZONE, "cidr": "10.77.0.0/24"}},
        ),
        "createNetwork",
    )
    assert made["errors"] == []
    network = made["network"]
    bridge(network["vnet"])
    try:
        assert network["id"] in gateway_of(api, ident)["networks"]
        again = payload(api(CREATE, user="admin", vdc=ident, variables={"zone": ZONE}), "createEdgeGateway")
        assert again["edgeGateway"]["applied"] is True, again
        deleted = api(
            f"mutation($id: ID!) {{ deleteNetwork(id: $id) {{ {ERRORS} }} }}",
            user="admin",
            vdc=ident,
            variables={"id": network["id"]},
        )
        assert deleted.data["deleteNetwork"]["errors"] == []
        after = gateway_of(api, ident)
        assert network["id"] not in after["networks"]
        assert after["applied"] is True
    finally:
        unbridge(network["vnet"])
