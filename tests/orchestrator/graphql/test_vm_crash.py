"""A create whose orchestrator dies half-way, then retried: the retry answers a complete VM, never a
half-made one, and no VM ever starts before its firewall is written.

Each case kills a replica (SIGKILL: no cleanup of its own runs) right after one write of its create has
reached Proxmox: the fake holds that request's answer (the harness's ``delay``), the replica is killed
while it waits, and then the fake lets the request through (``release``): Proxmox carries the write out
all the same. The client then retries on the world's orchestrator with the same idempotency key, as it
would on another replica.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from kubernetes import client
from kubernetes.config import new_client_from_config

from devstack import seed
from devstack.net import free_port
from devstack.processes import Process
from devstack.world import World
from tests.apikit import GraphQL, eventually
from tests.vmkit import CREATE, create, fake_vms, named, scratch_vdcs

ZONE = "zone-a"
# The writes of a create, in order (for a VM with a disk to grow and no user data): its tags under the
# VDC's lock, its configuration, its disk, its firewall, its start, and the tags without fp-state-creating.
CRASH_POINTS = [
    pytest.param("PUT", "/config", 0, id="after-its-tags"),
    pytest.param("PUT", "/config", 1, id="after-its-configuration"),
    pytest.param("PUT", "/resize", 0, id="after-its-disk"),
    pytest.param("PUT", "/firewall/options", 0, id="after-its-firewall"),
    pytest.param("POST", "/status/start", 0, id="after-its-start"),
    pytest.param("PUT", "/config", 2, id="after-its-end"),
]
# The longest the fake holds the write the replica dies after: it lets it through once the replica is
# dead, so the replica never sees its answer however long the kill takes on a busy machine.
HOLD = 30.0


@dataclass(frozen=True)
class Replica:
    """An orchestrator replica of the test's own, started but perhaps not answering yet."""

    process: Process
    port: int


@pytest.fixture
def replica(world: World) -> Iterator[Replica]:
    """A replica that starts while the test's VDC is made (ask for it before ``vdc``); stopped after."""
    host = world.cfg.orchestrator_host
    port = free_port(host)
    process = world.spawn_orchestrator("orchestrator-crash", port, free_port(host), wait=False)
    try:
        yield Replica(process, port)
    finally:
        process.stop()


@pytest.fixture
def vdc(api: GraphQL, world: World) -> Iterator[str]:
    """A VDC of the test's own: the dead replica's lock on it stays until it expires."""
    with scratch_vdcs(api, world) as make:
        yield make()


def expire_leases(world: World, vdc: str) -> None:
    """The dead replica's leases on the VDC, as if their ttl had passed (what a wait would do)."""
    assert world.kubeconfig is not None
    coordination = client.CoordinationV1Api(new_client_from_config(config_file=str(world.kubeconfig)))
    names = [
        str(lease.metadata and lease.metadata.name)
        for lease in coordination.list_namespaced_lease(seed.NAMESPACE).items
    ]
    for name in names:
        if name.startswith(f"fp-lock-vdc-{vdc}"):
            coordination.delete_namespaced_lease(name, seed.NAMESPACE)


