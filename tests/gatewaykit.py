"""What the gateway tests share: zone-a's external network for a module, and on this machine the bridges
a node would have (the external bridge, a VDC's VNets), where the world's agents (as root) build their
gateways; and the clean-up of a VDC's gateway (its IPs released, the gateway deleted, its namespace gone).

The names made here are the tests' own (``fp<letter><subnet>`` for the external bridge, the VNets' random
ids) and are removed afterwards, also when a test fails."""

from __future__ import annotations

import fcntl
import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devstack.world import World
from tests.apikit import GraphQL

ZONE = "zone-a"
CIDR, ROUTER, POOL = "203.0.113.0/24", "203.0.113.1", "203.0.113.10-203.0.113.60"
ERRORS = "errors { field message code }"
UPDATE_ZONE = f"""mutation($id: ID!, $input: ZoneUpdateInput!) {{ updateZone(id: $id, input: $input) {{
  zone {{ id externalNetwork {{ bridge cidr gateway pool nodes }} }} {ERRORS} }} }}"""
NO_EXTERNAL = {
    "externalBridge": "",
    "externalCidr": "",
    "externalGateway": "",
    "externalPool": "",
    "gatewayNodes": "",
}


def bridge(name: str) -> None:
    """A bridge on this machine, as a node has it (made anew when a failed run left one)."""
    unbridge(name)
    subprocess.run(["ip", "link", "add", "name", name, "type", "bridge"], check=True, capture_output=True)
    subprocess.run(["ip", "link", "set", name, "up"], check=True, capture_output=True)


def unbridge(name: str) -> None:
    subprocess.run(["ip", "link", "del", name], check=False, capture_output=True)


def external_settings(bridge_name: str, nodes: str = "pve1, pve2") -> dict[str, str]:
    return {
        "externalBridge": bridge_name,
        "externalCidr": CIDR,
        "externalGateway": ROUTER,
        "externalPool": POOL,
        "gatewayNodes": nodes,
    }


@contextmanager
def external_network(api: GraphQL, world: World, letter: str, nodes: str = "pve1, pve2") -> Iterator[str]:
    """zone-a with an external network on a bridge of the caller's own, its gateways on ``nodes``;
    yields the bridge's name."""
    name = f"fp{letter}{world.cfg.subnet}"
    bridge(name)
    settings = external_settings(name, nodes)
    answer = api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": settings})
    assert answer.data["updateZone"]["errors"] == [], answer.body
    try:
        yield name
    finally:
        api(UPDATE_ZONE, user="admin", variables={"id": ZONE, "input": NO_EXTERNAL})
        unbridge(name)


@contextmanager
def demo_gateway() -> Iterator[None]:
    """Hold this machine's lock on VDC demo's gateway: its id (``demo.zone-a``), so its namespace and
    links, are the same in every world, and the worlds of parallel test workers share this machine."""
    path = Path(tempfile.gettempdir()) / "flexplane-tests-demo-gateway.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def vnets_of(api: GraphQL, vdc: str, zone: str = ZONE) -> list[str]:
    """The VNets of the VDC's networks in the zone (the bridges its gateway has legs on)."""
    answer = api("{ networks { vnet zone } }", user="admin", vdc=vdc)
    return [n["vnet"] for n in answer.data["networks"] if n["zone"] == zone]


def clean_gateway(api: GraphQL, vdc: str, zone: str = ZONE) -> None:
    """Release the VDC's public IPs and delete its gateway in the zone (as admin); a namespace a host
    that did not answer kept goes too."""
    for ip in api("{ publicIps { address } }", user="admin", vdc=vdc).data["publicIps"]:
        api(
            f"mutation($a: String!) {{ releasePublicIp(address: $a) {{ {ERRORS} }} }}",
            user="admin",
            vdc=vdc,
            variables={"a": ip["address"]},
        )
    api(f"mutation {{ deleteEdgeGateway(zone: {json.dumps(zone)}) {{ {ERRORS} }} }}", user="admin", vdc=vdc)
    subprocess.run(["ip", "netns", "del", f"fpgw-{vdc}.{zone}"], check=False, capture_output=True)
