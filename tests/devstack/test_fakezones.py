"""The fake zones' harness: what it adds to fakepve, checked over HTTPS as clients meet it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from devstack.fakezones import TOKEN_ID, FakeZones
from tests import addresses
from tests.apikit import eventually

ADDRESS = addresses.address(addresses.FAKE_ZONE, 1)


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeZones]:
    zones = FakeZones(
        {"zone-x": {"pve1": ADDRESS}}, {"zone-x": "s3cret"}, Path(tmp_path_factory.mktemp("pki"))
    )
    pve = zones["zone-x"].pve
    pve.add_vm(100, "vm", node="pve1", config={"scsi0": "local-lvm:vm-100-disk-0,size=20G"})
    zones.start()
    yield zones
    zones.stop()


def call(fakes: FakeZones, method: str, path: str, **data: str) -> requests.Response:
    return requests.request(
        method,
        f"{fakes['zone-x'].url('pve1')}/api2/json{path}",
        data=data,
        headers={"Authorization": f"PVEAPIToken={TOKEN_ID}=s3cret"},
        verify=fakes.certfile,
        timeout=10,
    )


def disk(fakes: FakeZones) -> str:
    return str(fakes.on_loop(lambda: fakes["zone-x"].pve.vm(100).config["scsi0"]))


def test_a_qemu_disk_resize_grows_the_disk_in_the_vms_config(fakes: FakeZones) -> None:
    assert call(fakes, "PUT", "/nodes/pve1/qemu/100/resize", disk="scsi0", size="+10G").status_code == 200
    assert disk(fakes) == "local-lvm:vm-100-disk-0,size=30G"
    assert call(fakes, "PUT", "/nodes/pve1/qemu/100/resize", disk="scsi0", size="40G").status_code == 200
    assert disk(fakes) == "local-lvm:vm-100-disk-0,size=40G"


def test_a_qemu_disk_is_never_shrunk(fakes: FakeZones) -> None:
    before = disk(fakes)
    answer = call(fakes, "PUT", "/nodes/pve1/qemu/100/resize", disk="scsi0", size="1G")
    assert answer.status_code == 500
    assert "shrinking disks is not supported" in answer.reason
    assert disk(fakes) == before


def test_a_node_taken_offline_stops_answering(fakes: FakeZones) -> None:
    fakes.set_node_offline("zone-x", "pve1")
    try:
        with pytest.raises(requests.ConnectionError):
            call(fakes, "GET", "/version")
    finally:
        fakes.set_node_offline("zone-x", "pve1", offline=False)
    assert call(fakes, "GET", "/version").status_code == 200


def test_a_held_request_goes_through_once_released_and_not_before(fakes: FakeZones) -> None:
    """``Traffic.delay`` holds the request; ``release`` lets it through at once, well within the delay."""
    traffic = fakes["zone-x"].pve.traffic
    arrived, answered = fakes.on_loop(lambda: (traffic.count, traffic.answered))
    fakes.on_loop(lambda: traffic.delay("GET", "/version", 30.0))
    with ThreadPoolExecutor(max_workers=1) as pool:
        started = time.monotonic()
        answer = pool.submit(call, fakes, "GET", "/version")
        eventually(lambda: fakes.on_loop(lambda: traffic.count > arrived), 10, "the request's arrival")
        time.sleep(0.3)
        assert not answer.done()
        assert fakes.on_loop(lambda: traffic.answered) == answered  # held: Proxmox has not handled it yet
        fakes.on_loop(traffic.release)
        assert answer.result(10).status_code == 200
    assert time.monotonic() - started < 10  # not the 30 s of the delay
