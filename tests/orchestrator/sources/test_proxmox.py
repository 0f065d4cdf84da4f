"""Faults on the way to Proxmox: a node down, a zone down, an agent gone, a zone too slow."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from devstack.world import World
from tests.support import GraphQL

LIST = "{ virtualMachines { edges { node { name zone } } } }"
DEADLINE = 2.5


def zones_seen(answer) -> set[str]:
    return {e["node"]["zone"] for e in answer.data["virtualMachines"]["edges"]}


@contextmanager
def nodes_offline(world: World, zone: str, *nodes: str) -> Iterator[None]:
    for node in nodes:
        world.fakes.set_node_offline(zone, node)
    try:
        yield
    finally:
        for node in nodes:
            world.fakes.set_node_offline(zone, node, offline=False)


@contextmanager
def agents_stopped(world: World, zone: str, *nodes: str) -> Iterator[None]:
    for node in nodes:
        world.stop_agent(zone, node)
    try:
        yield
    finally:
        for node in nodes:
            world.start_agent(zone, node)


def test_a_node_offline_fails_over_to_another_node_of_its_zone(api: GraphQL, world: World) -> None:
    with nodes_offline(world, "zone-a", "pve1"):
        # Round-robin starts each request at the next agent: three requests meet pve1 at least once.
        for _ in range(3):
            answer = api(LIST, user="admin")
            assert answer.errors == []
            assert zones_seen(answer) == {"zone-a", "zone-b"}


def test_a_zone_whose_nodes_are_all_offline_leaves_the_others_answering(api: GraphQL, world: World) -> None:
    with nodes_offline(world, "zone-b", "pve1", "pve2", "pve3"):
        started = time.monotonic()
        answer = api(LIST, user="alice", vdc="demo")
        elapsed = time.monotonic() - started
    assert zones_seen(answer) == {"zone-a"}
    assert answer.codes == ["UNAVAILABLE"]
    assert answer.errors[0]["extensions"]["zone"] == "zone-b"
    assert "zone-b" in answer.errors[0]["message"]
    assert answer.errors[0]["path"] == ["virtualMachines"]
    assert elapsed < DEADLINE + 1


def test_a_stopped_agent_is_failed_over(api: GraphQL, world: World) -> None:
    with agents_stopped(world, "zone-a", "pve1", "pve2"):
        for _ in range(3):
            answer = api(LIST, user="admin")
            assert answer.errors == []
            assert zones_seen(answer) == {"zone-a", "zone-b"}


def test_a_zone_without_a_running_agent_is_reported_unavailable(api: GraphQL, world: World) -> None:
    with agents_stopped(world, "zone-b", "pve1", "pve2", "pve3"):
        answer = api("{ zones { id hosts { name online } } }", user="admin")
    zones = {z["id"]: z for z in answer.data["zones"]}
    assert all(h["online"] for h in zones["zone-a"]["hosts"])
    assert not any(h["online"] for h in zones["zone-b"]["hosts"])
    assert answer.codes == ["UNAVAILABLE"]
    assert answer.errors[0]["path"] == ["zones"]


def test_a_zone_slower_than_the_deadline_is_given_up_on_in_time(api: GraphQL, world: World) -> None:
    pve = world.fakes["zone-b"].pve

    def slow(on: bool) -> None:
        pve.time_scale = 1 if on else 0
        pve.slow_network(30 if on else 0)

    world.fakes.on_loop(slow, True)
    try:
        started = time.monotonic()
        answer = api(LIST, user="alice", vdc="demo")
        elapsed = time.monotonic() - started
    finally:
        world.fakes.on_loop(slow, False)
    assert zones_seen(answer) == {"zone-a"}
    assert answer.codes == ["UNAVAILABLE"]
    assert answer.errors[0]["extensions"]["zone"] == "zone-b"
    assert elapsed < DEADLINE + 1.5
