"""The devstack's world on the mesh (root only): every node in a namespace of its own, the last one
behind a NAT router, enrolled with ``flexplane-agent bootstrap`` run in its namespace, its agent on
its mesh address only; the orchestrator and the hub (``manage.py mesh_hub``) as `make dev` runs them.

The orchestrator lists VMs and creates one on every node over the mesh only: the nodes' own addresses
are unreachable from its namespace, and the agents serve nowhere else.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from agentclient import host_identity
from agentclient.enrollment import JOIN_PATH
from devstack import seed
from devstack.__main__ import mesh_line
from devstack.meshnet import mesh_possible
from devstack.world import World
from devstack.world.config import AGENT_PORT
from tests import addresses
from tests.apikit import GraphQL
from tests.conftest import world_config
from tests.enrollkit import core, csr, host_spec, join_token, post
from tests.vmkit import LIST, create, fake_vms, ok

ZONE = "zone-a"
NODES = ("pve1", "pve2", "pve3")
CORDON = """mutation ($z: String!, $h: String!) { cordonHost(zone: $z, host: $h) { errors { message } } }"""
UNCORDON = (
    """mutation ($z: String!, $h: String!) { uncordonHost(zone: $z, host: $h) { errors { message } } }"""
)
HOSTS = "query ($z: String) { hosts(zone: $z) { id endpoint meshAddress meshLastHandshake } }"


@pytest.fixture(scope="module")
def meshed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    if (why := mesh_possible()) is not None:
        pytest.fail(f"the mesh's world needs root and WireGuard's tools: {why}")
    cfg = dataclasses.replace(
        world_config(Path(tmp_path_factory.mktemp("mesh-world")), addresses.FRAGILE),
        zones=(ZONE,),
        nodes_per_zone=len(NODES),
        mesh=True,
    )
    with World(cfg) as running, override_settings(SECRET_KEY=running.secret_key):
        yield running


@pytest.fixture(scope="module")
def api(meshed: World) -> GraphQL:
    return GraphQL(meshed)


def test_every_node_enrolled_on_the_mesh_the_one_behind_nat_too(meshed: World, api: GraphQL) -> None:
    assert meshed.mesh is not None
    net = meshed.mesh.topology
    deadline = time.monotonic() + 30
    while True:
        hosts = api(HOSTS, user="admin", variables={"z": ZONE}).data["hosts"]
        if all(h["meshLastHandshake"] for h in hosts) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert sorted(h["id"] for h in hosts) == [f"{ZONE}/{n}" for n in NODES]
    for host in hosts:
        address = ipaddress.ip_address(host["meshAddress"])
        assert address in ipaddress.ip_network(net.mesh_range)
        assert host["endpoint"] == f"{address}:{AGENT_PORT}"
        assert host["meshLastHandshake"] is not None
    # The nodes' own addresses: unreachable from the orchestrator's namespace.
    for n in range(1, len(NODES) + 1):
        assert "connected" not in net.connect(None, net.node_direct(n), AGENT_PORT)
    # What `make dev`'s banner says of it.
    assert mesh_line(meshed, None).startswith(f"on: hub {net.hub_public}:51820 (namespace {net.hub})")


def test_the_orchestrator_lists_and_creates_vms_on_every_node_over_the_mesh(
    meshed: World, api: GraphQL
) -> None:
    listed = api(LIST, user="admin", variables={"filter": {"zone": ZONE}})
    assert listed.errors == []
    seeded = {vm["node"]["host"] for vm in listed.data["virtualMachines"]["edges"]}
    assert seeded  # the devstack's seeded guests, read through the agents over the mesh
    made = {}
    for node in NODES:
        others = [n for n in NODES if n != node]
        for other in others:
            api(CORDON, user="admin", variables={"z": ZONE, "h": other})
        try:
            result = ok(create(api, "alice", "demo", name=f"mesh-{node}", zone=ZONE))
        finally:
            for other in others:
                api(UNCORDON, user="admin", variables={"z": ZONE, "h": other})
        made[node] = result["virtualMachine"]["host"]
    assert made == {node: node for node in NODES}
    listed = api(LIST, user="admin", variables={"filter": {"zone": ZONE}})
    hosts = {vm["node"]["name"]: vm["node"]["host"] for vm in listed.data["virtualMachines"]["edges"]}
    for node in NODES:
        assert hosts[f"mesh-{node}"] == node


def test_a_cut_node_is_unavailable_naming_it_while_the_others_answer_and_its_vms_are_untouched(
    meshed: World, api: GraphQL
) -> None:
    assert meshed.mesh is not None
    net = meshed.mesh.topology
    query = "query ($z: String) { hosts(zone: $z) { id agentVersion } }"
    on_pve2 = {vmid: vm for vmid, vm in fake_vms(meshed, ZONE).items() if vm["node"] == "pve2"}
    assert on_pve2
    net.cut(meshed.mesh.index[(ZONE, "pve2")])
    try:
        started = time.monotonic()
        answer = api(query, user="admin", variables={"z": ZONE})
        assert time.monotonic() - started < 6  # the agent's and the zone's deadlines, not a hang
        versions = {h["id"]: h["agentVersion"] for h in answer.data["hosts"]}
        assert versions[f"{ZONE}/pve2"] is None
        assert versions[f"{ZONE}/pve1"]
        assert versions[f"{ZONE}/pve3"]
        assert answer.codes == ["UNAVAILABLE"]
        assert "pve2" in answer.errors[0]["message"]
        listed = api(LIST, user="admin", variables={"filter": {"zone": ZONE}})
        assert listed.errors == []  # the zone answers through its other nodes
    finally:
        net.restore()
    after = {vmid: vm for vmid, vm in fake_vms(meshed, ZONE).items() if vm["node"] == "pve2"}
    assert after == on_pve2  # the node's VMs never noticed
    deadline = time.monotonic() + 20
    while api(query, user="admin", variables={"z": ZONE}).codes:
        assert time.monotonic() < deadline, "pve2 did not answer again after its path was restored"
        time.sleep(0.5)


def test_a_join_with_a_missing_malformed_or_reused_mesh_key_is_refused_naming_it(
    meshed: World, api: GraphQL
) -> None:
    token = join_token(api, ZONE, "pve9")
    request = csr(host_identity(ZONE, "pve9"))
    peers = core(meshed).list_namespaced_config_map(
        seed.NAMESPACE, label_selector="flexplane.io/kind=meshpeer"
    )
    taken = json.loads((peers.items[0].data or {})["spec"])
    body = {"token": token, "csr": request, "endpoint": "10.9.9.9:7443"}
    for key, says in (
        (None, "update flexplane-agent"),
        ("not a key", "not 32 bytes of base64"),
        (taken["publicKey"], f"already {taken['zone']}/{taken['node']}'s"),
    ):
        answer = post(meshed, JOIN_PATH, body if key is None else {**body, "mesh_public_key": key})
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["field"] == "mesh_public_key"
        assert says in error["message"]
    # Nothing was written: the token still works (and the node is not made a host here).
    assert host_spec(meshed, ZONE, "pve9") is None
