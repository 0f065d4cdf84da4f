"""services.tasks: task ids, and the listing of a VDC's (or a VM's) recent tasks against the world."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.world import World
from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models.tasks import TITLES, Upid, title_of
from orchestrator.services import tasks
from orchestrator.services.context import Context
from orchestrator.services.tasks import decode_task_id, encode_task_id, of_the_guests_now
from tests.apikit import GraphQL
from tests.orchestrator.services.conftest import MakeContext
from tests.vmkit import act, demo_nodes, ok, restore, zone_nodes

UPID = "UPID:pve2:0000043F:00001DB9:6B0CA1DA:qmstart:101:root@pam!flexplane:"
DB_1 = "zone-a/101"  # devstack/seed.py: alice's VMs: db-1 on pve2, stopped
WEB_1 = "zone-a/100"  # and web-1 on pve1, running


def alice(make_context: MakeContext) -> Context:
    ctx = make_context("USER", "vdc:demo", subject="alice")
    ctx.vdc = "demo"
    return ctx


def upid(kind: str, vmid: int, at: int, pstart: int = 1, node: str = "pve1") -> Upid:
    parsed = Upid.parse(f"UPID:{node}:00000001:{pstart:08X}:{at:08X}:{kind}:{vmid}:root@pam:")
    assert parsed is not None
    return parsed


def task_list_reads(world: World) -> dict[tuple[str, str], int]:
    """How often each node's task list was asked for, per (zone, node), as the fakes saw it."""

    def count(pve: Any) -> dict[str, int]:
        counted: dict[str, int] = {}
        for _method, path, _body in pve.requests:
            parts = path.rstrip("/").split("/")
            if parts[-1] == "tasks" and parts[-3] == "nodes":
                counted[parts[-2]] = counted.get(parts[-2], 0) + 1
        return counted

    return {
        (zone, node): n
        for zone, fake in world.fakes.zones.items()
        for node, n in world.fakes.on_loop(count, fake.pve).items()
    }


# ------------------------------------------------------------------------------------------ ids


def test_a_task_has_one_id_however_often_it_is_encoded() -> None:
    assert encode_task_id("zone-a", UPID, "demo") == encode_task_id("zone-a", UPID, "demo")
    assert encode_task_id("zone-a", UPID, "demo") != encode_task_id("zone-a", UPID, "other")
    zone, parsed, vdc = decode_task_id(encode_task_id("zone-a", UPID, "demo"))
    assert (zone, parsed.raw, vdc) == ("zone-a", UPID, "demo")


# ------------------------------------------------------------------------------------------ whose tasks


def test_the_tasks_of_an_earlier_guest_of_the_same_vmid_are_left_out() -> None:
    earlier = [upid("qmstart", 104, 100), upid("qmstop", 104, 110), upid("qmdestroy", 104, 120)]
    now = [upid("qmstart", 104, 120, pstart=2), upid("qmstop", 104, 130)]
    other = [upid("qmstart", 105, 90)]
    assert of_the_guests_now([*earlier, *now, *other], {104}) == now


def test_a_migration_ends_nothing_the_guests_tasks_on_the_node_it_left_stay_its_own() -> None:
    before = [upid("qmstart", 104, 100), upid("qmigrate", 104, 110)]
    after = [upid("qmstop", 104, 200, node="pve2")]
    assert of_the_guests_now([*before, *after], {104, 105}) == [*before, *after]


def test_a_destroy_on_one_node_ends_the_vmids_tasks_on_every_node() -> None:
    earlier = [upid("qmstart", 104, 100, node="pve2"), upid("qmdestroy", 104, 150)]
    now = [upid("qmstart", 104, 160, node="pve3")]
    assert of_the_guests_now([*earlier, *now], {104}) == now


def test_a_task_of_another_node_in_the_second_of_a_destroy_is_left_out() -> None:
    """Which came first cannot be told across nodes within one second: another VDC's must not show."""
    destroy = upid("qmdestroy", 104, 150)
    same_second = upid("qmstart", 104, 150, node="pve2")
    same_node_later = upid("qmstop", 104, 150, pstart=9)
    assert of_the_guests_now([destroy, same_second, same_node_later], {104}) == [same_node_later]


