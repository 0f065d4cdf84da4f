"""VM snapshots through the whole stack (InProcessApi over HTTP, the orchestrator, the agents, fake Proxmox),
checked in the fake's own snapshot state."""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.apikit import Zones
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import RESIZE, action, create, fake_vm, ok, payload, scratch_vdcs

SNAPSHOT_FIELDS = "vm name description takenAt includesMemory parent current state"
OUTCOME = f"""snapshot {{ {SNAPSHOT_FIELDS} }} virtualMachine {{ id status }} task {{ id status type }}
  message errors {{ field message code }}"""
LIST = f"query($vm: ID!) {{ snapshots(vm: $vm) {{ {SNAPSHOT_FIELDS} }} }}"
CREATE = f"""mutation($vm: ID!, $name: String!, $description: String, $includeMemory: Boolean) {{
  createSnapshot(vm: $vm, name: $name, description: $description, includeMemory: $includeMemory) {{
    {OUTCOME} }} }}"""
ROLLBACK = f"""mutation($vm: ID!, $name: String!, $start: Boolean) {{
  rollbackSnapshot(vm: $vm, name: $name, start: $start) {{ {OUTCOME} }} }}"""
DELETE = f"""mutation($vm: ID!, $name: String!) {{ deleteSnapshot(vm: $vm, name: $name) {{ {OUTCOME} }} }}"""


def fake_snapshots(light: Zones, ident: str) -> dict[str, dict[str, Any]]:
    """The VM's snapshots as the fake Proxmox holds them: name -> its saved config and state."""
    zone, vmid = ident.split("/")
    pve = light.fakes[zone].pve

    def read() -> dict[str, dict[str, Any]]:
        vm = next(vm for vm in pve.vms if vm.vmid == int(vmid))
        return {name: dict(snap) for name, snap in vm.snapshots.items()} | {
            "@parent": {"name": vm.config.get("parent")}
        }

    result: dict[str, dict[str, Any]] = light.fakes.on_loop(read)
    return result


def snap(api: InProcessApi, user: str, document: str, field: str, **variables: Any) -> dict[str, Any]:
    return payload(api(document, user=user, variables=variables), field)


@pytest.fixture(scope="module")
def scratch_vm(api: InProcessApi, light: Zones) -> Iterator[str]:
    """A running VM of a scratch VDC whose VMs may have 3 snapshots each; gone with its VDC afterwards."""
    with scratch_vdcs(api, light) as make:
        vdc = make(snapshotsPerVm=3)
        created = ok(create(api, "admin", vdc, name=f"snap-{uuid.uuid4().hex[:6]}"))
        yield created["virtualMachine"]["id"]


@pytest.fixture
def vm(api: InProcessApi, light: Zones, scratch_vm: str) -> Iterator[str]:
    """The module's VM, running and with no snapshot left after each test."""
    yield scratch_vm
    release(light, scratch_vm)
    for name in [n for n in fake_snapshots(light, scratch_vm) if not n.startswith("@")]:
        snap(api, "admin", DELETE, "deleteSnapshot", vm=scratch_vm, name=name)
    api(action("startVirtualMachine"), user="admin", variables={"id": scratch_vm})


def test_a_snapshot_taken_is_in_proxmox_and_listed(api: InProcessApi, light: LightWorld, vm: str) -> None:
    taken = ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="before-upgrade", description="v1"))
    assert taken["task"]["type"] == "qmsnapshot"
    assert taken["task"]["status"] == "SUCCEEDED"
    assert taken["snapshot"]["name"] == "before-upgrade"
    assert taken["snapshot"]["current"] is True
    held = fake_snapshots(light, vm)
    assert "before-upgrade" in held
    assert held["before-upgrade"]["description"] == "v1"
    assert "vmstate" not in held["before-upgrade"]
    listed = api(LIST, user="admin", variables={"vm": vm}).data["snapshots"]
    assert [s["name"] for s in listed] == ["before-upgrade"]
    assert listed[0]["takenAt"]


def test_a_snapshot_with_memory_saves_the_running_vms_state(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="warm", includeMemory=True))
    assert fake_snapshots(light, vm)["warm"].get("vmstate")


