"""The harness's disks as Proxmox moves them: a disk reassigned to another VM (``move_disk`` with
``target-vmid``) with qemu-server's checks, a drive detached into ``unused<n>``, a disk hot-plugged into
a running VM, an ``unused<n>`` deleted with its volume."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from devstack.fakezones import FakeZones
from tests import addresses
from tests.devstack.conftest import pve_api

NODES = {f"pve{n}": addresses.address(addresses.DISK_ZONE, n) for n in (1, 2)}


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeZones]:
    zones = FakeZones({"zone-d": NODES}, {"zone-d": "s3cret"}, Path(tmp_path_factory.mktemp("pki")))
    zones.start()
    yield zones
    zones.stop()


@pytest.fixture
def guest(fakes: FakeZones) -> Iterator[Any]:
    """Adds a VM (``guest(vmid, status, node, **config)``), with a disk ``scsi0``; removed afterwards."""
    pve = fakes["zone-d"].pve
    added: list[int] = []

    def add(vmid: int, status: str = "stopped", node: str = "pve1", **config: str) -> None:
        disk = f"local-lvm:vm-{vmid}-disk-0,serial=fpvol{vmid},size=8G"
        config = {"scsi0": disk, "memory": "512", **config}
        fakes.on_loop(lambda: pve.add_vm(vmid, f"vm{vmid}", node=node, status=status, config=config))
        added.append(vmid)

    yield add
    fakes.on_loop(lambda: pve.vms.__setitem__(slice(None), [vm for vm in pve.vms if vm.vmid not in added]))


def call(fakes: FakeZones, method: str, path: str, **data: str) -> requests.Response:
    return pve_api(fakes, "zone-d", method, path, **data)


def config(fakes: FakeZones, vmid: int) -> dict[str, Any]:
    pve = fakes["zone-d"].pve
    return dict(fakes.on_loop(lambda: dict(pve.vm(vmid).config)))


def move(fakes: FakeZones, vmid: int, **params: str) -> dict[str, Any]:
    """POST the move; the task's status once it ended (the fakes run tasks at once)."""
    answer = call(fakes, "POST", f"/nodes/pve1/qemu/{vmid}/move_disk", **params)
    assert answer.status_code == 200, answer.reason
    upid = answer.json()["data"]
    status: dict[str, Any] = call(fakes, "GET", f"/nodes/pve1/tasks/{upid}/status").json()["data"]
    assert status["status"] == "stopped"
    return status


def refusal(fakes: FakeZones, vmid: int, **params: str) -> str:
    answer = call(fakes, "POST", f"/nodes/pve1/qemu/{vmid}/move_disk", **params)
    assert answer.status_code == 500, answer.text
    return answer.reason


def test_a_stopped_vms_disk_moves_to_a_running_vm_renamed_its_options_kept_and_hot_plugged(
    fakes: FakeZones, guest: Any
) -> None:
    guest(901)
    guest(902, "running")
    status = move(fakes, 901, disk="scsi0", **{"target-vmid": "902", "target-disk": "scsi1"})
    assert status["exitstatus"] == "OK"
    assert "scsi0" not in config(fakes, 901)
    assert config(fakes, 902)["scsi1"] == "local-lvm:vm-902-disk-1,serial=fpvol901,size=8G"
    pending = call(fakes, "GET", "/nodes/pve1/qemu/902/pending").json()["data"]
    assert not [p for p in pending if p["key"] == "scsi1" and "pending" in p]


def test_a_disk_moves_to_an_unused_key_as_its_volume_alone(fakes: FakeZones, guest: Any) -> None:
    guest(903)
    guest(904)
    move(fakes, 903, disk="scsi0", **{"target-vmid": "904", "target-disk": "unused0"})
    assert config(fakes, 904)["unused0"] == "local-lvm:vm-904-disk-1"


def test_a_running_vms_disk_is_detached_first_then_its_unused_volume_moves(
    fakes: FakeZones, guest: Any
) -> None:
    guest(905, "running", scsi1="local-lvm:vm-905-disk-1,serial=fpvol7,size=4G")
    guest(906)
    target = {"target-vmid": "906", "target-disk": "scsi2"}
    assert "detach first" in refusal(fakes, 905, disk="scsi1", **target)
    assert call(fakes, "PUT", "/nodes/pve1/qemu/905/config", delete="scsi1").status_code == 200
    detached = config(fakes, 905)
    assert "scsi1" not in detached
    assert detached["unused0"] == "local-lvm:vm-905-disk-1"
    move(fakes, 905, disk="unused0", **target)
    assert "unused0" not in config(fakes, 905)
    # An unused volume keeps no options (and this one, only referenced, has no size on its storage).
    assert config(fakes, 906)["scsi2"] == "local-lvm:vm-906-disk-1"


def test_a_move_is_refused_as_proxmox_refuses_it(fakes: FakeZones, guest: Any) -> None:
    guest(907)
    guest(908)
    guest(909, node="pve2")
    target = {"target-vmid": "908", "target-disk": "scsi1"}
    assert "same VM" in refusal(fakes, 907, disk="scsi0", **{**target, "target-vmid": "907"})
    assert "could not find target VM 999" in refusal(fakes, 907, disk="scsi0", **{"target-vmid": "999"})
    assert "same node" in refusal(fakes, 907, disk="scsi0", **{**target, "target-vmid": "909"})
    assert "already in use" in refusal(fakes, 907, disk="scsi0", **{**target, "target-disk": "scsi0"})
    assert "does not exist" in refusal(fakes, 907, disk="scsi5", **target)
    pve = fakes["zone-d"].pve
    disk = config(fakes, 907)["scsi0"]
    fakes.on_loop(lambda: pve.vm(907).snapshots.__setitem__("s1", {"scsi0": disk}))
    assert "used by a snapshot" in refusal(fakes, 907, disk="scsi0", **target)
    assert "scsi0" in config(fakes, 907)
    assert "scsi1" not in config(fakes, 908)


def test_deleting_an_unused_disk_frees_its_volume(fakes: FakeZones, guest: Any) -> None:
    guest(910)
    made = {"vmid": "910", "filename": "vm-910-disk-1", "size": "1G"}
    assert call(fakes, "POST", "/nodes/pve1/storage/local-lvm/content", **made).ok
    assert call(fakes, "PUT", "/nodes/pve1/qemu/910/config", unused0="local-lvm:vm-910-disk-1").ok
    assert call(fakes, "PUT", "/nodes/pve1/qemu/910/config", delete="unused0").ok
    content = call(fakes, "GET", "/nodes/pve1/storage/local-lvm/content", vmid="910").json()["data"]
    assert "local-lvm:vm-910-disk-1" not in [c["volid"] for c in content]
