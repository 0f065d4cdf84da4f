"""Task history across a zone's hosts, as a hostile tenant would probe it: every host of a zone is
read for a VM's tasks (a migrated VM keeps its history), so a VMID that Proxmox freed and gave to
another VDC's VM on another host must not bring the tasks of its earlier guest along, nor may the
earlier guest's tasks name the VM that holds the VMID now."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devstack.world import World
from orchestrator.services.tasks import decode_task_id
from tests.apikit import GraphQL
from tests.vmkit import act, create, forget, ok, vm_names

pytestmark = pytest.mark.promise("isolation")

TASKS = """query($first: Int, $vm: ID) { tasks(first: $first, vm: $vm) { id virtualMachineName } }"""
TASK = "query($id: ID!) { task(id: $id) { virtualMachineId virtualMachineName } }"


@pytest.fixture
def vm_name(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    with vm_names(api, world) as name:
        yield name


def listed(api: GraphQL, user: str, vdc: str, **variables: Any) -> list[dict[str, Any]]:
    answer = api(TASKS, user=user, vdc=vdc, variables=variables)
    assert answer.errors == [], answer.errors
    tasks: list[dict[str, Any]] = answer.data["tasks"]
    return tasks


def upids(tasks: list[dict[str, Any]]) -> set[str]:
    return {decode_task_id(task["id"])[1].raw for task in tasks}


def test_a_vmid_taken_on_another_host_does_not_bring_the_earlier_guests_tasks(
    api: GraphQL, world: World, vm_name: Callable[[str], str]
) -> None:
    """Every host of the zone is read now: a freed VMID's tasks on the host its first guest was on must
    not come to the next guest, another VDC's, on another host."""
    created = ok(create(api, "alice", "demo", name=vm_name("elsewhere")))
    vm = created["virtualMachine"]
    zone, vmid = vm["zone"], int(vm["id"].split("/")[1])
    alices = ok(act(api, "alice", "stopVirtualMachine", vm["id"]))["task"]["id"]
    ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))
    pve = world.fakes[zone].pve
    other_host = next(node for node in ("pve1", "pve2", "pve3") if node != vm["host"])
    world.fakes.on_loop(
        lambda: pve.add_vm(
            vmid,
            vm_name("after"),
            node=other_host,
            status="stopped",
            config={"cores": 1, "memory": 512, "tags": "fp-vdc-other"},
            pool="fp-other",
        )
    )
    try:
        ident = f"{zone}/{vmid}"
        assert listed(api, "bob", "other", vm=ident) == []
        assert decode_task_id(alices)[1].raw not in upids(listed(api, "bob", "other", first=100))
        # Nor does alice's task of that VMID name bob's VM that holds it now.
        task = api(TASK, user="alice", vdc="demo", variables={"id": alices}).data["task"]
        assert task == {"virtualMachineId": ident, "virtualMachineName": None}
    finally:
        forget(world, zone, vmid)
