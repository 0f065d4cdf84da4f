"""Volume snapshots through the API in this process, on the light world's fake Proxmox (the orchestrator's
own source, the agents' allowlist and their pool checks): a detached volume's copy taken, listed, made
into a new volume, deleted; refused for an attached volume, past the quota, and across VDCs. Every step
is checked in the fake's own state too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.orchestrator.api.light.test_volumes import ATTACH, CREATE, DELETE, DETACH, FIELDS, call, holder
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import create, fake_vm, fake_vms, ok, payload, scratch_vdcs, volumes_of

SNAPSHOT_FIELDS = "id name vdc zone host storageProfile sizeGb status source sourceDeleted takenAt"
TAKE = f"""mutation($volume: ID!, $name: String!) {{ createVolumeSnapshot(volume: $volume, name: $name) {{
  snapshot {{ {SNAPSHOT_FIELDS} }} task {{ status type }} errors {{ field message code }} }} }}"""
DROP = """mutation($id: ID!) { deleteVolumeSnapshot(id: $id) {
  snapshot { id } task { status } errors { field message code } } }"""
RESTORE = f"""mutation($snapshot: ID!, $name: String!, $size: Int) {{
  createVolumeFromSnapshot(snapshot: $snapshot, name: $name, sizeGb: $size) {{
    volume {{ {FIELDS} }} task {{ status type }} errors {{ field message code }} }} }}"""
LIST = f"query($volume: ID) {{ volumeSnapshots(volume: $volume) {{ {SNAPSHOT_FIELDS} }} }}"
GET = f"query($id: ID!) {{ volumeSnapshot(id: $id) {{ {SNAPSHOT_FIELDS} }} }}"


@pytest.fixture
def named(api: InProcessApi) -> Iterator[Callable[[str], str]]:
    """Unique names of VDC demo's volumes and snapshots; whatever of them is left is deleted afterwards."""
    made: list[str] = []

    def name(base: str) -> str:
        made.append(f"{base}-{len(made)}")
        return made[-1]

    yield name
    for snapshot in api(LIST, user="admin").data["volumeSnapshots"]:
        if snapshot["name"] in made and snapshot["vdc"] == "demo":
            call(api, DROP, "deleteVolumeSnapshot", user="admin", id=snapshot["id"])
    for volume in api(f"{{ volumes {{ {FIELDS} }} }}", user="admin").data["volumes"]:
        if volume["name"] in made and volume["vdc"] == "demo":
            call(api, DETACH, "detachVolume", user="admin", id=volume["id"])
            call(api, DELETE, "deleteVolume", user="admin", id=volume["id"])


def rows(api: InProcessApi, query: str, field: str, user: str = "alice", **variables: Any) -> list[Any]:
    answer = api(query, user=user, vdc="demo" if user == "alice" else None, variables=variables)
    assert answer.data is not None, answer.errors
    found: list[Any] = answer.data[field]
    return found


def volume(api: InProcessApi, name: str, size: int = 10, **where: Any) -> dict[str, Any]:
    return ok(call(api, CREATE, "createVolume", name=name, size=size, **(where or {"zone": "zone-a"})))[
        "volume"
    ]


