"""The fault and load suites' kit: faults injected into the world's fake Proxmox zones and undone after
every test (the world is shared by the whole session), what reached each node of the fakes, and timings.

What reaches a fake is read from the harness's own count (``devstack.fakezones.Traffic``): every
request as it arrives at a node's address, dropped ones too, so that a retry anywhere on the way
(the orchestrator, the agent, an HTTP library) shows as a second arrival.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from devstack.world import World
from tests.apikit import GraphQL
from tests.conftest import DEADLINES
from tests.vmkit import fake_vm, fake_vms, named, pool_members, restore, vm_names, volumes_of

# The world's orchestrator runs with these deadlines (tests/conftest.py).
AGENT_TIMEOUT = float(dict(DEADLINES)["AGENT_TIMEOUT"])
ZONE_DEADLINE = float(dict(DEADLINES)["ZONE_DEADLINE"])
# What an answer may take beyond its deadline: the request's own work, on a busy 2-core machine.
SLACK = 1.5
# How long a test waits for the fakes to finish what faults made late, before the next test starts.
SETTLE = 15.0


@dataclass(frozen=True)
class Arrival:
    zone: str
    node: str
    method: str
    path: str


class Arrivals:
    """The requests that reached the fakes' nodes from the moment of ``mark()``."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.marks: dict[str, int] = {}

    def _traffic(self, zone: str) -> Any:
        return self.world.fakes[zone].pve.traffic

    def mark(self) -> None:
        self.marks = {zone: self._count(zone) for zone in self.zones}

    def _count(self, zone: str) -> int:
        count: int = self.world.fakes.on_loop(lambda: self._traffic(zone).count)
        return count

    @property
    def zones(self) -> list[str]:
        return list(self.world.fakes.zones)

    def since_mark(self, method: str | None = None, suffix: str = "") -> list[Arrival]:
        found: list[Arrival] = []
        for zone in self.zones:
            nodes = {address: node for node, address in self.world.fakes[zone].node_addresses.items()}
            seen = self.world.fakes.on_loop(lambda z=zone: self._traffic(z).since(self.marks.get(z, 0)))
            found.extend(
                Arrival(zone, nodes.get(address, address), m, path)
                for address, m, path in seen
                if (method is None or m == method) and path.endswith(suffix)
            )
        return found


@pytest.fixture
def arrivals(world: World) -> Arrivals:
    """Counts what reaches the fakes from the moment the test calls ``mark()`` (marked once already)."""
    counted = Arrivals(world)
    counted.mark()
    return counted


def drop(
    world: World, zone: str, method: str, suffix: str, *, node: str | None = None, times: int | None = 1
) -> None:
    """Drop the connection of the next ``times`` matching requests to the zone (at one node's address)."""
    fake = world.fakes[zone]
    address = fake.node_addresses[node] if node else None
    world.fakes.on_loop(lambda: fake.pve.traffic.drop(method, suffix, address=address, times=times))


def delay(
    world: World, zone: str, method: str, suffix: str, seconds: float, *, node: str | None = None
) -> None:
    """Hold the next matching request to the zone (at one node's address) for ``seconds`` before Proxmox
    handles it."""
    fake = world.fakes[zone]
    address = fake.node_addresses[node] if node else None
    world.fakes.on_loop(lambda: fake.pve.traffic.delay(method, suffix, seconds, address=address))


def in_flight(world: World) -> int:
    """Requests in flight at every fake now."""
    total = 0
    for fake in world.fakes.zones.values():
        total += world.fakes.on_loop(lambda f=fake: sum(f.pve.traffic.in_flight.values()))
    return total


def settle(world: World) -> None:
    """Wait until no request is in flight at any fake (a late one must not land in the next test)."""
    deadline = time.monotonic() + SETTLE
    while in_flight(world) and time.monotonic() < deadline:
        time.sleep(0.05)


# Every host, with what only its agent tells: an UNAVAILABLE error names each agent the orchestrator misses.
AGENTS_QUERY = "{ hosts { id agentVersion } }"
# gRPC reconnects to an agent that was away after a backoff of up to 10 s (agentclient.pool).
RECONNECT = 15.0


def restart_agent(api: GraphQL, zone: str, node: str) -> None:
    """Start a stopped agent again, and wait until the world's orchestrator reaches it (its channel to the
    agent reconnects after a backoff)."""
    api.world.start_agent(zone, node)
    deadline = time.monotonic() + RECONNECT
    while api(AGENTS_QUERY, user="admin").errors and time.monotonic() < deadline:
        time.sleep(0.2)


def running_agents(world: World) -> set[tuple[str, str]]:
    return {
        key
        for key, agent in world.agents.items()
        if agent.process is not None and agent.process.popen.poll() is None
    }


def undo_faults(api: GraphQL, world: World, agents: set[tuple[str, str]]) -> None:
    """Every fault back off: nodes online, quorum, no latency, drops, hangs or injected failures, locks
    released, the ``agents`` that ran before running again; then the fakes finish what the faults made
    late."""
    for zone, node in sorted(agents - running_agents(world)):
        restart_agent(api, zone, node)
    for fake in world.fakes.zones.values():
        pve = fake.pve

        def reset(pve: Any = pve) -> None:
            pve.regain_quorum()
            pve.flaky_network(0.0, 0.0)
            pve.traffic.rules.clear()
            for vm in pve.vms:
                vm.start_error = None

        world.fakes.on_loop(reset)
    restore(world)
    settle(world)


@pytest.fixture
def vm_name(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    """Names for the test's VMs; afterwards the faults are undone and every VM so named is deleted."""
    agents = running_agents(world)
    with vm_names(api, world) as name:
        try:
            yield name
        finally:
            # First: the VMs are deleted through the API, which needs the zones back.
            undo_faults(api, world, agents)


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def snippets(world: World, zone: str | None = None) -> set[str]:
    """The cloud-init snippet files on every node (of a zone), in each agent's snippets folder."""
    found: set[str] = set()
    for (agent_zone, _), agent in world.agents.items():
        folder = agent.config_path.parent / "snippets"
        if zone in (None, agent_zone) and folder.is_dir():
            found.update(path.name for path in folder.iterdir())
    return found


def half_made(world: World, zone: str, vdc: str = "demo") -> list[str]:
    """What failed creates of a VDC left in a zone: VMs in its pool without its tag, snippets of no VM."""
    vms = fake_vms(world, zone)
    pool = pool_members(world, zone, f"fp-{vdc}")
    untagged = [
        f"VM {zone}/{vmid}"
        for vmid in sorted(pool)
        if vmid in vms and f"fp-vdc-{vdc}" not in str(vms[vmid]["config"].get("tags", "")).split(";")
    ]
    prefix = f"fp-{vdc}-"
    orphans = [
        f"snippet {name}"
        for name in sorted(snippets(world, zone))
        if name.startswith(prefix) and int(name[len(prefix) :].split("-")[0]) not in vms
    ]
    return untagged + orphans


def nothing_half_made(world: World, name: str, zone: str, vmid: int | None, vdc: str = "demo") -> None:
    """No VM of that name anywhere; none of that VMID, no disk or pool membership of it; and nothing a
    failed create of the VDC left in the zone."""
    assert named(world, name) == []
    assert half_made(world, zone, vdc) == []
    if vmid is None:
        return
    assert fake_vm(world, f"{zone}/{vmid}") is None
    assert volumes_of(world, zone, vmid) == []
    assert vmid not in pool_members(world, zone, f"fp-{vdc}")
