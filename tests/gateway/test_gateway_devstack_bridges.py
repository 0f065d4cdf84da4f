"""The devstack's gateway bridges: each node namespace's bridges follow its zone's applied VNets."""

from __future__ import annotations

import json
import secrets

from devstack.gatewaynet import GatewayBridges
from tests.gateway.topology import sh


def bridges_in(ns: str) -> set[str]:
    listed = sh("ip", "-n", ns, "-j", "link", "show", "type", "bridge").stdout
    return {link["ifname"] for link in json.loads(listed or "[]")}


def test_the_bridges_follow_the_zones_vnets_and_only_those_made_here_go() -> None:
    rid = secrets.token_hex(3)
    nodes = {("zone-a", "pve1"): f"fgt-{rid}-a1", ("zone-b", "pve1"): f"fgt-{rid}-b1"}
    for ns in nodes.values():
        sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", nodes["zone-a", "pve1"], "link", "add", "keepme", "type", "bridge")
        vnets = {"zone-a": {"vmbr0", "fpv1"}, "zone-b": {"vmbr0"}}
        syncer = GatewayBridges(nodes, lambda zone: vnets[zone])
        syncer.sync()
        assert bridges_in(nodes["zone-a", "pve1"]) == {"keepme", "vmbr0", "fpv1"}
        assert bridges_in(nodes["zone-b", "pve1"]) == {"vmbr0"}

        vnets["zone-a"] = {"vmbr0", "fpv2"}
        syncer.sync()
        assert bridges_in(nodes["zone-a", "pve1"]) == {"keepme", "vmbr0", "fpv2"}
    finally:
        for ns in nodes.values():
            sh("ip", "netns", "delete", ns, check=False)
