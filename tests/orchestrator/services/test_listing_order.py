"""The fleet-wide listing's order across zones: each zone's VMs come in name order and the zones are merged,
so a page reads no further than itself. Same names in both zones and within one, a template, an untagged
guest and a cursor in the middle of equal names: the pages, followed by cursor, are exactly the fleet's
VMs sorted by (name, zone, VMID), each once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.world import World
from orchestrator.models.vms import vdc_in
from orchestrator.services.vms import listing
from tests.orchestrator.services.conftest import MakeContext
from tests.vmkit import forget

# (zone, VMID, name, tags): "same" three times in zone-a and twice in zone-b, across two VDCs.
ADDED = [
    ("zone-a", 62_003, "same", "fp-vdc-demo"),
    ("zone-a", 62_001, "same", "fp-vdc-other"),
    ("zone-a", 62_002, "same", "fp-vdc-demo"),
    ("zone-b", 62_004, "same", "fp-vdc-demo"),
    ("zone-b", 62_000, "same", "fp-vdc-other"),
    ("zone-a", 62_005, "aaa-first", "fp-vdc-demo"),
    ("zone-b", 62_006, "zzz-last", "fp-vdc-other"),
    ("zone-a", 62_007, "not-ours", ""),  # untagged: no VDC's, never listed
]
TEMPLATE = ("zone-b", 62_008, "same")  # a template: not a VM


@pytest.fixture
def crowd(world: World) -> Iterator[None]:
    def add(zone: str) -> None:
        pve = world.fakes[zone].pve
        for where, vmid, name, tags in ADDED:
            if where == zone:
                pve.add_vm(vmid, name, node="pve1", config={"tags": tags} if tags else {})
        if TEMPLATE[0] == zone:
            pve.add_vm(TEMPLATE[1], TEMPLATE[2], node="pve1", config={"tags": "fp-vdc-demo"}, template=True)

    for zone in ("zone-a", "zone-b"):
        world.fakes.on_loop(add, zone)
    try:
        yield
    finally:
        for zone, vmid in [(zone, vmid) for zone, vmid, *_ in ADDED] + [TEMPLATE[:2]]:
            forget(world, zone, vmid)


def expected(world: World) -> list[tuple[str, str, int]]:
    """Every tagged VM of the fakes, as the listing's sort key, sorted."""
    keys = []
    for zone in ("zone-a", "zone-b"):
        for vm in world.fakes[zone].pve.vms:
            if not vm.template and vdc_in(vm.config.get("tags")):
                keys.append((vm.name, zone, vm.vmid))
    return sorted(keys)


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_pages_by_cursor_are_the_fleet_in_order_each_vm_once(
    world: World, make_context: MakeContext, crowd: None, size: int
) -> None:
    seen: list[tuple[str, str, int]] = []
    after = None
    while True:
        page = listing.list_vms(make_context("ADMIN"), first=size, after=after)
        seen += [(vm.name, vm.zone, vm.vmid) for vm in page.items]
        assert len(page.items) <= size
        if not page.has_next:
            break
        after = page.end_cursor
    assert seen == expected(world)
    assert [key for key in seen if key[0] == "same"] == [
        ("same", "zone-a", 62_001),
        ("same", "zone-a", 62_002),
        ("same", "zone-a", 62_003),
        ("same", "zone-b", 62_000),
        ("same", "zone-b", 62_004),
    ]


def test_a_zone_and_a_name_filter_page_through_the_merge(
    world: World, make_context: MakeContext, crowd: None
) -> None:
    where = listing.VmFilter(zone="zone-b", name_contains="SAM")
    first = listing.list_vms(make_context("ADMIN"), first=1, where=where)
    second = listing.list_vms(make_context("ADMIN"), first=5, after=first.end_cursor, where=where)
    assert [vm.id for vm in [*first.items, *second.items]] == ["zone-b/62000", "zone-b/62004"]
    assert first.has_next
    assert not second.has_next
