"""tasks(first, vm): the latest tasks of a VDC's VMs, or of one VM, as its members and ADMIN see them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.services.tasks import decode_task_id
from tests.apikit import Answer, Api
from tests.orchestrator.hostkit import DRAIN, by_vmid, ended, guests, mutate, uncordoned_after
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import act, create, fake_vm, forget, ok, restore, vmid_of

TASKS = """query($first: Int, $vm: ID) { tasks(first: $first, vm: $vm) {
  id zone host type title virtualMachineId virtualMachineName status result startedAt endedAt } }"""
TASK = "query($id: ID!) { task(id: $id) { id type title status virtualMachineId virtualMachineName } }"
DB_1 = "zone-a/101"  # devstack/seed.py: alice's VMs: db-1 on pve2, stopped
WEB_1 = "zone-a/100"  # and web-1 on pve1, running


def listed(api: Api, user: str, vdc: str | None = None, **variables: Any) -> list[dict[str, Any]]:
    answer = api(TASKS, user=user, vdc=vdc, variables=variables)
    assert answer.errors == [], answer.errors
    tasks: list[dict[str, Any]] = answer.data["tasks"]
    return tasks


def bounce(api: Api, ident: str = DB_1) -> tuple[str, str]:
    """Start alice's stopped VM db-1 and stop it again (as it was): the ids of the two tasks."""
    ok(act(api, "alice", "stopVirtualMachine", ident))  # nothing to do unless a test left it running
    started = ok(act(api, "alice", "startVirtualMachine", ident))["task"]["id"]
    stopped = ok(act(api, "alice", "stopVirtualMachine", ident))["task"]["id"]
    return started, stopped


def demo_vms(api: Api) -> set[str]:
    answer = api("{ virtualMachines(first: 500) { edges { node { id } } } }", user="alice", vdc="demo")
    return {edge["node"]["id"] for edge in answer.data["virtualMachines"]["edges"]}


def upids(tasks: list[dict[str, Any]]) -> set[str]:
    """The Proxmox tasks listed (an id names the VDC too: the same UPID has another id in another VDC)."""
    return {upid(task["id"]) for task in tasks}


def upid(task_id: str) -> str:
    return decode_task_id(task_id)[1].raw


def without(answer: Answer, ident: str) -> list[str]:
    return [error["message"].replace(ident, "ID") for error in answer.errors]


def test_a_vdcs_tasks_come_newest_first_with_the_ids_the_mutations_answered(api: Api) -> None:
    started, stopped = bounce(api)
    tasks = listed(api, "alice", "demo", first=100)
    ids = [task["id"] for task in tasks]
    # The same task has the same id wherever it shows: the listing's are the mutations' own.
    assert ids.index(stopped) < ids.index(started)
    starts = [task["startedAt"] for task in tasks]
    assert starts == sorted(starts, reverse=True)
    latest = tasks[ids.index(stopped)]
    assert latest["type"] == "qmstop"
    assert (latest["title"], latest["virtualMachineName"]) == ("Stop", "db-1")
    assert tasks[ids.index(started)]["title"] == "Start"
    assert latest["virtualMachineId"] == DB_1
    assert (latest["zone"], latest["host"]) == ("zone-a", "pve2")
    assert latest["status"] == "SUCCEEDED"
    assert latest["result"] == "OK"
    assert latest["endedAt"] is not None
    task = api(TASK, user="alice", vdc="demo", variables={"id": stopped}).data["task"]
    assert (task["type"], task["title"], task["virtualMachineName"]) == ("qmstop", "Stop", "db-1")


def test_every_task_listed_acts_on_a_vm_of_the_vdc(api: Api) -> None:
    bounce(api)
    tasks = listed(api, "alice", "demo", first=100)
    assert tasks
    assert {task["virtualMachineId"] for task in tasks} <= demo_vms(api)


def test_first_bounds_the_list_and_out_of_range_is_refused_naming_it(api: Api) -> None:
    bounce(api)
    assert len(listed(api, "alice", "demo", first=1)) == 1
    for wrong in (0, 101):
        answer = api(TASKS, user="alice", vdc="demo", variables={"first": wrong})
        assert answer.codes == ["INVALID"]
        assert answer.errors[0]["extensions"]["field"] == "first"


def test_a_vms_tasks_are_its_own_newest_first(api: Api) -> None:
    started, stopped = bounce(api)
    tasks = listed(api, "alice", "demo", vm=DB_1, first=2)
    assert [task["id"] for task in tasks] == [stopped, started]
    assert {task["virtualMachineId"] for task in listed(api, "alice", "demo", vm=DB_1)} == {DB_1}


def test_bob_asking_for_alices_vms_tasks_gets_not_found_exactly_as_for_a_made_up_vm(api: Api) -> None:
    made_up = "zone-a/99999"
    hers = api(TASKS, user="bob", vdc="other", variables={"vm": DB_1})
    nothing = api(TASKS, user="bob", vdc="other", variables={"vm": made_up})
    assert hers.codes == nothing.codes == ["NOT_FOUND"]
    assert hers.data == nothing.data
    assert without(hers, DB_1) == without(nothing, made_up)
    # Without naming a VDC, and for an id that is no VM id at all: the same.
    assert api(TASKS, user="bob", variables={"vm": DB_1}).codes == ["NOT_FOUND"]
    assert api(TASKS, user="bob", variables={"vm": "not-a-vm"}).codes == ["NOT_FOUND"]
    assert listed(api, "admin", vm=DB_1)