def test_every_task_type_of_a_vm_has_a_title_and_an_unknown_one_keeps_proxmoxs_name() -> None:
    assert [title_of(kind) for kind in ("qmstart", "qmclone", "resize", "qmigrate")] == [
        "Start",
        "Clone",
        "Resize",
        "Migrate",
    ]
    assert title_of("qmsomethingnew") == "qmsomethingnew"
    assert all(title and title[0].isupper() for title in TITLES.values())


# ------------------------------------------------------------------------------------------ listing


def test_each_node_of_the_zones_holding_the_vdcs_vms_is_read_once(
    make_context: MakeContext, world: World, api: GraphQL
) -> None:
    ok(act(api, "alice", "startVirtualMachine", DB_1))
    ok(act(api, "alice", "stopVirtualMachine", DB_1))
    before = task_list_reads(world)
    found = tasks.recent_tasks(alice(make_context), first=100)
    after = task_list_reads(world)
    read = {key: after.get(key, 0) - before.get(key, 0) for key in after}
    assert {key for key, n in read.items() if n} == zone_nodes(world, {zone for zone, _ in demo_nodes(world)})
    assert set(read.values()) <= {0, 1}
    assert [task.kind for task in found if task.vmid == 101][:2] == ["qmstop", "qmstart"]
    assert [(task.title, task.vm_name) for task in found if task.vmid == 101][:2] == [
        ("Stop", "db-1"),
        ("Start", "db-1"),
    ]


def test_a_vms_listing_reads_each_node_of_its_zone_once(
    make_context: MakeContext, world: World, api: GraphQL
) -> None:
    ok(act(api, "alice", "stopVirtualMachine", DB_1))  # nothing to do unless a test left it running
    started = ok(act(api, "alice", "startVirtualMachine", DB_1))["task"]["id"]
    stopped = ok(act(api, "alice", "stopVirtualMachine", DB_1))["task"]["id"]
    before = task_list_reads(world)
    found = tasks.recent_tasks(alice(make_context), first=5, vm=DB_1)
    after = task_list_reads(world)
    changed = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}
    assert changed == dict.fromkeys(zone_nodes(world, {"zone-a"}), 1)
    assert {(task.zone, task.vmid) for task in found} == {("zone-a", 101)}
    assert [task.id for task in found[:2]] == [stopped, started]


def test_another_vdcs_vm_is_not_found_exactly_like_a_made_up_one(make_context: MakeContext) -> None:
    bob = make_context("USER", "vdc:other", subject="bob")
    with pytest.raises(NotFound) as hers:
        tasks.recent_tasks(bob, vm=DB_1)
    with pytest.raises(NotFound) as made_up:
        tasks.recent_tasks(bob, vm="zone-a/99999")
    assert hers.value.message.replace(DB_1, "ID") == made_up.value.message.replace("zone-a/99999", "ID")


def test_first_must_be_between_one_and_the_maximum(make_context: MakeContext) -> None:
    for wrong in (0, -1, tasks.MAX_TASKS + 1):
        with pytest.raises(ValidationFailed) as refused:
            tasks.recent_tasks(alice(make_context), first=wrong)
        assert refused.value.field == "first"


def test_a_node_that_does_not_answer_is_reported_on_the_context(
    make_context: MakeContext, world: World, api: GraphQL
) -> None:
    ok(act(api, "alice", "startVirtualMachine", DB_1))
    ok(act(api, "alice", "stopVirtualMachine", DB_1))
    ok(act(api, "alice", "rebootVirtualMachine", WEB_1))  # a task on another node
    ctx = alice(make_context)
    try:
        world.fakes.set_node_offline("zone-a", "pve2")
        found = tasks.recent_tasks(ctx, first=100)
    finally:
        restore(world)
    assert [failure.where for failure in ctx.unavailable] == ["zone-a/pve2"]
    assert "pve2" in ctx.unavailable[0].message
    assert ("zone-a", "pve2") not in {(task.zone, task.node) for task in found}
    assert next(task.kind for task in found if task.vmid == 100 and task.zone == "zone-a") == "qmreboot"