def test_a_detached_volumes_snapshot_is_a_copy_listed_with_it_and_made_into_a_new_volume(
    api: InProcessApi, light: LightWorld, named: Callable[[str], str]
) -> None:
    source = volume(api, named("data"), size=12)

    taken = ok(call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=named("before")))
    snapshot = taken["snapshot"]
    assert taken["task"]["status"] == "SUCCEEDED"
    assert (snapshot["status"], snapshot["sizeGb"], snapshot["source"], snapshot["vdc"]) == (
        "available",
        12,
        source["id"],
        "demo",
    )
    assert snapshot["takenAt"]
    # Its holder: a stopped VM of the VDC's pool with a disk of its own, a copy (not the volume's disk).
    kept = fake_vm(light, snapshot["id"])
    assert kept is not None
    assert (kept["name"], kept["status"], kept["pool"]) == (
        f"{snapshot['name']}.snapshot",
        "stopped",
        "fp-demo",
    )
    zone, vmid = snapshot["id"].split("/")
    copy = kept["config"]["scsi0"].split(",")[0]
    assert copy in volumes_of(light, zone, int(vmid))
    assert copy != holder(light, source)["config"]["scsi0"].split(",")[0]
    tags = kept["config"]["tags"].split(";")
    assert f"fp-of-{source['id'].split('/')[1]}" in tags
    # Listed: with its volume, among the VDC's, and alone; neither a volume nor a VM.
    listed = call(api, "query($id: ID!) { volume(id: $id) { snapshots { id } } }", "volume", id=source["id"])
    assert listed["snapshots"] == [{"id": snapshot["id"]}]
    assert [s["id"] for s in rows(api, LIST, "volumeSnapshots", volume=source["id"])] == [snapshot["id"]]
    assert snapshot["id"] in {s["id"] for s in rows(api, LIST, "volumeSnapshots")}
    assert call(api, GET, "volumeSnapshot", id=snapshot["id"]) == snapshot
    volume_ids = {v["id"] for v in rows(api, f"{{ volumes {{ {FIELDS} }} }}", "volumes")}
    assert snapshot["id"] not in volume_ids
    vms = api("{ virtualMachines(first: 500) { edges { node { id } } } }", user="alice", vdc="demo")
    assert snapshot["id"] not in {e["node"]["id"] for e in vms.data["virtualMachines"]["edges"]}
    # Taken again under the same name: the same snapshot, nothing new.
    again = ok(call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=snapshot["name"]))
    assert (again["snapshot"]["id"], again["task"]) == (snapshot["id"], None)

    # A new volume from it, grown: a volume of its own (its serial, no snapshot's tag), the copy's copy.
    restored = ok(
        call(api, RESTORE, "createVolumeFromSnapshot", snapshot=snapshot["id"], name=named("copy"), size=20)
    )
    made = restored["volume"]
    assert (made["status"], made["sizeGb"], made["storageProfile"], made["zone"]) == (
        "available",
        20,
        "standard",
        "zone-a",
    )
    disk = holder(light, made)["config"]["scsi0"]
    assert f"serial={made['serial']}" in disk
    assert "size=20G" in disk
    assert not [
        t for t in holder(light, made)["config"]["tags"].split(";") if t.startswith(("fp-of-", "fp-taken-"))
    ]
    again = ok(
        call(api, RESTORE, "createVolumeFromSnapshot", snapshot=snapshot["id"], name=made["name"], size=20)
    )
    assert (again["volume"]["id"], again["task"]) == (made["id"], None)

    # The volume deleted, its snapshot stays, saying so: the volume Proxmox gives the VMID next (the lowest
    # free one: here, this one) does not take it for its own.
    ok(call(api, DELETE, "deleteVolume", id=source["id"]))
    orphan = call(api, GET, "volumeSnapshot", id=snapshot["id"])
    assert (orphan["source"], orphan["sourceDeleted"]) == (source["id"], True)
    orphaned = fake_vm(light, snapshot["id"])
    assert orphaned is not None
    assert f"fp-was-{source['id'].split('/')[1]}" in orphaned["config"]["tags"]
    successor = volume(api, named("next"))
    held = call(api, "query($id: ID!) { volume(id: $id) { snapshots { id } } }", "volume", id=successor["id"])
    assert held["snapshots"] == []
    assert rows(api, LIST, "volumeSnapshots", volume=successor["id"]) == []
    dropped = ok(call(api, DROP, "deleteVolumeSnapshot", id=snapshot["id"]))
    assert dropped["task"]["status"] == "SUCCEEDED"
    assert int(vmid) not in fake_vms(light, zone)
    assert volumes_of(light, zone, int(vmid)) == []


