"""Volumes through the API in this process, on the light world's fake Proxmox (the orchestrator's own source,
the agents' allowlist and their pool check): made, attached to a running VM, grown, detached, deleted,
and given back when their VM is deleted. Every step is checked in the fake's own state, not only in the
API's answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.apikit import Answer
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import act, create, fake_vm, fake_vms, ok, payload, present, scratch_vdcs, volumes_of

FIELDS = "id name vdc zone host storageProfile sizeGb status attachedTo serial"
CREATE = f"""mutation($name: String!, $size: Int!, $zone: String, $near: ID) {{
  createVolume(name: $name, storageProfile: "standard", sizeGb: $size, zone: $zone, near: $near) {{
    volume {{ {FIELDS} }} task {{ status type }} errors {{ field message code }} }} }}"""
ATTACH = f"""mutation($id: ID!, $vm: ID!) {{ attachVolume(id: $id, vm: $vm) {{
  volume {{ {FIELDS} }} task {{ status type }} errors {{ field message code }} }} }}"""
DETACH = f"""mutation($id: ID!) {{ detachVolume(id: $id) {{
  volume {{ {FIELDS} }} task {{ status }} errors {{ field message code }} }} }}"""
RESIZE = f"""mutation($id: ID!, $size: Int!) {{ resizeVolume(id: $id, sizeGb: $size) {{
  volume {{ {FIELDS} }} errors {{ field message code }} }} }}"""
DELETE = """mutation($id: ID!) { deleteVolume(id: $id) { volume { id } errors { field message code } } }"""
LIST = f"{{ volumes {{ {FIELDS} }} }}"
GET = f"query($id: ID!) {{ volume(id: $id) {{ {FIELDS} }} }}"


def call(api: InProcessApi, query: str, field: str, user: str = "alice", **variables: Any) -> dict[str, Any]:
    return payload(api(query, user=user, vdc="demo" if user == "alice" else None, variables=variables), field)


@pytest.fixture
def volume_name(api: InProcessApi) -> Iterator[Callable[[str], str]]:
    """Unique volume names of VDC demo; whatever of them is left is detached and deleted afterwards."""
    made: list[str] = []

    def name(base: str) -> str:
        made.append(f"{base}-{len(made)}")
        return made[-1]

    yield name
    answer: Answer = api(LIST, user="admin")
    for volume in answer.data["volumes"] if answer.data else []:
        if volume["name"] in made and volume["vdc"] == "demo":
            call(api, DETACH, "detachVolume", user="admin", id=volume["id"])
            call(api, DELETE, "deleteVolume", user="admin", id=volume["id"])


def holder(light: LightWorld, volume: dict[str, Any]) -> dict[str, Any]:
    found = fake_vm(light, volume["id"])
    assert found is not None
    return found


def disks_with_serial(light: LightWorld, vm: str, serial: str) -> dict[str, str]:
    found = fake_vm(light, vm)
    assert found is not None
    return {k: v for k, v in found["config"].items() if f"serial={serial}" in str(v)}


def test_alice_runs_a_volume_through_its_whole_life_beside_a_running_vm(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], volume_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("app")))["virtualMachine"]
    assert vm["status"] == "running"

    # Created: a stopped holder named <volume>.volume in the VDC's pool, its one disk the volume's.
    made = ok(call(api, CREATE, "createVolume", name=volume_name("data"), size=10, near=vm["id"]))
    volume = made["volume"]
    assert (volume["status"], volume["sizeGb"], volume["vdc"], volume["attachedTo"]) == (
        "available",
        10,
        "demo",
        None,
    )
    assert made["task"]["status"] == "SUCCEEDED"
    kept = holder(light, volume)
    assert (kept["name"], kept["status"], kept["pool"]) == (f"{volume['name']}.volume", "stopped", "fp-demo")
    assert kept["config"]["scsi0"].startswith("local-lvm:vm-")
    assert f"serial={volume['serial']}" in kept["config"]["scsi0"]
    assert not [k for k in kept["config"] if k.startswith("net")]
    # Not a VM: the VM listing leaves it out.
    listing = api("{ virtualMachines(first: 500) { edges { node { name } } } }", user="alice", vdc="demo")
    names = {e["node"]["name"] for e in listing.data["virtualMachines"]["edges"]}
    assert kept["name"] not in names

    # Attached to the running VM: hot-plugged as its next SCSI disk, with the serial; the holder keeps none.
    attached = ok(call(api, ATTACH, "attachVolume", id=volume["id"], vm=vm["id"]))["volume"]
    assert (attached["status"], attached["attachedTo"]) == ("in-use", vm["id"])
    plugged = disks_with_serial(light, vm["id"], volume["serial"])
    assert list(plugged) == ["scsi1"]
    assert "scsi1" not in present(light, vm["id"])["pending"]
    assert "scsi0" not in holder(light, volume)["config"]
    listed = {v["id"]: v for v in api(LIST, user="alice", vdc="demo").data["volumes"]}
    assert listed[volume["id"]]["attachedTo"] == vm["id"]
    # Attaching again to the same VM changes nothing.
    again = ok(call(api, ATTACH, "attachVolume", id=volume["id"], vm=vm["id"]))
    assert again["task"] is None

    # Grown where it is: the VM's disk.
    grown = ok(call(api, RESIZE, "resizeVolume", id=volume["id"], size=25))["volume"]
    assert grown["sizeGb"] == 25
    assert "size=25G" in disks_with_serial(light, vm["id"], volume["serial"])["scsi1"]

    # Detached: unplugged from the running VM and back in its holder, serial and size kept.
    detached = ok(call(api, DETACH, "detachVolume", id=volume["id"]))["volume"]
    assert (detached["status"], detached["attachedTo"]) == ("available", None)
    config = present(light, vm["id"])["config"]
    assert not [k for k in config if k.startswith(("unused", "scsi1"))]
    back = holder(light, volume)["config"]["scsi0"]
    assert f"serial={volume['serial']}" in back
    assert "size=25G" in back
    assert not [
        t for t in holder(light, volume)["config"].get("tags", "").split(";") if t.startswith("fp-on-")
    ]

    # Deleted with its disk.
    zone, vmid = volume["id"].split("/")
    ok(call(api, DELETE, "deleteVolume", id=volume["id"]))
    assert int(vmid) not in fake_vms(light, zone)
    assert volumes_of(light, zone, int(vmid)) == []


def test_a_volume_attached_to_one_vm_is_refused_to_another_and_its_delete_is_refused(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], volume_name: Callable[[str], str]
) -> None:
    first = ok(create(api, "alice", "demo", name=vm_name("one")))["virtualMachine"]
    second = ok(create(api, "alice", "demo", name=vm_name("two")))["virtualMachine"]
    volume = ok(call(api, CREATE, "createVolume", name=volume_name("shared"), size=10, near=first["id"]))[
        "volume"
    ]
    ok(call(api, ATTACH, "attachVolume", id=volume["id"], vm=first["id"]))

    refused = call(api, ATTACH, "attachVolume", id=volume["id"], vm=second["id"])
    assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
    assert first["id"] in refused["errors"][0]["message"]
    assert disks_with_serial(light, second["id"], volume["serial"]) == {}
    deleting = call(api, DELETE, "deleteVolume", id=volume["id"])
    assert [e["code"] for e in deleting["errors"]] == ["CONFLICT"]
    assert list(disks_with_serial(light, first["id"], volume["serial"])) == ["scsi1"]


def test_deleting_a_vm_gives_its_volume_back_with_its_data(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], volume_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("gone")))["virtualMachine"]
    volume = ok(call(api, CREATE, "createVolume", name=volume_name("keep"), size=10, near=vm["id"]))["volume"]
    ok(call(api, ATTACH, "attachVolume", id=volume["id"], vm=vm["id"]))
    zone, vmid = vm["id"].split("/")
    holder_id = int(volume["id"].split("/")[1])
    attached = disks_with_serial(light, vm["id"], volume["serial"])["scsi1"].split(",")[0]
    assert attached in volumes_of(light, zone, int(vmid))  # the VM's now, by Proxmox's naming

    ok(act(api, "alice", "deleteVirtualMachine", vm["id"]))

    assert fake_vm(light, vm["id"]) is None
    assert volumes_of(light, zone, int(vmid)) == []  # the VM's own disks went with it
    kept = call(api, "query($id: ID!) { volume(id: $id) { status attachedTo } }", "volume", id=volume["id"])
    assert kept == {"status": "available", "attachedTo": None}
    held = holder(light, volume)["config"]["scsi0"].split(",")[0]
    assert held in volumes_of(light, zone, holder_id)  # the volume's disk, the holder's again


def test_another_vdcs_volume_and_vm_answer_as_missing(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], volume_name: Callable[[str], str]
) -> None:
    volume = ok(call(api, CREATE, "createVolume", name=volume_name("mine"), size=10, zone="zone-a"))["volume"]
    bobs = api(GET, user="bob", variables={"id": volume["id"]})
    assert bobs.data == {"volume": None}
    assert [e["extensions"]["code"] for e in bobs.errors] == ["NOT_FOUND"]
    assert volume["id"] not in {v["id"] for v in api(LIST, user="bob").data["volumes"]}
    for query, field, variables in (
        (DETACH, "detachVolume", {"id": volume["id"]}),
        (DELETE, "deleteVolume", {"id": volume["id"]}),
        (RESIZE, "resizeVolume", {"id": volume["id"], "size": 20}),
        (ATTACH, "attachVolume", {"id": volume["id"], "vm": "zone-a/100"}),
    ):
        assert [e["code"] for e in call(api, query, field, user="bob", **variables)["errors"]] == [
            "NOT_FOUND"
        ]
    # Alice's volume never reaches a VM of VDC other.
    others = [vid for vid, vm in fake_vms(light, "zone-a").items() if vm["pool"] == "fp-other"]
    if others:
        refused = call(api, ATTACH, "attachVolume", id=volume["id"], vm=f"zone-a/{others[0]}")
        assert [e["code"] for e in refused["errors"]] == ["NOT_FOUND"]
    assert holder(light, volume)["config"]["scsi0"]


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"name": "Not_A_Label", "size": 10, "zone": "zone-a"}, "name"),
        ({"name": "tiny", "size": 1, "zone": "zone-a"}, "sizeGb"),
        ({"name": "huge", "size": 5000, "zone": "zone-a"}, "sizeGb"),
        ({"name": "nowhere", "size": 10, "zone": "zone-z"}, "zone"),
        ({"name": "unplaced", "size": 10, "zone": None}, "zone"),
    ],
)
def test_a_bad_create_is_invalid_naming_the_field_and_makes_nothing(
    api: InProcessApi, light: LightWorld, variables: dict[str, Any], field: str
) -> None:
    before = {vid for vid, vm in fake_vms(light, "zone-a").items() if vm["name"].endswith(".volume")}
    answer = call(api, CREATE, "createVolume", **variables)
    assert [(e["field"], e["code"]) for e in answer["errors"]] == [(field, "INVALID")]
    after = {vid for vid, vm in fake_vms(light, "zone-a").items() if vm["name"].endswith(".volume")}
    assert after == before


def test_concurrent_creates_never_exceed_the_disk_quota_and_a_made_volume_counts(
    api: InProcessApi, light: LightWorld
) -> None:
    """Item 3: four creates of 10 GiB at once in a VDC of 25 GiB: two are made, two are QUOTA_EXCEEDED
    (the VDC's lock serializes them, and each counts the holders the others made)."""
    with scratch_vdcs(api, light) as make:
        vdc = make(diskGb=25)

        def one(n: int) -> dict[str, Any]:
            variables = {"name": f"race-{n}", "size": 10, "zone": "zone-a"}
            return payload(api(CREATE, user="admin", vdc=vdc, variables=variables), "createVolume")

        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(one, range(4)))
        codes = sorted(e["code"] for a in answers for e in a["errors"])
        assert codes == ["QUOTA_EXCEEDED", "QUOTA_EXCEEDED"], answers
        holders = [vm for vm in fake_vms(light, "zone-a").values() if vm["pool"] == f"fp-{vdc}"]
        assert len(holders) == 2
        usage = api("{ vdcs { id usage { diskGb } } }", user="admin").data["vdcs"]
        assert {v["id"]: v["usage"]["diskGb"] for v in usage}[vdc] == 20


