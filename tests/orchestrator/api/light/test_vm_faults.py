"""Faults: Proxmox tasks that end in TASK ERROR, VMs locked by something else, hosts that go offline,
zones without room. Each gives a clear, typed error carrying Proxmox's message, and leaves nothing
half-made behind (checked in the fake's own state: no VM, no disk). The fault suite's own rows (a node
offline, a config lock held, a start in TASK ERROR, ...) live in tests/resilience/test_faults.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.apikit import Zones
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import (
    LARGE,
    act,
    create,
    fake_vm,
    fake_vms,
    forget,
    named,
    ok,
    pool_members,
    present,
    requests_to,
    restore,
    vm_names,
    vmid_of,
    volumes_of,
)


@pytest.fixture
def vm_name(api: InProcessApi, light: Zones) -> Iterator[Callable[[str], str]]:
    with vm_names(api, light) as name:
        yield name


def pve(light: Zones, zone: str = "zone-a") -> Any:
    return light.fakes[zone].pve


def fail(light: Zones, method: str, suffix: str, zone: str = "zone-a", **how: Any) -> None:
    """Make the zone's fake fail the next matching request (pve.fail(..., times=1))."""
    fake = pve(light, zone)
    light.fakes.on_loop(lambda: fake.fail(method, suffix, times=1, **how))


def last_clone(light: Zones, zone: str = "zone-a") -> int:
    """The VMID the last clone request to the zone asked for."""
    return int(requests_to(light, zone, "POST", "/clone")[-1]["newid"])


def nothing_left(light: Zones, name: str, vmid: int, zone: str = "zone-a") -> None:
    """No VM of that name anywhere; no VM, disk or pool membership of its VMID."""
    assert named(light, name) == []
    assert fake_vm(light, f"{zone}/{vmid}") is None
    assert volumes_of(light, zone, vmid) == []
    assert vmid not in pool_members(light, zone, "fp-demo")


def vmids_now(light: Zones, zone: str = "zone-a") -> set[int]:
    return set(fake_vms(light, zone))


# ------------------------------------------------------------------------------------------ creates


