"""A tenant's reads cost what the tenant has: its VDC's pools, not the whole fleet's resources.

The fake zones count what reaches them (``devstack.fakezones.Traffic``): every request and the bytes
of every answer. A crowd of other VMs, larger than the rest of the light by far, is added to each zone
for these tests and taken away after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.apikit import Zones
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import create, ok, pool_members

CROWD = 2_000  # per zone
FIRST_VMID = 50_000
LIST = "{ virtualMachines(first: 100) { edges { node { id name vdc status cores memoryMb diskGb } } } }"


@pytest.fixture
def large_fleet(light: Zones) -> Iterator[int]:
    """``CROWD`` VMs of another VDC in each zone, in that VDC's pool, tagged as flex.plane tags them."""

    def add(pve: Any) -> None:
        for i in range(CROWD):
            vmid = FIRST_VMID + i
            pve.add_vm(
                vmid,
                f"crowd-{i:05d}",
                node=f"pve{i % 3 + 1}",
                status="running",
                config={"cores": 2, "memory": 2048, "tags": "fp-vdc-crowd", "scsi0": "local-lvm:x,size=20G"},
                pool="fp-crowd",
            )

    def remove(pve: Any) -> None:
        pve.vms = [vm for vm in pve.vms if not FIRST_VMID <= vm.vmid < FIRST_VMID + CROWD]
        pve.pools.pop("fp-crowd", None)
        pve.pool_info.pop("fp-crowd", None)

    for fake in light.fakes.zones.values():
        light.fakes.on_loop(add, fake.pve)
    try:
        yield CROWD * len(light.fakes.zones)
    finally:
        for fake in light.fakes.zones.values():
            light.fakes.on_loop(remove, fake.pve)


Calls = dict[str, list[tuple[str, str, int]]]  # per zone, the (method, path, bytes) of API answers


def _marks(light: Zones) -> dict[str, int]:
    return {
        zone: light.fakes.on_loop(lambda f=fake: f.pve.traffic.answered)
        for zone, fake in light.fakes.zones.items()
    }


def _answers(light: Zones, marks: dict[str, int]) -> Calls:
    """Per zone, the (method, path, bytes) of the API answers since ``marks``."""
    out: dict[str, list[tuple[str, str, int]]] = {}
    for zone, fake in light.fakes.zones.items():
        seen = light.fakes.on_loop(lambda f=fake, z=zone: f.pve.traffic.answers_since(marks[z]))
        out[zone] = [a for a in seen if a[1].startswith("/api2/json/") and not a[1].endswith("/version")]
    return out


def read_counting(
    api: InProcessApi, light: Zones, document: str, user: str, vdc: str | None = None
) -> tuple[Any, Calls]:
    """Ask ``document`` as ``user`` (in ``vdc``), which must answer without errors: its data, and per zone
    the Proxmox API answers it cost."""
    marks = _marks(light)
    answer = api(document, user=user, vdc=vdc)
    calls = _answers(light, marks)
    assert answer.errors == []
    return answer.data, calls


def test_a_vdc_listing_in_a_large_fleet_reads_only_the_vdcs_pool_once_per_zone(
    api: InProcessApi, light: LightWorld, large_fleet: int
) -> None:
    data, tenant = read_counting(api, light, LIST, "alice", "demo")
    assert {e["node"]["vdc"] for e in data["virtualMachines"]["edges"]} == {"demo"}
    assert {zone: [(m, p) for m, p, _ in calls] for zone, calls in tenant.items()} == {
        zone: [("GET", "/api2/json/pools/fp-demo")] for zone in light.fakes.zones
    }

    _, everything = read_counting(api, light, LIST, "admin")
    assert {zone: [p for _, p, _ in calls] for zone, calls in everything.items()} == {
        zone: ["/api2/json/cluster/resources"] for zone in light.fakes.zones
    }
    # What crosses the wire is the VDC's few VMs, not the fleet's thousands.
    tenant_bytes = sum(size for calls in tenant.values() for _, _, size in calls)
    fleet_bytes = sum(size for calls in everything.values() for _, _, size in calls)
    assert fleet_bytes > large_fleet * 200  # every guest is a few hundred bytes of JSON
    assert tenant_bytes < 4_000 * len(light.fakes.zones)
    assert tenant_bytes * 50 < fleet_bytes


ZONES = "{ zones { id hosts { name online } } }"