def test_a_rollback_of_a_running_vm_stops_it_and_says_so(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="cold"))
    rolled = ok(snap(api, "admin", ROLLBACK, "rollbackSnapshot", vm=vm, name="cold"))
    assert rolled["task"]["type"] == "qmrollback"
    assert "was running: Proxmox stopped it" in rolled["message"]
    assert rolled["message"].endswith("It is stopped (start it when you are ready).")
    assert rolled["virtualMachine"]["status"] == "stopped"
    assert fake_vm(light, vm)["status"] == "stopped"  # type: ignore[index]
    assert fake_snapshots(light, vm)["@parent"]["name"] == "cold"
    started = ok(snap(api, "admin", ROLLBACK, "rollbackSnapshot", vm=vm, name="cold", start=True))
    assert "started it, as asked" in started["message"]
    assert fake_vm(light, vm)["status"] == "running"  # type: ignore[index]


def test_a_rollback_to_a_snapshot_with_memory_resumes_the_vm(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="warm", includeMemory=True))
    rolled = ok(snap(api, "admin", ROLLBACK, "rollbackSnapshot", vm=vm, name="warm"))
    assert "resumed where the snapshot was taken" in rolled["message"]
    assert fake_vm(light, vm)["status"] == "running"  # type: ignore[index]


def test_a_deleted_snapshot_is_gone_from_proxmox(api: InProcessApi, light: LightWorld, vm: str) -> None:
    ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="one"))
    ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="two"))
    gone = ok(snap(api, "admin", DELETE, "deleteSnapshot", vm=vm, name="one"))
    assert gone["snapshot"]["name"] == "one"
    assert gone["task"]["type"] == "qmdelsnapshot"
    held = fake_snapshots(light, vm)
    assert "one" not in held
    assert held["two"].get("parent") is None  # its child now descends from what "one" descended from


def test_the_vdcs_quota_of_snapshots_per_vm_is_kept(api: InProcessApi, light: LightWorld, vm: str) -> None:
    for name in ("s1", "s2", "s3"):
        ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name=name))
    over = snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="s4")
    assert [e["code"] for e in over["errors"]] == ["QUOTA_EXCEEDED"]
    assert "each VM may have 3" in over["errors"][0]["message"]
    assert "s4" not in fake_snapshots(light, vm)


@pytest.mark.parametrize(
    ("name", "field"),
    [("1abc", "name"), ("a", "name"), ("current", "name"), ("a/b", "name"), ("x" * 41, "name")],
)
def test_a_name_proxmox_would_refuse_is_invalid(api: InProcessApi, vm: str, name: str, field: str) -> None:
    refused = snap(api, "admin", CREATE, "createSnapshot", vm=vm, name=name)
    assert [(e["code"], e["field"]) for e in refused["errors"]] == [("INVALID", field)]


def test_a_name_the_vm_already_has_is_a_conflict(api: InProcessApi, vm: str) -> None:
    ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="twice"))
    again = snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="twice")
    assert [e["code"] for e in again["errors"]] == ["CONFLICT"]


def test_a_vm_whose_disk_cannot_snapshot_is_invalid_naming_its_storage_profile(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    zone, vmid = vm.split("/")
    pve = light.fakes[zone].pve

    def move(to: str | None) -> str:
        guest = next(g for g in pve.vms if g.vmid == int(vmid))
        before = str(guest.config["scsi0"])
        guest.config["scsi0"] = to if to is not None else before
        return before

    original = light.fakes.on_loop(lambda: move(None))
    raw_on_dir = f"local:{vmid}/vm-{vmid}-disk-0.raw," + original.split(",", 1)[1]
    light.fakes.on_loop(lambda: move(raw_on_dir))
    try:
        refused = snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="nope")
    finally:
        light.fakes.on_loop(lambda: move(original))
    assert [(e["code"], e["field"]) for e in refused["errors"]] == [("INVALID", "vm")]
    assert "storage profile standard" in refused["errors"][0]["message"]
    assert "dir storage local" in refused["errors"][0]["message"]
    assert "nope" not in fake_snapshots(light, vm)