def test_bob_never_sees_alices_tasks_and_admin_sees_every_vdcs(api: Api) -> None:
    started, stopped = bounce(api)
    bobs = listed(api, "bob", first=100)
    assert not {upid(started), upid(stopped)} & upids(bobs)
    assert DB_1 not in {task["virtualMachineId"] for task in bobs}
    assert api(TASKS, user="bob", vdc="demo").codes == ["FORBIDDEN"]
    everyone = {task["id"] for task in listed(api, "admin", first=100)}
    assert {started, stopped} <= everyone


def test_a_node_that_does_not_answer_is_named_and_the_others_still_list(api: Api, light: LightWorld) -> None:
    bounce(api)
    ok(act(api, "alice", "rebootVirtualMachine", WEB_1))  # a task on another node
    try:
        light.fakes.set_node_offline("zone-a", "pve2")
        answer = api(TASKS, user="alice", vdc="demo", variables={"first": 100})
    finally:
        restore(light)
    assert "UNAVAILABLE" in answer.codes
    failed = [e for e in answer.errors if e["extensions"]["code"] == "UNAVAILABLE"]
    assert [e["extensions"]["zone"] for e in failed] == ["zone-a/pve2"]
    assert failed[0]["path"] == ["tasks"]
    tasks = answer.data["tasks"]
    assert ("zone-a", "pve2") not in {(task["zone"], task["host"]) for task in tasks}
    assert next(task["type"] for task in tasks if task["virtualMachineId"] == WEB_1) == "qmreboot"


def test_a_deleted_vms_tasks_leave_the_list_and_stay_readable_by_id(
    api: Api, vm_name: Callable[[str], str]
) -> None:
    created = ok(create(api, "alice", "demo", name=vm_name("gone")))
    vm = created["virtualMachine"]
    start = created["task"]["id"]
    assert start in {task["id"] for task in listed(api, "alice", "demo", vm=vm["id"])}
    deleted = ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))["task"]["id"]
    assert not {start, deleted} & {task["id"] for task in listed(api, "alice", "demo", first=100)}
    assert api(TASKS, user="alice", vdc="demo", variables={"vm": vm["id"]}).codes == ["NOT_FOUND"]
    task = api(TASK, user="alice", vdc="demo", variables={"id": deleted}).data["task"]
    assert (task["type"], task["status"], task["virtualMachineId"]) == ("qmdestroy", "SUCCEEDED", vm["id"])
    assert (task["title"], task["virtualMachineName"]) == ("Delete", None)  # the VM is gone, its name too


def test_a_vmid_taken_over_by_another_vdcs_vm_does_not_bring_the_earlier_guests_tasks(
    api: Api, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    created = ok(create(api, "alice", "demo", name=vm_name("before")))
    vm = created["virtualMachine"]
    zone, vmid = vm["zone"], vmid_of(vm["id"])
    alices = ok(act(api, "alice", "stopVirtualMachine", vm["id"]))["task"]["id"]
    ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))
    # Proxmox hands the freed VMID to the next guest: here bob's, on the same node.
    pve = light.fakes[zone].pve
    light.fakes.on_loop(
        lambda: pve.add_vm(
            vmid,
            vm_name("after"),
            node=vm["host"],
            status="stopped",
            config={"cores": 1, "memory": 512, "tags": "fp-vdc-other"},
            pool="fp-other",
        )
    )
    try:
        ident = f"{zone}/{vmid}"
        assert fake_vm(light, ident) is not None
        # Alice's tasks of that VMID are still in the node's list, ending with its destroy.
        assert listed(api, "bob", "other", vm=ident) == []
        assert upid(alices) not in upids(listed(api, "bob", "other", first=100))
    finally:
        forget(light, zone, vmid)


def test_a_migrated_vm_keeps_its_earlier_tasks(api: Api, light: LightWorld) -> None:
    """Its tasks before the migration are on the host it left: they stay in its history and the VDC's."""
    ident = "zone-b/4301"
    with (
        guests(light, "zone-b", "pve3", (4301, "stopped", 1024, "demo")),
        uncordoned_after(api, "zone-b", "pve3"),
    ):
        started = ok(act(api, "alice", "startVirtualMachine", ident))["task"]["id"]
        stopped = ok(act(api, "alice", "stopVirtualMachine", ident))["task"]["id"]
        assert mutate(api, DRAIN, zone="zone-b", host="pve3")["errors"] == []
        moved = by_vmid(ended(api, "zone-b", "pve3"))[4301]
        assert moved["state"] == "MOVED"
        again = ok(act(api, "alice", "startVirtualMachine", ident))["task"]["id"]

        history = listed(api, "alice", "demo", vm=ident)
        by_id = {task["id"]: task for task in history}
        assert {started, stopped, moved["taskId"], again} <= set(by_id)
        assert [by_id[i]["title"] for i in (started, stopped, moved["taskId"], again)] == [
            "Start",
            "Stop",
            "Migrate",
            "Start",
        ]
        assert (by_id[started]["host"], by_id[again]["host"]) == ("pve3", moved["target"])
        assert {task["virtualMachineName"] for task in history} == {"drain-4301"}
        assert {started, stopped} <= {task["id"] for task in listed(api, "alice", "demo", first=100)}