@pytest.mark.parametrize("user", ["alice", "admin"])
def test_the_zones_status_in_a_large_fleet_reads_each_zones_nodes_alone(
    api: InProcessApi, light: LightWorld, large_fleet: int, user: str
) -> None:
    """Whether each host is online is in the zone's node entries (``?type=node``): the zones' page costs
    what the zones have, never the fleet's guests."""
    data, calls = read_counting(api, light, ZONES, user, "demo" if user == "alice" else None)
    assert all(h["online"] for z in data["zones"] for h in z["hosts"])
    assert {zone: [p for _, p, _ in seen] for zone, seen in calls.items()} == {
        zone: ["/api2/json/cluster/resources"] for zone in light.fakes.zones
    }
    assert sum(size for seen in calls.values() for _, _, size in seen) < 2_000 * len(light.fakes.zones)


def test_a_pools_members_carry_what_proxmox_builds_from_the_vm_stats_and_no_tags(light: LightWorld) -> None:
    fake = light.fakes["zone-a"]
    answer = light.fakes.on_loop(lambda: fake.pve._members("fp-demo", "qemu"))
    assert answer
    for member in answer:
        assert {
            "id",
            "vmid",
            "node",
            "type",
            "status",
            "name",
            "template",
            "maxcpu",
            "maxmem",
            "maxdisk",
        } <= set(member)
        assert not {"tags", "lock", "pool", "hastate"} & set(member)


def test_a_vdc_whose_pool_a_zone_lacks_has_no_vms_there_and_the_zone_is_not_unavailable(
    api: InProcessApi, light: LightWorld
) -> None:
    fake = light.fakes["zone-b"]
    members = light.fakes.on_loop(lambda: set(fake.pve.pools.get("fp-demo", set())))
    info = light.fakes.on_loop(lambda: fake.pve.pool_info.get("fp-demo"))

    def drop_pool(pve: Any) -> None:
        pve.pools.pop("fp-demo", None)
        pve.pool_info.pop("fp-demo", None)
        pve._sync_pools()

    def restore(pve: Any) -> None:
        pve.pools["fp-demo"] = members
        if info is not None:
            pve.pool_info["fp-demo"] = info
        pve._sync_pools()

    light.fakes.on_loop(drop_pool, fake.pve)
    try:
        data, calls = read_counting(api, light, LIST, "alice", "demo")
    finally:
        light.fakes.on_loop(restore, fake.pve)
    assert {e["node"]["id"].split("/")[0] for e in data["virtualMachines"]["edges"]} == {"zone-a"}
    assert len(calls["zone-b"]) == 1  # Proxmox's "does not exist" is its answer: no other node is asked


TASKS = "{ tasks(first: 20) { id virtualMachineId } }"


def test_a_vdcs_task_list_in_a_large_fleet_reads_its_pools_and_nodes_not_the_fleets_guests(
    api: InProcessApi, light: LightWorld, large_fleet: int
) -> None:
    _, calls = read_counting(api, light, TASKS, "alice", "demo")
    for zone, seen in calls.items():
        paths = [path for _, path, _ in seen]
        assert paths.count("/api2/json/pools/fp-demo") == 1, zone
        assert paths.count("/api2/json/cluster/resources") == 1, zone  # ?type=node: the nodes alone
        assert all(
            p.startswith(("/api2/json/pools/", "/api2/json/cluster/", "/api2/json/nodes/")) for p in paths
        )
        # What is read of the fleet (pools, nodes) stays far below its guests; the nodes' task lists are
        # read once each, at most NODE_TASKS entries (their size is the zone's task history, not its fleet).
        fleet_reads = [size for _, path, size in seen if "/tasks" not in path]
        assert sum(fleet_reads) < large_fleet * 20, zone
        assert sum(1 for _, path, _ in seen if path.endswith("/tasks")) <= 3, zone


def test_a_created_vm_is_in_its_vdcs_pool_and_so_in_its_tenants_listing(
    api: InProcessApi, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    made = ok(create(api, "alice", "demo", name=vm_name("pooled")))["virtualMachine"]
    zone, vmid = made["id"].split("/")
    assert int(vmid) in pool_members(light, zone, "fp-demo")  # the fake's own state
    listed = api(LIST, user="alice", vdc="demo").data["virtualMachines"]["edges"]
    assert made["id"] in {e["node"]["id"] for e in listed}