def test_two_vms_racing_for_one_volume_get_one_attachment_and_a_conflict(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], volume_name: Callable[[str], str]
) -> None:
    """Item 3: two attaches of one volume at once, to two VMs on its host: one attaches, the other is
    CONFLICT naming the VM that has it, and the volume is a disk of one VM only."""
    by_host: dict[str, list[str]] = {}
    for n in range(4):  # three hosts in zone-a: four VMs put two on one host
        vm = ok(create(api, "alice", "demo", name=vm_name(f"racer{n}")))["virtualMachine"]
        by_host.setdefault(vm["host"], []).append(vm["id"])
    first, second = next(ids for ids in by_host.values() if len(ids) >= 2)[:2]
    volume = ok(call(api, CREATE, "createVolume", name=volume_name("prize"), size=10, near=first))["volume"]

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(
            pool.map(lambda vm: call(api, ATTACH, "attachVolume", id=volume["id"], vm=vm), (first, second))
        )

    won = [a for a in answers if not a["errors"]]
    lost = [a for a in answers if a["errors"]]
    assert len(won) == 1, answers
    assert [e["code"] for e in lost[0]["errors"]] == ["CONFLICT"]
    winner = won[0]["volume"]["attachedTo"]
    assert winner in lost[0]["errors"][0]["message"]
    holding = [vm for vm in (first, second) if disks_with_serial(light, vm, volume["serial"])]
    assert holding == [winner]


