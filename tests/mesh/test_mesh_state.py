"""The mesh's state in the management cluster (in memory): addresses allocated race-free, keys checked, a full
range said at enrollment, a removed host's address given back."""

from __future__ import annotations

import ipaddress
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.test import override_settings

from agentclient.wireguard import new_private_key, public_key
from orchestrator.errors import Unavailable, ValidationFailed
from orchestrator.services import mesh
from tests.orchestrator.fakekube import FakeKube


def key() -> str:
    return public_key(new_private_key())


def test_concurrent_enrollments_never_get_the_same_address(meshed: FakeKube) -> None:
    nodes = [f"race{n}" for n in range(16)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        peers = list(pool.map(lambda node: mesh.allocate(meshed, "zone-a", node, key()), nodes))
    addresses = [p.address for p in peers]
    assert len(set(addresses)) == len(nodes)
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network("10.77.0.0/24") for a in addresses)
    assert "10.77.0.1" not in addresses  # the hub's
    stored = {p.host_key: p.address for p in mesh.peers(meshed)}
    assert stored == {p.host_key: p.address for p in peers}


def test_a_node_enrolling_again_keeps_its_address_with_its_new_key(meshed: FakeKube) -> None:
    first = mesh.allocate(meshed, "zone-a", "again", key())
    second_key = key()
    second = mesh.allocate(meshed, "zone-a", "again", second_key)
    assert second.address == first.address
    assert mesh.peer_of("zone-a", "again", mesh.peers(meshed)).public_key == second_key  # type: ignore[union-attr]


def test_a_malformed_key_is_refused_naming_the_field(meshed: FakeKube) -> None:
    for bad in ["", "not-base64!", "c2hvcnQ=", "A" * 44, None, 42]:
        with pytest.raises(ValidationFailed) as refused:
            mesh.check_key(meshed, bad, "zone-a", "bad", [])
        assert refused.value.field == "mesh_public_key"


def test_a_key_another_host_has_is_refused_naming_that_host(meshed: FakeKube) -> None:
    taken = key()
    mesh.allocate(meshed, "zone-a", "owner", taken)
    with pytest.raises(ValidationFailed, match=r"already zone-a/owner's"):
        mesh.check_key(meshed, taken, "zone-a", "copycat", mesh.peers(meshed))
    assert mesh.check_key(meshed, taken, "zone-a", "owner", mesh.peers(meshed)) == taken


def test_the_hubs_own_key_is_refused(meshed: FakeKube) -> None:
    _, hub_public = mesh.ensure_hub_key(meshed)
    assert mesh.ensure_hub_key(meshed)[1] == hub_public  # made once, then read
    with pytest.raises(ValidationFailed, match="the hub's"):
        mesh.check_key(meshed, hub_public, "zone-a", "sly", [])


def test_an_exhausted_range_is_said_before_anything_is_written(meshed: FakeKube) -> None:
    with override_settings(FLEXPLANE_MESH_RANGE="10.77.1.0/29"):  # the hub and five nodes
        for n in range(5):
            mesh.allocate(meshed, "zone-a", f"full{n}", key())
        with pytest.raises(Unavailable, match=r"mesh range 10\.77\.1\.0/29 is exhausted"):
            mesh.check_room(mesh.peers(meshed), "zone-a", "one-more")
        with pytest.raises(Unavailable, match="exhausted"):
            mesh.allocate(meshed, "zone-a", "one-more", key())
        mesh.check_room(mesh.peers(meshed), "zone-a", "full0")  # a node already in the mesh keeps its place
        mesh.forget(meshed, "zone-a", "full2")
        assert mesh.allocate(meshed, "zone-a", "one-more", key()).address == "10.77.1.4"


def test_the_hub_is_unavailable_until_its_key_exists(meshed: FakeKube) -> None:
    with pytest.raises(Unavailable, match="start the mesh control server"):
        mesh.hub(meshed)
    _, public = mesh.ensure_hub_key(meshed)
    hub = mesh.hub(meshed)
    assert (hub.public_key, hub.address, hub.endpoint) == (public, "10.77.0.1", "10.78.0.1:51820")
