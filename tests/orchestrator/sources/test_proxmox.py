"""Faults on the way to Proxmox: agents gone. (A node or a zone down, or too slow: tests/resilience.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from devstack.world import World
from tests.apikit import GraphQL
from tests.orchestrator.hostkit import reached_again

LIST = "{ virtualMachines { edges { node { name zone } } } }"


def zones_seen(answer) -> set[str]:
    return {e["node"]["zone"] for e in answer.data["virtualMachines"]["edges"]}


@contextmanager
def agents_stopped(api: GraphQL, world: World, zone: str, *nodes: str) -> Iterator[None]:
    for node in nodes:
        world.stop_agent(zone, node)
    try:
        yield
    finally:
        for node in nodes:
            world.start_agent(zone, node)
        for node in nodes:
            reached_again(api, zone, node)


def test_a_stopped_agent_is_failed_over(api: GraphQL, world: World) -> None:
    with agents_stopped(api, world, "zone-a", "pve1", "pve2"):
        for _ in range(3):
            answer = api(LIST, user="admin")
            assert answer.errors == []
            assert zones_seen(answer) == {"zone-a", "zone-b"}


def test_a_zone_without_a_running_agent_is_reported_unavailable(api: GraphQL, world: World) -> None:
    with agents_stopped(api, world, "zone-b", "pve1", "pve2", "pve3"):
        answer = api("{ zones { id hosts { name online } } }", user="admin")
    zones = {z["id"]: z for z in answer.data["zones"]}
    assert all(h["online"] for h in zones["zone-a"]["hosts"])
    assert not any(h["online"] for h in zones["zone-b"]["hosts"])
    assert answer.codes == ["UNAVAILABLE"]
    assert answer.errors[0]["path"] == ["zones"]
