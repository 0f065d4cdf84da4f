"""The harness's snapshots behave as Proxmox's: a disk that cannot snapshot is refused in the task, a
rollback to a snapshot with memory resumes the guest, one without leaves it stopped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from devstack.fakezones import TOKEN_ID, FakeZones
from tests import addresses

NODES = {"pve1": addresses.address(addresses.SNAPSHOT_ZONE, 1)}


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeZones]:
    zones = FakeZones({"zone-s": NODES}, {"zone-s": "s3cret"}, Path(tmp_path_factory.mktemp("pki")))
    zones.start()
    yield zones
    zones.stop()


def add(fakes: FakeZones, vmid: int, disk: str, status: str = "running") -> None:
    pve = fakes["zone-s"].pve
    config = {"scsi0": f"{disk},size=8G", "memory": "1024"}
    fakes.on_loop(lambda: pve.add_vm(vmid, f"vm{vmid}", node="pve1", status=status, config=config))


def call(fakes: FakeZones, method: str, path: str, **data: str) -> Any:
    answer = requests.request(
        method,
        f"{fakes['zone-s'].url('pve1')}/api2/json{path}",
        data=data or None,
        headers={"Authorization": f"PVEAPIToken={TOKEN_ID}=s3cret"},
        verify=fakes.certfile,
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def task(fakes: FakeZones, upid: str) -> dict[str, Any]:
    status: dict[str, Any] = call(fakes, "GET", f"/nodes/pve1/tasks/{upid}/status")
    return status


def status_of(fakes: FakeZones, vmid: int) -> str:
    pve = fakes["zone-s"].pve
    return str(fakes.on_loop(lambda: pve.vm(vmid).status))


def test_a_raw_disk_on_a_directory_storage_cannot_be_snapshotted(fakes: FakeZones) -> None:
    add(fakes, 801, "local:801/vm-801-disk-0.raw")
    upid = call(fakes, "POST", "/nodes/pve1/qemu/801/snapshot", snapname="s1")
    assert task(fakes, upid)["exitstatus"] == "snapshot feature is not available"


def test_a_rollback_to_a_snapshot_with_memory_resumes_the_guest(fakes: FakeZones) -> None:
    add(fakes, 802, "local-lvm:vm-802-disk-0")
    upid = call(fakes, "POST", "/nodes/pve1/qemu/802/snapshot", snapname="warm", vmstate="1")
    assert task(fakes, upid)["exitstatus"] == "OK"
    call(fakes, "POST", "/nodes/pve1/qemu/802/snapshot", snapname="cold")
    upid = call(fakes, "POST", "/nodes/pve1/qemu/802/snapshot/warm/rollback")
    assert task(fakes, upid)["exitstatus"] == "OK"
    assert status_of(fakes, 802) == "running"
    upid = call(fakes, "POST", "/nodes/pve1/qemu/802/snapshot/cold/rollback")
    assert task(fakes, upid)["exitstatus"] == "OK"
    assert status_of(fakes, 802) == "stopped"
