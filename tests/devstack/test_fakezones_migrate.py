"""The harness's QEMU migration: Proxmox's precondition, a task that moves the guest, and its refusals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from devstack.fakezones import FakeZones
from tests import addresses
from tests.devstack.conftest import pve_api

NODES = {f"pve{n}": addresses.address(addresses.MIGRATION_ZONE, n) for n in (1, 2, 3)}


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeZones]:
    zones = FakeZones({"zone-m": NODES}, {"zone-m": "s3cret"}, Path(tmp_path_factory.mktemp("pki")))
    pve = zones["zone-m"].pve
    # A storage only pve1 and pve2 have.
    pve.storages["fast"] = {"type": "lvmthin", "active": 1, "content": "images", "nodes": "pve1,pve2"}
    zones.start()
    yield zones
    zones.stop()


@pytest.fixture
def guest(fakes: FakeZones) -> Iterator[Any]:
    """Adds a VM to pve1 (``guest(vmid, status, **config)``); each is removed afterwards."""
    pve = fakes["zone-m"].pve
    added: list[int] = []

    def add(vmid: int, status: str = "running", **config: str) -> None:
        config = {"scsi0": f"local-lvm:vm-{vmid}-disk-0,size=8G", "memory": "1024", **config}
        fakes.on_loop(lambda: pve.add_vm(vmid, f"vm{vmid}", node="pve1", status=status, config=config))
        added.append(vmid)

    yield add

    def drop() -> None:
        pve.vms[:] = [vm for vm in pve.vms if vm.vmid not in added]
        for vm in pve.vms:
            vm.lock_holder = None
        for node in NODES:
            pve.set_node_offline(node, False)

    fakes.on_loop(drop)


def call(fakes: FakeZones, method: str, path: str, **data: str) -> requests.Response:
    return pve_api(fakes, "zone-m", method, path, **data)


def node_of(fakes: FakeZones, vmid: int) -> tuple[str, str, str | None]:
    """(node, status, lock) of the fake's guest."""
    pve = fakes["zone-m"].pve
    vm = fakes.on_loop(lambda: pve.vm(vmid))
    return vm.node, vm.status, vm.lock


def migrate(fakes: FakeZones, vmid: int, **params: str) -> dict[str, Any]:
    """POST the migration; the task's status once it ended (the fakes run tasks at once)."""
    answer = call(fakes, "POST", f"/nodes/pve1/qemu/{vmid}/migrate", **params)
    assert answer.status_code == 200, answer.reason
    upid = answer.json()["data"]
    status: dict[str, Any] = call(fakes, "GET", f"/nodes/pve1/tasks/{upid}/status").json()["data"]
    assert status["status"] == "stopped"
    return status


def test_a_running_vm_moves_live_with_its_local_disks_and_keeps_running(fakes: FakeZones, guest: Any) -> None:
    guest(701)
    check = call(fakes, "GET", "/nodes/pve1/qemu/701/migrate").json()["data"]
    assert check["running"] in (1, True)
    assert [d["volid"] for d in check["local_disks"]] == ["local-lvm:vm-701-disk-0"]
    assert check["local_resources"] == []
    assert "allowed_nodes" not in check  # Proxmox judges the nodes for offline migrations only

    status = migrate(fakes, 701, target="pve2", online="1", **{"with-local-disks": "1"})
    assert status["exitstatus"] == "OK"
    assert status["type"] == "qmigrate"
    assert node_of(fakes, 701) == ("pve2", "running", None)


def test_a_stopped_vm_is_judged_per_node_and_refused_where_its_storage_is_missing(
    fakes: FakeZones, guest: Any
) -> None:
    guest(702, status="stopped", scsi1="fast:vm-702-disk-1,size=4G")
    check = call(fakes, "GET", "/nodes/pve1/qemu/702/migrate").json()["data"]
    assert check["allowed_nodes"] == ["pve2"]
    assert check["not_allowed_nodes"] == {"pve3": {"unavailable_storages": ["fast"]}}

    status = migrate(fakes, 702, target="pve3")
    assert status["exitstatus"] == "migration aborted: storage 'fast' is not available on node 'pve3'"
    assert node_of(fakes, 702)[0] == "pve1"
    assert migrate(fakes, 702, target="pve2")["exitstatus"] == "OK"
    assert node_of(fakes, 702) == ("pve2", "stopped", None)


def test_a_running_vm_is_refused_without_online_and_its_disks_without_with_local_disks(
    fakes: FakeZones, guest: Any
) -> None:
    guest(703)
    answer = call(fakes, "POST", "/nodes/pve1/qemu/703/migrate", target="pve2")
    assert answer.status_code == 500
    assert "can't migrate running VM without --online" in answer.reason
    status = migrate(fakes, 703, target="pve2", online="1")
    assert "without with-local-disks option" in status["exitstatus"]
    assert node_of(fakes, 703)[0] == "pve1"


def test_unknown_and_offline_targets_are_refused(fakes: FakeZones, guest: Any) -> None:
    guest(704)
    answer = call(fakes, "POST", "/nodes/pve1/qemu/704/migrate", target="pve9", online="1")
    assert answer.status_code == 500
    assert "no such cluster node 'pve9'" in answer.reason
    fakes.on_loop(lambda: fakes["zone-m"].pve.set_node_offline("pve3"))
    status = migrate(fakes, 704, target="pve3", online="1", **{"with-local-disks": "1"})
    assert "Can't connect to destination address" in status["exitstatus"]
    assert node_of(fakes, 704)[0] == "pve1"


def test_a_held_config_lock_fails_the_task_and_a_lock_value_refuses_at_once(
    fakes: FakeZones, guest: Any
) -> None:
    guest(705)
    pve = fakes["zone-m"].pve
    fakes.loop.run(pve.hold_config_lock(705, None))
    status = migrate(fakes, 705, target="pve2", online="1", **{"with-local-disks": "1"})
    assert "can't lock file '/var/lock/qemu-server/lock-705.conf' - got timeout" in status["exitstatus"]
    assert node_of(fakes, 705)[0] == "pve1"

    fakes.on_loop(lambda: pve.release_config_lock(705))
    fakes.on_loop(lambda: pve.snapshot_lock(705, "backup"))
    try:
        answer = call(fakes, "POST", "/nodes/pve1/qemu/705/migrate", target="pve2", online="1")
        assert answer.status_code == 500
        assert "VM is locked (backup)" in answer.reason
    finally:
        fakes.on_loop(lambda: pve.unlock(705))


def test_local_devices_are_reported_and_refused(fakes: FakeZones, guest: Any) -> None:
    guest(706, hostpci0="0000:01:00.0")
    check = call(fakes, "GET", "/nodes/pve1/qemu/706/migrate").json()["data"]
    assert check["local_resources"] == ["hostpci0"]
    status = migrate(fakes, 706, target="pve2", online="1", **{"with-local-disks": "1"})
    assert status["exitstatus"] == "can't migrate VM which uses local devices: hostpci0"