def test_an_attached_volume_is_not_snapshotted_and_a_bad_name_or_size_is_invalid(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], named: Callable[[str], str]
) -> None:
    vm = ok(create(api, "alice", "demo", name=vm_name("busy")))["virtualMachine"]
    source = volume(api, named("live"), near=vm["id"])
    ok(call(api, ATTACH, "attachVolume", id=source["id"], vm=vm["id"]))
    before = {v for v, g in fake_vms(light, "zone-a").items() if g["name"].endswith(".snapshot")}

    refused = call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=named("never"))
    assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
    assert f"attached to VM {vm['id']}" in refused["errors"][0]["message"]
    assert "detach it first" in refused["errors"][0]["message"]
    invalid = call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name="Not_A_Label")
    assert [(e["field"], e["code"]) for e in invalid["errors"]] == [("name", "INVALID")]
    assert {v for v, g in fake_vms(light, "zone-a").items() if g["name"].endswith(".snapshot")} == before

    ok(call(api, DETACH, "detachVolume", id=source["id"]))
    snapshot = ok(call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=named("now")))["snapshot"]
    other = volume(api, named("other"))
    taken = call(api, TAKE, "createVolumeSnapshot", volume=other["id"], name=snapshot["name"])
    assert [(e["field"], e["code"]) for e in taken["errors"]] == [("name", "INVALID")]
    small = call(
        api, RESTORE, "createVolumeFromSnapshot", snapshot=snapshot["id"], name=named("small"), size=5
    )
    assert [(e["field"], e["code"]) for e in small["errors"]] == [("sizeGb", "INVALID")]
    taken_name = call(api, RESTORE, "createVolumeFromSnapshot", snapshot=snapshot["id"], name=other["name"])
    assert [(e["field"], e["code"]) for e in taken_name["errors"]] == [("name", "INVALID")]


def test_snapshots_count_in_the_disk_quota_and_keep_their_vdc_from_being_deleted(
    api: InProcessApi, light: LightWorld
) -> None:
    with scratch_vdcs(api, light) as make:
        vdc = make(diskGb=25)

        def run(query: str, field: str, **variables: Any) -> dict[str, Any]:
            return payload(api(query, user="admin", vdc=vdc, variables=variables), field)

        source = ok(run(CREATE, "createVolume", name="base", size=10, zone="zone-a"))["volume"]
        first = ok(run(TAKE, "createVolumeSnapshot", volume=source["id"], name="one"))["snapshot"]
        usage = {
            v["id"]: v["usage"]["diskGb"]
            for v in api("{ vdcs { id usage { diskGb } } }", user="admin").data["vdcs"]
        }
        assert usage[vdc] == 20
        past = run(TAKE, "createVolumeSnapshot", volume=source["id"], name="two")
        assert [e["code"] for e in past["errors"]] == ["QUOTA_EXCEEDED"]
        restored = run(RESTORE, "createVolumeFromSnapshot", snapshot=first["id"], name="again")
        assert [e["code"] for e in restored["errors"]] == ["QUOTA_EXCEEDED"]

        ok(run(DELETE, "deleteVolume", id=source["id"]))
        refused = payload(
            api(
                "mutation($id: ID!) { deleteVdc(id: $id) { errors { code message } } }",
                user="admin",
                variables={"id": vdc},
            ),
            "deleteVdc",
        )
        assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
        assert "volume snapshots (10 GiB)" in refused["errors"][0]["message"]
        ok(run(DROP, "deleteVolumeSnapshot", id=first["id"]))