def test_a_missing_snapshot_is_not_found(api: InProcessApi, vm: str) -> None:
    for document, field in ((ROLLBACK, "rollbackSnapshot"), (DELETE, "deleteSnapshot")):
        answer = snap(api, "admin", document, field, vm=vm, name="never")
        assert [e["code"] for e in answer["errors"]] == ["NOT_FOUND"]


def test_a_snapshot_while_the_vm_is_locked_is_a_conflict_and_changes_nothing(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    zone, vmid = vm.split("/")
    pve = light.fakes[zone].pve

    def lock() -> None:  # as a backup or a migration running holds it
        guest = next(g for g in pve.vms if g.vmid == int(vmid))
        guest.lock = "backup"
        guest.config["lock"] = "backup"

    light.fakes.on_loop(lock)
    try:
        locked = snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="locked")
    finally:
        release(light, vm)
    assert [e["code"] for e in locked["errors"]] == ["CONFLICT"]
    assert "locked" not in fake_snapshots(light, vm)


def release(light: Zones, vm: str) -> None:
    zone, vmid = vm.split("/")
    pve = light.fakes[zone].pve

    def free() -> None:
        for guest in pve.vms:
            if guest.vmid == int(vmid):
                guest.lock_holder = None
                guest.lock = None
                guest.config.pop("lock", None)

    light.fakes.on_loop(free)


def test_a_snapshot_and_a_resize_at_once_each_happen_whole_or_fail_cleanly(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    before = fake_vm(light, vm)
    assert before is not None

    def take() -> dict[str, Any]:
        return snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="racing")

    def grow() -> dict[str, Any]:
        return payload(
            api(RESIZE, user="admin", variables={"input": {"id": vm, "diskGb": 40}}), "resizeVirtualMachine"
        )

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        taken, grown = [f.result() for f in [pool.submit(take), pool.submit(grow)]]
    for outcome in (taken, grown):
        assert [e["code"] for e in outcome["errors"]] in ([], ["CONFLICT"]), outcome["errors"]
    held = fake_snapshots(light, vm)
    after = fake_vm(light, vm)
    assert after is not None
    assert not after["lock"]  # nothing left half-done
    assert ("racing" in held) == (taken["errors"] == [])
    assert all(not s.get("snapstate") for name, s in held.items() if not name.startswith("@"))
    assert ("size=40G" in str(after["config"]["scsi0"])) == (grown["errors"] == [])


def test_bob_cannot_list_roll_back_or_delete_another_vdcs_snapshots(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    ok(snap(api, "admin", CREATE, "createSnapshot", vm=vm, name="theirs"))
    for outsider in ("bob", "alice"):  # neither is a member of the scratch VDC
        listed = api(LIST, user=outsider, variables={"vm": vm})
        assert [e["extensions"]["code"] for e in listed.errors] == ["NOT_FOUND"]
        for document, field in (
            (ROLLBACK, "rollbackSnapshot"),
            (DELETE, "deleteSnapshot"),
            (CREATE, "createSnapshot"),
        ):
            refused = snap(api, outsider, document, field, vm=vm, name="theirs")
            missing = snap(api, outsider, document, field, vm="zone-a/999999", name="theirs")
            assert [e["code"] for e in refused["errors"]] == ["NOT_FOUND"]
            said = refused["errors"][0]["message"].replace(vm, "X")
            assert said == missing["errors"][0]["message"].replace("zone-a/999999", "X")
    held = fake_snapshots(light, vm)
    assert set(held) == {"theirs", "@parent"}
    assert held["@parent"]["name"] == "theirs"  # not rolled back, not deleted


def test_snapshots_taken_at_once_never_exceed_the_quota(
    api: InProcessApi, light: LightWorld, vm: str
) -> None:
    def take(n: int) -> dict[str, Any]:
        return snap(api, "admin", CREATE, "createSnapshot", vm=vm, name=f"burst{n}")

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(take, range(6)))
    codes = sorted(e["code"] for outcome in outcomes for e in outcome["errors"])
    taken = [o for o in outcomes if not o["errors"]]
    assert len(taken) == 3, codes
    assert set(codes) <= {"QUOTA_EXCEEDED", "CONFLICT"}, codes
    assert len([n for n in fake_snapshots(light, vm) if not n.startswith("@")]) == 3
