"""The client against the API in this process: connections paged through, the API's errors raised as typed
exceptions (a mutation's payload errors and top-level ones alike), tasks followed to their end."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from apiclient import (
    FlexPlane,
    Forbidden,
    InvalidInput,
    NotFound,
    TaskFailed,
    UpstreamFailure,
)
from apiclient.generated.enums import TaskStatus, VirtualMachineErrorCode
from apiclient.generated.input_types import CreateVirtualMachineInput, VirtualMachineFilter
from apiclient.generated.virtual_machines import VirtualMachinesVirtualMachines
from tests.orchestrator.lightworld import LightWorld

Client = Callable[..., FlexPlane]


def small_vm(name: str, **fields: object) -> CreateVirtualMachineInput:
    values: dict[str, object] = {
        "name": name,
        "compute_profile": "small",
        "storage_profile": "standard",
        "image": "debian-12",
        "zone": "zone-a",
        **fields,
    }
    return CreateVirtualMachineInput.model_validate(values)


def test_a_listing_pages_through_every_vm_a_page_at_a_time(
    client_of: Client, vm_name: Callable[[str], str]
) -> None:
    alice = client_of("alice", vdc="demo")
    names = [vm_name(f"page{i}") for i in range(5)]
    for name in names:
        alice.create_virtual_machine(small_vm(name))
    asked: list[str | None] = []
    mine = VirtualMachineFilter(nameContains=names[0].rsplit("-", 1)[0])

    def page(after: str | None) -> VirtualMachinesVirtualMachines:
        asked.append(after)
        return alice.virtual_machines(first=2, after=after, filter_=mine).virtual_machines

    listed = [vm.name for vm in alice.paged(page)]

    assert listed == sorted(names)
    assert len(asked) == 3
    assert asked[0] is None
    assert len(set(asked)) == 3
    assert [vm.name for vm in alice.all_virtual_machines(mine, page_size=2)] == sorted(names)


def test_a_mutations_invalid_input_is_raised_naming_the_field(
    client_of: Client, vm_name: Callable[[str], str]
) -> None:
    alice = client_of("alice", vdc="demo")

    with pytest.raises(InvalidInput) as raised:
        alice.create_virtual_machine(small_vm(vm_name("tiny"), disk_gb=1))

    error = raised.value
    assert error.code == VirtualMachineErrorCode.INVALID == "INVALID"
    assert error.field == "diskGb"
    assert "disk" in error.message.lower()
    assert [problem.code for problem in error.problems] == ["INVALID"]
    # The payload the API answered travels with it.
    assert error.data["virtualMachine"] is None


def test_top_level_errors_are_raised_as_their_codes(
    client_of: Client, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    alice = client_of("alice", vdc="demo")
    vm = alice.create_virtual_machine(small_vm(vm_name("hers"))).create_virtual_machine
    assert vm is not None
    assert vm.virtual_machine is not None

    with pytest.raises(NotFound) as missing:
        client_of("bob", vdc="other").virtual_machine(vm.virtual_machine.id)
    with pytest.raises(Forbidden):
        client_of("alice", vdc="other").networks()

    assert vm.virtual_machine.id in missing.value.message


def test_a_task_is_followed_to_its_end_with_its_log(client_of: Client, vm_name: Callable[[str], str]) -> None:
    alice = client_of("alice", vdc="demo")
    created = alice.create_virtual_machine(small_vm(vm_name("followed"))).create_virtual_machine
    assert created is not None
    assert created.task is not None

    ended = alice.follow(created.task)

    assert ended.id == created.task.id
    assert ended.status == TaskStatus.SUCCEEDED
    assert ended.log[-1] == "TASK OK"
    assert ended.ended_at is not None


def test_a_failed_task_is_raised_with_what_proxmox_said(
    client_of: Client, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    alice = client_of("alice", vdc="demo")
    created = alice.create_virtual_machine(small_vm(vm_name("fails"))).create_virtual_machine
    assert created is not None
    assert created.virtual_machine is not None
    pve = light.fakes["zone-a"].pve
    light.fakes.on_loop(lambda: pve.fail("POST", "/status/stop", error="quit_powerdown_failed", times=1))

    with pytest.raises(UpstreamFailure) as refused:
        alice.stop_virtual_machine(created.virtual_machine.id)
    task_id = refused.value.data["task"]["id"]
    with pytest.raises(TaskFailed) as failed:
        alice.follow(task_id)

    assert failed.value.task.status == TaskStatus.FAILED
    assert failed.value.task.log[-1] == "TASK ERROR: VM quit/powerdown failed"
    assert "VM quit/powerdown failed" in str(failed.value)