def test_a_clone_that_proxmox_refuses_makes_nothing(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    fail(light, "POST", "/clone", status=500, message="clone failed: storage 'local-lvm' is out of space")
    result = create(api, "alice", "demo", name=vm_name("noclone"))
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "storage 'local-lvm' is out of space" in result["errors"][0]["message"]
    nothing_left(light, vm_name("noclone"), last_clone(light))


def test_a_tag_write_refused_right_after_the_clone_removes_the_untagged_vm(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    fail(light, "PUT", "/config", status=500, message="cluster not ready - no quorum?")
    result = create(api, "alice", "demo", name=vm_name("notags"))
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "no quorum" in result["errors"][0]["message"]
    assert "was removed" in result["errors"][0]["message"]
    nothing_left(light, vm_name("notags"), last_clone(light))


def test_a_disk_resize_refused_after_the_clone_removes_the_vm_and_its_disk(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    fail(light, "PUT", "/resize", status=500, message="unable to resize: thin pool data is full")
    result = create(api, "alice", "demo", name=vm_name("noroom"))
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "thin pool data is full" in result["errors"][0]["message"]
    assert "was removed" in result["errors"][0]["message"]
    nothing_left(light, vm_name("noroom"), last_clone(light))


OCCUPANT_VMID = 60_000


@pytest.fixture
def occupied(light: Zones) -> Iterator[None]:
    """A guest of 6 GiB on every node of every zone (not flex.plane's: no tags), whatever earlier modules
    left on the nodes, taken away after."""
    added: list[tuple[str, int]] = []
    for zone, fake in light.fakes.zones.items():
        for n, node in enumerate(sorted(fake.pve.nodes)):
            vmid = OCCUPANT_VMID + n
            config = {"cores": 1, "memory": 6144}
            light.fakes.on_loop(
                lambda f=fake, v=vmid, o=node, c=config: f.pve.add_vm(v, f"occupant-{v}", node=o, config=c)
            )
            added.append((zone, vmid))
    try:
        yield
    finally:
        for zone, vmid in added:
            forget(light, zone, vmid)


def test_a_zone_without_room_is_no_capacity_naming_what_was_short(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str], occupied: None
) -> None:
    before = vmids_now(light)
    # "large" is 4 vCPUs and 8 GiB: each fake node has 8 GiB, and every node holds a guest of 6 GiB.
    result = create(api, "alice", "demo", name=vm_name("huge"), computeProfile=LARGE)
    assert [e["code"] for e in result["errors"]] == ["NO_CAPACITY"]
    assert "not enough memory" in result["errors"][0]["message"]
    placement = result["placement"]
    assert placement["host"] is None
    assert {r["host"] for r in placement["rejected"]} == {"pve1", "pve2", "pve3"}
    assert all("not enough memory: needs 8192 MiB" in r["reason"] for r in placement["rejected"])
    assert vmids_now(light) == before


def test_a_host_that_goes_offline_mid_create_is_a_clear_error_and_its_leftover_is_cleaned_up(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    name = vm_name("lost")
    fake = pve(light)

    # Slow the zone down (every request takes 0.15 s) so that the host can go away mid-create: right
    # after Proxmox made the clone, before the orchestrator could tag or configure it.
    def slow_down() -> None:
        fake.time_scale = 1.0
        fake.network.update(latency=0.15)

    light.fakes.on_loop(slow_down)
    gone: list[tuple[str, int]] = []

    def take_its_host_offline() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not gone:
            for vmid, vm in fake_vms(light, "zone-a").items():
                if vm["name"] == name:
                    light.fakes.set_node_offline("zone-a", vm["node"])
                    gone.append((vm["node"], vmid))
                    return
            time.sleep(0.005)

    watcher = threading.Thread(target=take_its_host_offline)
    watcher.start()
    result = create(api, "alice", "demo", name=name)
    watcher.join()
    assert gone, "the clone never appeared"
    node, vmid = gone[0]
    assert result["virtualMachine"] is None
    assert [e["code"] for e in result["errors"]] == ["UNAVAILABLE"]
    message = result["errors"][0]["message"]
    assert "No route to host" in message  # Proxmox's own words
    assert f"zone-a/{vmid} could not be removed" in message
    # While its host is away the leftover is untagged, yet in the VDC's pool: its tenant's listing
    # (the pool's members) shows it, never hiding what the VDC holds; the quota (by tag) does not count it...
    listing = api("{ virtualMachines { edges { node { id status } } } }", user="alice", vdc="demo")
    shown = {e["node"]["id"]: e["node"]["status"] for e in listing.data["virtualMachines"]["edges"]}
    assert shown.get(f"zone-a/{vmid}") == "unknown"

    # ... and once the host is back, the VDC's next create removes it: nothing half-made remains.
    leftover = volumes_of(light, "zone-a", vmid)
    assert leftover
    restore(light)
    after = ok(create(api, "alice", "demo", name=vm_name("next")))["virtualMachine"]
    assert named(light, name) == []
    # Proxmox hands the freed VMID out again: whatever holds it now is the new VM, with its own disk.
    if after["id"] == f"zone-a/{vmid}":
        assert len(volumes_of(light, "zone-a", vmid)) == len(leftover)
    else:
        assert volumes_of(light, "zone-a", vmid) == []
        assert vmid not in pool_members(light, "zone-a", "fp-demo")
    assert node in {"pve1", "pve2", "pve3"}


def test_a_vm_an_admin_put_in_the_pool_by_hand_is_never_taken_for_a_leftover(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    fake = pve(light)
    stranger = 880
    light.fakes.on_loop(
        lambda: fake.add_vm(
            stranger, vm_name("stranger"), node="pve2", config={"memory": 512}, pool="fp-demo"
        )
    )
    ok(create(api, "alice", "demo", name=vm_name("after")))
    assert fake_vm(light, f"zone-a/{stranger}") is not None


# ------------------------------------------------------------------------------------------ lifecycle


@pytest.fixture
def running(api: InProcessApi, vm_name: Callable[[str], str]) -> dict[str, Any]:
    vm: dict[str, Any] = ok(create(api, "alice", "demo", name=vm_name("victim")))["virtualMachine"]
    return vm


def test_a_stop_that_ends_in_task_error_says_what_proxmox_said(
    api: InProcessApi, light: LightWorld, running: dict[str, Any]
) -> None:
    fail(light, "POST", "/status/stop", error="quit_powerdown_failed")
    result = act(api, "alice", "stopVirtualMachine", running["id"])
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "VM quit/powerdown failed" in result["errors"][0]["message"]
    assert present(light, running["id"])["status"] == "running"


def test_a_vm_locked_by_a_backup_is_a_conflict(
    api: InProcessApi, light: LightWorld, running: dict[str, Any]
) -> None:
    fake = pve(light)
    light.fakes.on_loop(lambda: fake.snapshot_lock(vmid_of(running["id"]), "backup"))
    result = act(api, "alice", "deleteVirtualMachine", running["id"])
    assert [e["code"] for e in result["errors"]] == ["CONFLICT"]
    assert "VM is locked (backup)" in result["errors"][0]["message"]
    assert fake_vm(light, running["id"]) is not None


def test_a_delete_that_ends_in_task_error_keeps_the_vm_and_says_why(
    api: InProcessApi, light: LightWorld, running: dict[str, Any]
) -> None:
    fail(light, "DELETE", f"/qemu/{vmid_of(running['id'])}", error="failed_remove_config_file")
    result = act(api, "alice", "deleteVirtualMachine", running["id"])
    assert [e["code"] for e in result["errors"]] == ["UPSTREAM_FAILURE"]
    assert "failed to remove config file" in result["errors"][0]["message"]
    vm = fake_vm(light, running["id"])
    assert vm is not None
    assert vm["status"] == "stopped"  # the stop before the destroy went through