def test_another_vdcs_snapshot_answers_as_missing(
    api: InProcessApi, light: LightWorld, named: Callable[[str], str]
) -> None:
    source = volume(api, named("private"))
    snapshot = ok(call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=named("secret")))[
        "snapshot"
    ]

    bobs = api(GET, user="bob", variables={"id": snapshot["id"]})
    assert bobs.data == {"volumeSnapshot": None}
    assert [e["extensions"]["code"] for e in bobs.errors] == ["NOT_FOUND"]
    assert snapshot["id"] not in {s["id"] for s in api(LIST, user="bob").data["volumeSnapshots"]}
    for query, field, variables in (
        (DROP, "deleteVolumeSnapshot", {"id": snapshot["id"]}),
        (RESTORE, "createVolumeFromSnapshot", {"snapshot": snapshot["id"], "name": "stolen"}),
        (TAKE, "createVolumeSnapshot", {"volume": source["id"], "name": "stolen"}),
    ):
        assert [e["code"] for e in call(api, query, field, user="bob", **variables)["errors"]] == [
            "NOT_FOUND"
        ]
    assert fake_vm(light, snapshot["id"]) is not None


def test_while_proxmox_copies_neither_end_of_the_copy_is_attached_or_deleted(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], named: Callable[[str], str]
) -> None:
    """A copy outlasting its request (the fake's clone lock, set by hand): the snapshot is creating and
    says from its holder's description what it copies and since when; its volume is neither attached nor
    deleted, the snapshot not deleted while a volume is made from it; a retry finishes it once whole."""
    vm = ok(create(api, "alice", "demo", name=vm_name("later")))["virtualMachine"]
    source = volume(api, named("busy"), near=vm["id"])
    snapshot = ok(call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=named("slow")))[
        "snapshot"
    ]
    pve = light.fakes["zone-a"].pve
    held = light.fakes.on_loop(lambda: pve.vm(int(snapshot["id"].split("/")[1])))
    tags = held.config["tags"]
    untagged = ";".join(t for t in tags.split(";") if not t.startswith(("fp-of-", "fp-taken-")))

    def copying_now() -> None:
        held.config["tags"] = untagged
        held.lock = "clone"

    light.fakes.on_loop(copying_now)
    try:
        copying = call(api, GET, "volumeSnapshot", id=snapshot["id"])
        assert (copying["status"], copying["source"]) == ("creating", source["id"])
        assert copying["takenAt"]
        for refused in (
            call(api, ATTACH, "attachVolume", id=source["id"], vm=vm["id"]),
            call(api, DELETE, "deleteVolume", id=source["id"]),
        ):
            assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
            assert f"being copied into snapshot {snapshot['name']}" in refused["errors"][0]["message"]
        again = ok(call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=snapshot["name"]))
        assert again["snapshot"]["status"] == "creating"
    finally:
        light.fakes.on_loop(lambda: setattr(held, "lock", None))
    finished = ok(call(api, TAKE, "createVolumeSnapshot", volume=source["id"], name=snapshot["name"]))
    assert finished["snapshot"]["status"] == "available"
    assert f"fp-of-{source['id'].split('/')[1]}" in held.config["tags"]
    assert finished["snapshot"]["takenAt"] == copying["takenAt"]  # when the copy began, not when tagged

    copy = ok(call(api, RESTORE, "createVolumeFromSnapshot", snapshot=snapshot["id"], name=named("made")))
    made = light.fakes.on_loop(lambda: pve.vm(int(copy["volume"]["id"].split("/")[1])))
    light.fakes.on_loop(lambda: setattr(made, "lock", "clone"))
    try:
        assert call(
            api, "query($id: ID!) { volume(id: $id) { status } }", "volume", id=copy["volume"]["id"]
        ) == {"status": "creating"}
        refused = call(api, DROP, "deleteVolumeSnapshot", id=snapshot["id"])
        assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
        assert (
            f"volume {copy['volume']['name']} is being made from snapshot" in refused["errors"][0]["message"]
        )
    finally:
        light.fakes.on_loop(lambda: setattr(made, "lock", None))
    ok(call(api, DROP, "deleteVolumeSnapshot", id=snapshot["id"]))