def test_a_volume_on_storage_local_to_another_host_is_invalid_for_a_vm_naming_its_host(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], volume_name: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("far")))["virtualMachine"]
    volume = ok(call(api, CREATE, "createVolume", name=volume_name("local"), size=10, near=vm["id"]))[
        "volume"
    ]
    pve = light.fakes["zone-a"].pve
    other = next(n for n in sorted(light.fakes.on_loop(lambda: list(pve.nodes))) if n != vm["host"])
    vmid = int(volume["id"].split("/")[1])
    light.fakes.on_loop(lambda: setattr(pve.vm(vmid), "node", other))  # as if made on another host

    refused = call(api, ATTACH, "attachVolume", id=volume["id"], vm=vm["id"])
    assert [(e["field"], e["code"]) for e in refused["errors"]] == [("vm", "INVALID")]
    assert f"local to host {other}" in refused["errors"][0]["message"]
    assert holder(light, volume)["config"]["scsi0"]  # where it was, with its disk
    light.fakes.on_loop(lambda: setattr(pve.vm(vmid), "node", vm["host"]))


def test_a_vdc_with_a_volume_is_not_deleted(api: InProcessApi, light: LightWorld) -> None:
    with scratch_vdcs(api, light) as make:
        vdc = make(diskGb=50)
        made = payload(
            api(CREATE, user="admin", vdc=vdc, variables={"name": "kept", "size": 10, "zone": "zone-a"}),
            "createVolume",
        )
        assert made["errors"] == []
        refused = payload(
            api(
                "mutation($id: ID!) { deleteVdc(id: $id) { errors { code message } } }",
                user="admin",
                variables={"id": vdc},
            ),
            "deleteVdc",
        )
        assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
        assert "volumes or volume snapshots (10 GiB)" in refused["errors"][0]["message"]
        call(api, DELETE, "deleteVolume", user="admin", id=made["volume"]["id"])
