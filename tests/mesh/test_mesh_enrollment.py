"""Enrollment on the mesh through the HTTPS endpoint the agent's bootstrap calls (``/enroll/v1/join``),
answered by an orchestrator process with the mesh's settings: a range with no address left says so
at the join, before the token is used or anything is written; an address freed is given at once."""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.test import override_settings

from agentclient import host_identity
from agentclient.enrollment import JOIN_PATH
from agentclient.wireguard import new_private_key, public_key
from devstack.net import free_port
from devstack.processes import Process
from devstack.world import World
from devstack.world.config import AGENT_PORT
from orchestrator.auth import ADMIN, Principal
from orchestrator.services import enrollment, mesh
from orchestrator.services.context import Context
from orchestrator.sources.kube import KubeSource, kube
from tests import addresses
from tests.enrollkit import csr, host_spec, post, remove_host

ZONE = "zone-b"
# Five node addresses (.2 to .6; the hub has .1): small enough to fill in a test.
SMALL = f"10.{addresses.WORLD}.102.0/29"


@dataclass
class SmallMesh:
    rid: str
    replica: Process
    https_url: str
    fillers: list[mesh.MeshPeer]


@pytest.fixture
def small_mesh(world: World, wired: KubeSource) -> Iterator[SmallMesh]:
    """An orchestrator on a /29 mesh whose five node addresses are all given to other hosts."""
    rid = secrets.token_hex(2)
    env = {
        "FLEXPLANE_MESH_RANGE": SMALL,
        "FLEXPLANE_MESH_HUB_ENDPOINT": "203.0.113.9:51820",
        "FLEXPLANE_MESH_HUB_SECRET": f"mesh-hub-{rid}",
    }
    host = world.cfg.orchestrator_host
    port, https_port = free_port(host), free_port(host)
    with override_settings(**env):
        replica: Process | None = None
        try:
            mesh.ensure_hub_key(wired)
            fillers = [
                mesh.allocate(wired, ZONE, f"x{rid}f{n}", public_key(new_private_key())) for n in range(5)
            ]
            replica = world.spawn_orchestrator(f"orchestrator-mesh-small-{rid}", port, https_port, env)
            yield SmallMesh(rid, replica, f"https://{host}:{https_port}", fillers)
        finally:
            if replica is not None:
                replica.stop()
            small = ipaddress.ip_network(SMALL)
            for peer in mesh.peers(wired):
                if ipaddress.ip_address(peer.address) in small:
                    mesh.drop(wired, peer)
            secret = wired.get_secret(f"mesh-hub-{rid}")
            if secret is not None:
                wired.delete_secret(secret)


def admin() -> Context:
    return Context(principal=Principal("mesh-test", "mesh test", "", frozenset({ADMIN})))


def test_an_exhausted_range_is_said_at_the_join_and_a_freed_address_is_given_to_the_next(
    world: World, wired: KubeSource, small_mesh: SmallMesh
) -> None:
    node = f"x{small_mesh.rid}new"
    token = enrollment.create_join_token(admin(), ZONE, node, small_mesh.https_url).token
    body = {
        "token": token,
        "csr": csr(host_identity(ZONE, node)),
        "endpoint": f"192.0.2.7:{AGENT_PORT}",
        "mesh_public_key": public_key(new_private_key()),
    }
    try:
        answer = post(world, JOIN_PATH, body, base=small_mesh.https_url)
        assert answer.status_code == 503, answer.text
        error = answer.json()["error"]
        assert error["code"] == "UNAVAILABLE"
        assert f"the mesh range {SMALL} is exhausted: all 5 node addresses are given" in error["message"]
        assert "widen FLEXPLANE_MESH_RANGE" in error["message"]
        # Said at the join: nothing written, the token not used.
        assert host_spec(world, ZONE, node) is None
        assert mesh.peer_of(ZONE, node, mesh.peers(kube())) is None
        # An address freed (its host left): the same token enrolls the node there, no other step.
        freed = small_mesh.fillers[2]
        mesh.drop(wired, freed)
        answer = post(world, JOIN_PATH, body, base=small_mesh.https_url)
        assert answer.status_code == 200, answer.text
        settings = answer.json()["settings"]
        assert settings["mesh"]["address"] == f"{freed.address}/29"
        assert settings["listen"] == f"{freed.address}:{AGENT_PORT}"
        spec = host_spec(world, ZONE, node)
        assert spec is not None
        assert spec["endpoint"] == f"{freed.address}:{AGENT_PORT}"
    finally:
        remove_host(world, ZONE, node)