def crash_during(
    world: World, replica: Replica, vdc: str, values: dict[str, Any], method: str, suffix: str, skip: int
) -> None:
    """Send the create to ``replica`` and kill the replica once the chosen write has arrived; return once
    Proxmox has carried that write out."""
    host, port = world.cfg.orchestrator_host, replica.port
    world.wait_orchestrator(replica.process, port)
    traffic = world.fakes[ZONE].pve.traffic
    mark_in, mark_out = world.fakes.on_loop(lambda: (traffic.count, traffic.answered))
    world.fakes.on_loop(lambda: traffic.delay(method, suffix, HOLD, skip=skip))
    headers = {"Authorization": f"Bearer {world.token('admin')}", "FlexPlane-VDC-ID": vdc}

    answered: list[str] = []

    def send() -> None:
        # The replica dies under it: a broken connection is what the client sees then.
        with contextlib.suppress(requests.RequestException):
            answer = requests.post(
                f"http://{host}:{port}/graphql",
                json={"query": CREATE, "variables": {"input": values}},
                headers=headers,
                timeout=60,
            )
            answered.append(answer.text)

    def matching(entries: list[tuple[str, str, Any]]) -> int:
        return sum(1 for entry in entries if entry[1] == method and entry[2].endswith(suffix))

    def arrivals() -> int:
        return matching([(a, m, p) for a, m, p in world.fakes.on_loop(lambda: traffic.since(mark_in))])

    def answers() -> int:
        return matching(
            [("", m, p) for m, p, _ in world.fakes.on_loop(lambda: traffic.answers_since(mark_out))]
        )

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        eventually(
            lambda: arrivals() > skip,
            60,
            lambda: f"the create's {method} {suffix} #{skip + 1} (it answered {answered})",
            0.02,
        )
        replica.process.popen.send_signal(signal.SIGKILL)
        replica.process.popen.wait(10)
        world.fakes.on_loop(traffic.release)
        eventually(lambda: answers() > skip, 10, "Proxmox carried the write out", 0.05)
    finally:
        world.fakes.on_loop(traffic.rules.clear)
        world.fakes.on_loop(traffic.release)
    sender.join(10)
    expire_leases(world, vdc)


def requests_for(world: World, vmid: int) -> list[tuple[str, str]]:
    pve = world.fakes[ZONE].pve
    return [(m, p) for m, p, _ in world.fakes.on_loop(lambda: list(pve.requests)) if f"/qemu/{vmid}/" in p]


@pytest.mark.parametrize(("method", "suffix", "skip"), CRASH_POINTS)
def test_a_retry_after_the_orchestrator_died_mid_create_answers_a_complete_vm(
    api: GraphQL, world: World, replica: Replica, vdc: str, method: str, suffix: str, skip: int
) -> None:
    name = f"crash-{vdc}"
    values = {
        "name": name,
        "computeProfile": "small",
        "storageProfile": "standard",
        "image": "debian-12",
        "zone": ZONE,
        "diskGb": 12,
        "idempotencyKey": f"{name}-once",
    }
    crash_during(world, replica, vdc, values, method, suffix, skip)

    retried = create(api, "admin", vdc, **values)
    assert retried["errors"] == [], retried["errors"]
    vm = retried["virtualMachine"]
    assert vm["status"] == "running"
    assert vm["diskGb"] == 12
    [(zone, vmid)] = named(world, name)  # one VM, not a second one
    config = fake_vms(world, zone)[vmid]["config"]
    assert "fp-state-creating" not in str(config.get("tags", ""))
    assert config.get("cores") is not None
    assert config.get("ide2") or config.get("ide0"), "its cloud-init drive"
    # Its firewall was written before it first started.
    sent = requests_for(world, vmid)
    starts = [i for i, (m, p) in enumerate(sent) if m == "POST" and p.endswith("/status/start")]
    firewall = [i for i, (m, p) in enumerate(sent) if m == "PUT" and p.endswith("/firewall/options")]
    assert starts, sent
    assert firewall, sent
    assert firewall[0] < starts[0]


def test_a_vm_whose_create_has_not_ended_says_so_in_its_tags_until_it_runs(
    api: GraphQL, world: World, vdc: str
) -> None:
    """The create's own writes: fp-state-creating on the tag write, gone on the last one, after the start."""
    made = create(api, "admin", vdc, name=f"whole-{vdc}", diskGb=12)
    assert made["errors"] == []
    vmid = int(made["virtualMachine"]["id"].split("/")[1])
    pve = world.fakes[ZONE].pve
    bodies = [
        body.decode()
        for m, p, body in world.fakes.on_loop(lambda: list(pve.requests))
        if m == "PUT" and p.endswith(f"/qemu/{vmid}/config") and b"tags=" in body
    ]
    assert "fp-state-creating" in bodies[0]
    assert "fp-state-creating" not in bodies[-1]
    assert "fp-state-creating" not in str(fake_vms(world, ZONE)[vmid]["config"].get("tags"))
