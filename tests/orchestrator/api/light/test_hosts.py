"""Hosts over their life through the API: cordon, drain (verified in the fake Proxmox), removal. A module's
tests share the light light: every test puts back what it changed."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.sources.protocols import KubeApi
from tests.apikit import Api
from tests.orchestrator.hostkit import (
    CORDON,
    CREATE_HOST,
    DRAIN,
    REMOVE,
    REMOVE_FORCED,
    STATUS,
    TASK,
    UNCORDON,
    by_vmid,
    cordoned,
    drain_of,
    ended,
    guests,
    hold_lock,
    host_row,
    mutate,
    uncordoned_after,
)
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import create, fake_vms, ok, requests_to


def test_a_cordoned_host_takes_no_new_vm_and_keeps_its_own(
    api: Api, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    with uncordoned_after(api, "zone-a", "pve1", "pve2"):
        for host in ("pve1", "pve2"):
            result = mutate(api, CORDON, zone="zone-a", host=host)
            assert result["errors"] == []
            assert result["host"] == {"id": f"zone-a/{host}", "cordoned": True}
        made = ok(create(api, "alice", "demo", name=vm_name("cordon")))
        assert made["placement"]["host"] == "pve3"
        rejected = {r["host"]: r["reason"] for r in made["placement"]["rejected"]}
        assert "cordoned" in rejected["pve1"]
        assert "cordoned" in rejected["pve2"]
        # The VMs already there keep running.
        assert fake_vms(light, "zone-a")[100]["status"] == "running"
        assert fake_vms(light, "zone-a")[100]["node"] == "pve1"
    for host in ("pve1", "pve2"):
        assert host_row(api, "admin", f"zone-a/{host}") == {
            "id": f"zone-a/{host}",
            "cordoned": False,
            "online": True,
        }


def test_cordoning_an_unknown_host_is_not_found(api: Api) -> None:
    result = mutate(api, CORDON, zone="zone-a", host="pve9")
    assert result["host"] is None
    assert [e["code"] for e in result["errors"]] == ["NOT_FOUND"]
    assert "zone-a/pve9" in result["errors"][0]["message"]


def test_a_user_may_not_cordon_drain_or_remove_hosts_nor_read_a_drain(api: Api) -> None:
    variables = {"zone": "zone-a", "host": "pve1"}
    for document in (CORDON, UNCORDON, DRAIN, REMOVE, STATUS):
        answer = api(document, user="alice", variables=variables)
        assert answer.codes == ["FORBIDDEN"], answer.body
    assert host_row(api, "admin", "zone-a/pve1") == {"id": "zone-a/pve1", "cordoned": False, "online": True}


# ------------------------------------------------------------------------------------------- drain


def test_a_drain_moves_every_vm_it_can_and_says_why_the_others_cannot(api: Api, light: LightWorld) -> None:
    # On zone-b's pve3: two VMs that can move (one running, one stopped), one no host has room for,
    # and one whose config lock another operation holds.
    specs = (
        (4201, "running", 1024, "demo"),
        (4202, "stopped", 1024, None),
        (4203, "running", 16384, None),
        (4204, "running", 1024, None),
    )
    with guests(light, "zone-b", "pve3", *specs), uncordoned_after(api, "zone-b", "pve3"):
        hold_lock(light, "zone-b", 4204)
        started = mutate(api, DRAIN, zone="zone-b", host="pve3")
        assert started["errors"] == []
        assert sorted(by_vmid(started["drain"])) == [4201, 4202, 4203, 4204]
        assert started["drain"]["requestedBy"] == "Platform Admin"
        assert cordoned(api, "zone-b/pve3")

        drain = ended(api, "zone-b", "pve3")
        assert drain["state"] == "INCOMPLETE"
        assert drain["message"] == "2 of 4 VM(s) moved"
        vms = by_vmid(drain)
        fake = fake_vms(light, "zone-b")
        for vmid, status in ((4201, "running"), (4202, "stopped")):
            assert vms[vmid]["state"] == "MOVED"
            assert vms[vmid]["target"] in ("pve1", "pve2")
            # The fake's own state: the guest lives on the target now, running as before.
            assert (fake[vmid]["node"], fake[vmid]["status"]) == (vms[vmid]["target"], status)
        assert vms[4203]["state"] == "FAILED"
        assert "not enough memory" in vms[4203]["reason"]
        assert vms[4204]["state"] == "FAILED"
        assert "locked by another operation" in vms[4204]["reason"]
        assert fake[4203]["node"] == fake[4204]["node"] == "pve3"
        assert fake[4204]["status"] == "running"

        # Each migration is a Proxmox task of its own; the demo VM's is readable by its VDC.
        task = api(TASK, user="alice", vdc="demo", variables={"id": vms[4201]["taskId"]}).data["task"]
        assert task == {
            "type": "qmigrate",
            "status": "SUCCEEDED",
            "host": "pve3",
            "virtualMachineId": "zone-b/4201",
        }
        live = requests_to(light, "zone-b", "POST", "/qemu/4201/migrate")
        assert live == [{"target": vms[4201]["target"], "online": "1", "with-local-disks": "1"}]
        assert requests_to(light, "zone-b", "POST", "/qemu/4202/migrate") == [{"target": vms[4202]["target"]}]

        # Once the lock is released and the big VM shrunk, calling drainHost again moves the rest, and
        # only the rest: the VMs already moved are not migrated twice.
        light.fakes.on_loop(lambda: light.fakes["zone-b"].pve.release_config_lock(4204))
        light.fakes.on_loop(lambda: light.fakes["zone-b"].pve.vm(4203).config.update(memory=1024))
        assert mutate(api, DRAIN, zone="zone-b", host="pve3")["errors"] == []
        drain = ended(api, "zone-b", "pve3")
        assert drain["state"] == "DONE"
        assert {vm["state"] for vm in drain["virtualMachines"]} == {"MOVED"}
        fake = fake_vms(light, "zone-b")
        assert [vmid for vmid, vm in fake.items() if vm["node"] == "pve3" and not vm["template"]] == []
        assert len(requests_to(light, "zone-b", "POST", "/qemu/4201/migrate")) == 1

        # The host stays cordoned until the admin uncordons it; the drain record then goes.
        result = mutate(api, UNCORDON, zone="zone-b", host="pve3")
        assert result["host"]["cordoned"] is False
        assert drain_of(api, "zone-b", "pve3") is None


def test_a_drain_of_an_unknown_host_is_not_found(api: Api) -> None:
    result = mutate(api, DRAIN, zone="zone-b", host="pve9")
    assert result["drain"] is None
    assert [e["code"] for e in result["errors"]] == ["NOT_FOUND"]


def write_drain(kube: KubeApi, heartbeat: datetime, vms: list[dict[str, Any]]) -> None:
    """A drain record of zone-b/pve3 as a replica of the orchestrator left it (created or replaced)."""
    spec = {
        "zone": "zone-b",
        "node": "pve3",
        "state": "RUNNING",
        "vms": vms,
        "requestedBy": "Platform Admin",
        "startedAt": heartbeat.isoformat(),
        "updatedAt": heartbeat.isoformat(),
        "runner": "replica-that-stopped/1/0000",
        "heartbeat": heartbeat.isoformat(),
    }
    labels = {"flexplane.io/zone": "zone-b"}
    current = kube.get_catalog("host-drain", "zone-b.pve3")
    if current is None:
        kube.create_catalog("host-drain", "zone-b.pve3", spec, labels=labels)
    else:
        kube.replace_catalog("host-drain", "zone-b.pve3", spec, current.resource_version, labels=labels)


def test_a_drain_whose_replica_stopped_is_reported_interrupted_and_resumed(
    api: Api, light: LightWorld, kube: KubeApi
) -> None:
    pending = [{"vmid": 4211, "name": "drain-4211", "state": "PENDING"}]
    with (
        guests(light, "zone-b", "pve3", (4211, "running", 1024, None)),
        uncordoned_after(api, "zone-b", "pve3"),
    ):
        mutate(api, CORDON, zone="zone-b", host="pve3")
        # A drain another replica runs (its heartbeat is fresh): calling drainHost returns it as it is,
        # and the host cannot be uncordoned under it.
        write_drain(kube, datetime.now(UTC), pending)
        assert mutate(api, DRAIN, zone="zone-b", host="pve3")["drain"]["state"] == "RUNNING"
        refused = mutate(api, UNCORDON, zone="zone-b", host="pve3")
        assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
        assert "being drained" in refused["errors"][0]["message"]
        time.sleep(0.5)
        assert fake_vms(light, "zone-b")[4211]["node"] == "pve3"  # nobody else started on it

        # That replica stopped: its heartbeat is old. The drain is interrupted, and drainHost resumes it.
        write_drain(kube, datetime.now(UTC) - timedelta(minutes=10), pending)
        assert (drain_of(api, "zone-b", "pve3") or {}).get("state") == "INTERRUPTED"
        assert mutate(api, DRAIN, zone="zone-b", host="pve3")["drain"]["state"] == "RUNNING"
        drain = ended(api, "zone-b", "pve3")
        assert drain["state"] == "DONE"
        assert by_vmid(drain)[4211]["state"] == "MOVED"
        assert fake_vms(light, "zone-b")[4211]["node"] == by_vmid(drain)[4211]["target"]


# ------------------------------------------------------------------------------------------ removal


def test_a_host_with_vms_is_not_removed(api: Api) -> None:
    result = mutate(api, REMOVE, zone="zone-a", host="pve1")
    assert result["host"] is None
    assert [e["code"] for e in result["errors"]] == ["CONFLICT"]
    message = result["errors"][0]["message"]
    assert "VMs are still on host pve1 of zone zone-a" in message
    assert "web-1" in message
    assert "legacy-mail" in message
    assert host_row(api, "admin", "zone-a/pve1") is not None


def test_an_empty_host_is_removed_and_can_be_added_back(api: Api, light: LightWorld) -> None:
    assert not [
        vm for vm in fake_vms(light, "zone-b").values() if vm["node"] == "pve3" and not vm["template"]
    ]
    removed = mutate(api, REMOVE, zone="zone-b", host="pve3")
    try:
        assert removed == {"host": {"id": "zone-b/pve3", "name": "pve3", "zone": "zone-b"}, "errors": []}
        answer = api("{ zones { id hosts { name } } }", user="admin")
        assert answer.errors == []
        zone_b = next(z for z in answer.data["zones"] if z["id"] == "zone-b")
        assert [h["name"] for h in zone_b["hosts"]] == ["pve1", "pve2"]
        # Proxmox is untouched: the node is still in the zone's cluster.
        assert "pve3" in light.fakes.on_loop(lambda: dict(light.fakes["zone-b"].pve.nodes))
    finally:
        endpoint = light.endpoints[("zone-b", "pve3")]
        added = mutate(api, CREATE_HOST, input={"zone": "zone-b", "host": "pve3", "endpoint": endpoint})
        assert added["errors"] == []
    assert host_row(api, "admin", "zone-b/pve3") == {"id": "zone-b/pve3", "cordoned": False, "online": True}


def test_a_host_whose_zone_does_not_answer_is_removed_only_with_force(api: Api) -> None:
    zone = f"lab-{uuid.uuid4().hex[:6]}"
    mutate(
        api,
        "mutation($input: ZoneInput!) { createZone(input: $input) { errors { message } } }",
        input={"id": zone},
    )
    try:
        # Added with an address nothing answers on: whether VMs are on it cannot be told.
        mutate(api, CREATE_HOST, input={"zone": zone, "host": "pve1", "endpoint": "192.0.2.10:7443"})
        refused = mutate(api, REMOVE, zone=zone, host="pve1")
        assert [e["code"] for e in refused["errors"]] == ["UNAVAILABLE"]
        assert "cannot tell whether VMs are on host pve1" in refused["errors"][0]["message"]
        forced = mutate(api, REMOVE_FORCED, zone=zone, host="pve1")
        assert forced == {"host": {"id": f"{zone}/pve1"}, "errors": []}
    finally:
        mutate(api, "mutation($id: ID!) { deleteZone(id: $id) { errors { message } } }", id=zone)
