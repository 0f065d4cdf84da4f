"""VDC-scoped reads through the services: a VDC's VMs are its pools' members, and the fleet-wide view
reports the VMs whose VDC tag and pool disagree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devstack.world import World
from orchestrator.errors import PermissionDenied
from orchestrator.services import inventory, vdcs
from orchestrator.services.vms import listing
from tests.orchestrator.services.conftest import MakeContext

MOVED = 61_000  # tagged fp-vdc-demo, moved by hand into fp-other
STRAY = 61_001  # untagged, in fp-demo (a create that failed before its tag)


@pytest.fixture
def strays(world: World) -> Iterator[None]:
    fake = world.fakes["zone-a"]

    def add(pve: Any) -> None:
        if "fp-other" not in pve.pools:
            pve.pools["fp-other"] = set()
        pve.add_vm(MOVED, "moved", node="pve1", config={"tags": "fp-vdc-demo"}, pool="fp-other")
        pve.add_vm(STRAY, "stray", node="pve2", config={}, pool="fp-demo")
        pve._sync_pools()

    def remove(pve: Any) -> None:
        pve.vms = [vm for vm in pve.vms if vm.vmid not in (MOVED, STRAY)]
        for ids in pve.pools.values():
            ids.discard(MOVED)
            ids.discard(STRAY)
        pve._sync_pools()

    world.fakes.on_loop(add, fake.pve)
    try:
        yield
    finally:
        world.fakes.on_loop(remove, fake.pve)


def test_a_vdcs_vms_are_its_pools_members_with_their_sizes_and_no_tags(make_context: MakeContext) -> None:
    ctx = make_context("USER", "vdc:demo")
    members = inventory.vdc_guests(ctx, frozenset({"demo"}))
    assert set(members) == {"zone-a", "zone-b"}
    for rows in members.values():
        for vdc, guest in rows:
            assert vdc == "demo"
            assert guest.pool == "fp-demo"
            assert guest.tags == ""
            assert guest.is_vm
            assert guest.cpus > 0
            assert guest.memory > 0
    assert ctx.unavailable == []


def test_the_shown_usage_of_a_vdc_counts_its_pools_members(make_context: MakeContext) -> None:
    ctx = make_context("USER", "vdc:demo")
    shown = vdcs.usage(ctx, "demo")
    members = inventory.vdc_guests(ctx, frozenset({"demo"}))
    assert shown.vms == sum(len(rows) for rows in members.values())
    # The same request's listing shares the pool read.
    assert ctx.memoize(("inventory", "pools", frozenset({"demo"})), lambda: None) is members


def test_the_fleet_wide_view_reports_a_vm_whose_tag_and_pool_disagree(
    make_context: MakeContext, strays: None
) -> None:
    found = {m.vm.id: m for m in listing.misplaced(make_context("ADMIN"))}
    assert found["zone-a/61000"].vm.vdc == "demo"
    assert found["zone-a/61000"].pool_vdc == "other"
    assert found["zone-a/61001"].vm.vdc == ""
    assert found["zone-a/61001"].pool_vdc == "demo"
    assert all(m.vm.vdc != m.pool_vdc for m in found.values())
    # The tenant sees what its pool holds: the stray, not the one moved away.
    page = listing.list_vms(make_context("USER", "vdc:demo"), first=500)
    ids = {vm.id for vm in page.items}
    assert "zone-a/61001" in ids
    assert "zone-a/61000" not in ids


def test_only_an_admin_is_told_what_is_misplaced(make_context: MakeContext) -> None:
    with pytest.raises(PermissionDenied):
        listing.misplaced(make_context("USER", "vdc:demo"))
