"""Hosts through the API as the tests drive them: the mutations and the drain's record, waiting for a drain
to end, and guests of a test's own on a node of the fake Proxmox, on the devstack world or the light one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.apikit import Api, Zones, eventually
from tests.vmkit import forget

GIB = 1024**3
DRAIN_FIELDS = """state message requestedBy startedAt endedAt
  virtualMachines { virtualMachineId vmid name state target reason taskId }"""
CORDON = """mutation($zone: String!, $host: String!) { cordonHost(zone: $zone, host: $host) {
  host { id cordoned } errors { field message code } } }"""
UNCORDON = """mutation($zone: String!, $host: String!) { uncordonHost(zone: $zone, host: $host) {
  host { id cordoned } errors { field message code } } }"""
DRAIN = f"""mutation($zone: String!, $host: String!) {{ drainHost(zone: $zone, host: $host) {{
  drain {{ {DRAIN_FIELDS} }} errors {{ field message code }} }} }}"""
REMOVE = """mutation($zone: String!, $host: String!) { removeHost(zone: $zone, host: $host) {
  host { id name zone } errors { field message code } } }"""
REMOVE_FORCED = """mutation($zone: String!, $host: String!) {
  removeHost(zone: $zone, host: $host, force: true) { host { id } errors { field message code } } }"""
STATUS = f"""query($zone: String!, $host: String!) {{
  hostDrain(zone: $zone, host: $host) {{ {DRAIN_FIELDS} }} }}"""
CREATE_HOST = (
    """mutation($input: HostInput!) { createHost(input: $input) { host { id } errors { message } } }"""
)
TASK = "query($id: ID!) { task(id: $id) { type status host virtualMachineId } }"


def mutate(api: Api, document: str, user: str = "admin", **variables: Any) -> dict[str, Any]:
    answer = api(document, user=user, variables=variables)
    assert answer.errors == [], answer.body
    (result,) = answer.data.values()
    assert isinstance(result, dict)
    return result


def drain_of(api: Api, zone: str, host: str) -> dict[str, Any] | None:
    answer = api(STATUS, user="admin", variables={"zone": zone, "host": host})
    assert answer.errors == [], answer.body
    result: dict[str, Any] | None = answer.data["hostDrain"]
    return result


def ended(api: Api, zone: str, host: str, timeout: float = 60) -> dict[str, Any]:
    """The host's drain once it is no longer RUNNING."""
    deadline = time.monotonic() + timeout
    while True:
        drain = drain_of(api, zone, host)
        assert drain is not None
        if drain["state"] != "RUNNING":
            return drain
        assert time.monotonic() < deadline, f"the drain still runs: {drain}"
        time.sleep(0.2)


def by_vmid(drain: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {vm["vmid"]: vm for vm in drain["virtualMachines"]}


def host_row(api: Api, user: str, ident: str) -> dict[str, Any] | None:
    answer = api("{ hosts { id cordoned online } }", user=user)
    return next((h for h in answer.data["hosts"] if h["id"] == ident), None)


def cordoned(api: Api, ident: str) -> bool:
    row = host_row(api, "admin", ident)
    assert row is not None, f"{ident} is not listed"
    return bool(row["cordoned"])


@contextmanager
def uncordoned_after(api: Api, zone: str, *hosts: str) -> Iterator[None]:
    """Whatever the test does to these hosts, they end uncordoned and without a drain record."""
    try:
        yield
    finally:
        for host in hosts:
            mutate(api, UNCORDON, zone=zone, host=host)


@contextmanager
def guests(world: Zones, zone: str, node: str, *specs: tuple[int, str, int, str | None]) -> Iterator[None]:
    """Guests of the test's own on a node of the fake: (vmid, status, memory MiB, VDC or None)."""
    pve = world.fakes[zone].pve

    def add() -> None:
        for vmid, status, memory, vdc in specs:
            config = {
                "cores": 1,
                "memory": memory,
                "scsi0": f"local-lvm:vm-{vmid}-disk-0,size=8G",
                "net0": "virtio,bridge=vmbr0",
            }
            if vdc:
                config["tags"] = f"fp-vdc-{vdc}"
            pve.add_vm(
                vmid,
                f"drain-{vmid}",
                node=node,
                status=status,
                config=config,
                pool=f"fp-{vdc}" if vdc else None,
            )

    world.fakes.on_loop(add)
    try:
        yield
    finally:
        for vmid, *_ in specs:
            world.fakes.on_loop(lambda vmid=vmid: pve.release_config_lock(vmid) if pve.vm(vmid) else None)
            forget(world, zone, vmid)


def hold_lock(world: Zones, zone: str, vmid: int) -> None:
    pve = world.fakes[zone].pve
    world.fakes.loop.run(pve.hold_config_lock(vmid, None))


# ------------------------------------------------------------------------------------------ cordon


def reached_again(api: Api, zone: str, host: str, timeout: float = 15.0) -> None:
    """Wait until the orchestrator reaches the host's agent again after it was stopped and started: its
    channel reconnects after a backoff, and until then calls fail at once with the last error, so a test
    that stopped an agent leaves the session's next tests a host that answers."""

    def answers() -> bool:
        listed = api("{ hosts { id agentVersion } }", user="admin").data["hosts"]
        return any(h["id"] == f"{zone}/{host}" and h["agentVersion"] for h in listed)

    eventually(answers, timeout, f"the orchestrator reaching {zone}/{host} again")
