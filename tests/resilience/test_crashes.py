"""Real processes killed mid-request: an orchestrator in the middle of a create, an agent in the middle
of a call. Counted at the fakes: the VM is made once, the call reaches Proxmox once.

The world's own orchestrator serves the whole session, so the one killed here is a replica started for
the test beside it (same settings, same agents, same catalog); the create is retried on the world's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests

from devstack.net import free_port
from devstack.world import World
from tests.apikit import GraphQL
from tests.promises import RecordFigure
from tests.resilience.conftest import (
    AGENT_TIMEOUT,
    Arrival,
    Arrivals,
    delay,
    nothing_half_made,
    restart_agent,
    timed,
)
from tests.vmkit import CREATE, create, fake_vms, named, ok, present

pytestmark = pytest.mark.promise("faults")

SUITE = "faults"
# How long the clone is held at the fake while its agent is stopped: within the agent call's deadline.
HOLD = 0.6 * AGENT_TIMEOUT


def wait_for(what: str, found: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := found():
            return result
        time.sleep(0.01)
    raise AssertionError(f"{what} did not happen within {timeout:g} s")


def guest_named(world: World, zone: str, name: str) -> dict[str, Any] | None:
    return next((vm for vm in fake_vms(world, zone).values() if vm["name"] == name), None)


def configured(world: World, name: str) -> dict[str, Any]:
    """The config of zone-a's guest of that name (empty while there is none)."""
    guest = guest_named(world, "zone-a", name) or {}
    config: dict[str, Any] = guest.get("config") or {}
    return config


# ------------------------------------------------------------------------------------ the orchestrator


def test_an_orchestrator_killed_mid_create_and_the_create_retried_makes_exactly_one_vm(
    api: GraphQL, world: World, vm_name: Callable[[str], str], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    host = world.cfg.orchestrator_host
    port = free_port(host)
    replica = world.spawn_orchestrator("orchestrator-killed", port, free_port(host))
    name, key = vm_name("phoenix"), vm_name("phoenix-key")
    variables = {
        "input": {
            "name": name,
            "computeProfile": "small",
            "storageProfile": "standard",
            "image": "debian-12",
            "zone": "zone-a",
            "idempotencyKey": key,
        }
    }
    headers = {"Authorization": f"Bearer {api.token('alice')}", "FlexPlane-VDC-ID": "demo"}
    fake = world.fakes["zone-a"].pve

    def slow(on: bool) -> None:  # every request of the create takes a while: room to kill it midway
        fake.time_scale = 1.0 if on else 0.0
        fake.slow_network(0.1 if on else 0.0)

    world.fakes.on_loop(slow, True)

    def send() -> None:
        # Its orchestrator dies under it: the client only learns that the answer never came.
        with contextlib.suppress(requests.RequestException):
            requests.post(
                f"http://{host}:{port}/graphql",
                json={"query": CREATE, "variables": variables},
                headers=headers,
                timeout=60,
            )

    sender = threading.Thread(target=send)
    sender.start()
    # Past the VDC's lock (the VM is tagged, visible, counted) and being configured: kill it there.
    wait_for("the new VM's configuration", lambda: "ciuser" in configured(world, name))
    os.kill(replica.popen.pid, signal.SIGKILL)
    replica.popen.wait(10)
    sender.join(60)
    world.fakes.on_loop(slow, False)
    left = guest_named(world, "zone-a", name)
    assert left is not None

    retried, elapsed = timed(lambda: create(api, "alice", "demo", **variables["input"]))

    ok(retried)
    assert len(named(world, name)) == 1  # found, not made again
    assert retried["virtualMachine"]["name"] == name
    assert len(arrivals.since_mark("POST", "/clone")) == 1
    record_figure(SUITE, "orchestrator killed mid-create: VMs after the retry", len(named(world, name)))
    record_figure(SUITE, "orchestrator killed mid-create: the retry answered in (s)", round(elapsed, 2))
    # The retry completed what the dead create left (its firewall, then its start): it answers the VM
    # running, with the start's task, never a half-made one (tests/orchestrator/graphql/test_vm_crash.py
    # kills a create after each of its writes).
    vm = retried["virtualMachine"]
    assert vm["status"] == "running"
    assert retried["task"] is not None
    assert retried["task"]["type"] == "qmstart"
    assert "fp-state-creating" not in str(present(world, vm["id"])["config"].get("tags"))


# ------------------------------------------------------------------------------------ an agent


def clone_arrival(arrivals: Arrivals) -> Arrival:
    found: Arrival = wait_for("the clone", lambda: next(iter(arrivals.since_mark("POST", "/clone")), None))
    return found


def create_held_at_its_clone(
    api: GraphQL, world: World, arrivals: Arrivals, name: str
) -> tuple[threading.Thread, dict[str, Any], Arrival]:
    """alice's create of ``name`` under way, its clone held by zone-a's fake for HOLD seconds: the thread
    that creates (its answer lands in the dict once it ends), and the clone's arrival at the fake."""
    delay(world, "zone-a", "POST", "/clone", HOLD)
    outcome: dict[str, Any] = {}
    creating = threading.Thread(target=lambda: outcome.update(create(api, "alice", "demo", name=name)))
    creating.start()
    return creating, outcome, clone_arrival(arrivals)


def test_an_agent_stopped_mid_call_finishes_it_and_the_create_completes(
    api: GraphQL, world: World, vm_name: Callable[[str], str], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    """SIGTERM, as systemd stops it: the agent finishes the calls in flight, then exits."""
    name = vm_name("graceful")
    creating, outcome, clone = create_held_at_its_clone(api, world, arrivals, name)
    world.stop_agent(clone.zone, clone.node)  # waits for it to exit
    creating.join(120)
    restart_agent(api, clone.zone, clone.node)

    vm = ok(outcome)["virtualMachine"]
    assert present(world, vm["id"])["status"] == "running"
    assert len(arrivals.since_mark("POST", "/clone")) == 1
    assert len(named(world, name)) == 1
    record_figure(SUITE, "agent stopped mid-clone: the create", "completed, one clone")


def test_an_agent_killed_mid_call_fails_it_cleanly_and_never_twice(
    api: GraphQL, world: World, vm_name: Callable[[str], str], arrivals: Arrivals, record_figure: RecordFigure
) -> None:
    """SIGKILL: the call's answer is lost; Proxmox made the clone anyway. The create says it may have, does
    not send it again, and the VDC's next create removes what it left."""
    name = vm_name("killed")
    creating, outcome, clone = create_held_at_its_clone(api, world, arrivals, name)
    agent = world.agents[(clone.zone, clone.node)]
    assert agent.process is not None
    os.kill(agent.process.popen.pid, signal.SIGKILL)
    agent.process.popen.wait(10)
    creating.join(120)
    restart_agent(api, clone.zone, clone.node)

    assert outcome["virtualMachine"] is None
    assert [e["code"] for e in outcome["errors"]] == ["UNAVAILABLE"]
    assert "the call may have run" in outcome["errors"][0]["message"]
    assert len(arrivals.since_mark("POST", "/clone")) == 1
    wait_for("the held clone", lambda: guest_named(world, "zone-a", name))  # Proxmox made it, untagged
    ok(create(api, "alice", "demo", name=vm_name("next")))
    nothing_half_made(world, name, "zone-a", None)
    record_figure(SUITE, "agent killed mid-clone: the create", "UNAVAILABLE, one clone, leftover removed")
