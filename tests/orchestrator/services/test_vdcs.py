"""VDC services against the world: definitions, live usage from the fake zones, pools, quota checks."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from devstack import seed
from devstack.world import World
from orchestrator.errors import (
    Conflict,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    UpstreamFailure,
    ValidationFailed,
)
from orchestrator.models import Usage
from orchestrator.models.vms import parse_tags, vdc_of
from orchestrator.services import vdcs
from orchestrator.sources.kube import KubeSource
from orchestrator.sources.proxmox import Guest
from tests.orchestrator.services.conftest import MakeContext

ZONES = ("zone-a", "zone-b")


def pools(world: World, zone: str) -> dict[str, str | None]:
    """The pools of a fake zone, with their comments."""
    return world.fakes.on_loop(
        lambda pve: {name: pve.pool_info.get(name, {}).get("comment") for name in pve.pools},
        world.fakes[zone].pve,
    )


def proxmox_usage(world: World, vdc_id: str) -> tuple[Usage, dict[str, int]]:
    """What the fake zones hold for a VDC (summed as Proxmox reports each VM, and its networks: the VNets
    whose alias names it), and its VMs per zone."""

    def read(pve: Any) -> list[dict[str, Any]]:
        return [
            pve._vm_usage(vm)
            for vm in pve.vms
            if not vm.template and vdc_of(parse_tags(vm.config.get("tags"))) == vdc_id
        ]

    def networks(pve: Any) -> int:
        return sum(1 for vnet in pve.sdn.vnets.values() if f" vdc={vdc_id} " in str(vnet.get("alias")))

    total = Usage()
    counts: dict[str, int] = {}
    for zone in ZONES:
        for item in world.fakes.on_loop(read, world.fakes[zone].pve):
            total = total + Usage.of_guest(Guest.from_resource({"type": "qemu", "vmid": 100, **item}))
            counts[zone] = counts.get(zone, 0) + 1
        total = total + Usage(networks=world.fakes.on_loop(networks, world.fakes[zone].pve))
    return total, counts


def resource_calls(world: World) -> dict[str, int]:
    def count(pve: Any) -> int:
        return sum(1 for r in pve.requests if r[1].endswith("/cluster/resources"))

    return {zone: world.fakes.on_loop(count, fake.pve) for zone, fake in world.fakes.zones.items()}


def vdc_input(ident: str, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": ident,
        "name": "Test VDC",
        "zones": list(ZONES),
        "compute_profiles": ["small"],
        "storage_profiles": ["standard"],
        "images": ["debian-12"],
        "quota": {"vcpus": 4, "memory_mib": 8192, "disk_gb": 100, "vms": 2},
    }
    return data | extra


@pytest.fixture
def new_vdc(make_context: MakeContext) -> Iterator[str]:
    """A unique VDC id, deleted (with its pools) after the test if it was made."""
    ident = f"t-{uuid.uuid4().hex[:8]}"
    yield ident
    with contextlib.suppress(NotFound):
        vdcs.delete_vdc(make_context("ADMIN"), ident)


# ------------------------------------------------------------------------------------ reading


def test_members_see_only_their_vdcs_and_admin_sees_all(make_context: MakeContext) -> None:
    assert [v.id for v in vdcs.visible_vdcs(make_context("USER", "vdc:demo"))] == ["demo"]
    assert [v.id for v in vdcs.visible_vdcs(make_context("USER", "vdc:other"))] == ["other"]
    assert {"demo", "other"} <= {v.id for v in vdcs.visible_vdcs(make_context("ADMIN"))}
    assert vdcs.visible_vdcs(make_context("USER")) == []


def test_another_vdc_is_reported_exactly_as_a_missing_one(make_context: MakeContext) -> None:
    bob = make_context("USER", "vdc:other")
    with pytest.raises(NotFound) as theirs:
        vdcs.get_vdc(bob, "demo")
    with pytest.raises(NotFound) as missing:
        vdcs.get_vdc(bob, "demo-nope")
    assert (theirs.value.kind, theirs.value.message) == ("VDC", "VDC 'demo' does not exist")
    assert missing.value.message == "VDC 'demo-nope' does not exist"
    with pytest.raises(NotFound):
        vdcs.usage(bob, "demo")


def test_the_seeded_vdcs_read_back_with_their_quota_and_allow_lists(make_context: MakeContext) -> None:
    demo = vdcs.get_vdc(make_context("USER", "vdc:demo"), "demo")
    assert demo.zones == ["zone-a", "zone-b"]
    assert demo.quota == Usage(vcpus=16, memory_mib=32768, disk_gb=500, vms=10, networks=10, public_ips=4)
    assert demo.allows_image("ubuntu-24.04")
    assert demo.allows_compute_profile("large")
    assert (demo.pool, demo.tag) == ("fp-demo", "fp-vdc-demo")
    other = vdcs.get_vdc(make_context("ADMIN"), "other")
    assert not other.allows_compute_profile("large")


@pytest.mark.parametrize("vdc_id", ["demo", "other"])
def test_usage_is_what_the_vdcs_vms_use_in_proxmox(
    world: World, make_context: MakeContext, vdc_id: str
) -> None:
    expected, _ = proxmox_usage(world, vdc_id)
    assert expected.vms >= 2  # the seeded VMs, at least
    assert vdcs.usage(make_context("USER", f"vdc:{vdc_id}"), vdc_id) == expected
    assert vdcs.fresh_usage(make_context("ADMIN"), vdc_id) == replace(expected, networks=0)  # VMs only


def test_the_seeded_demo_vms_count_as_proxmox_reports_them(world: World, make_context: MakeContext) -> None:
    used, per_zone = proxmox_usage(world, "demo")
    seeded = [g for zone in ZONES for g in seed.GUESTS[zone] if g[4] == "demo"]
    if used.vms == len(seeded):  # nothing else runs in demo right now
        assert replace(used, networks=0) == Usage(vcpus=6, memory_mib=6144, disk_gb=60, vms=3)
        assert per_zone == {"zone-a": 2, "zone-b": 1}


def test_listing_vdcs_with_usage_costs_one_proxmox_call_per_zone(
    world: World, make_context: MakeContext
) -> None:
    before = resource_calls(world)
    listed = vdcs.list_vdcs(make_context("ADMIN"))
    after = resource_calls(world)
    assert {zone: after[zone] - before[zone] for zone in after} == {"zone-a": 1, "zone-b": 1}
    by_id = {entry.vdc.id: entry.usage for entry in listed}
    assert by_id["demo"] == proxmox_usage(world, "demo")[0]


def test_reading_vdcs_needs_user_or_admin(make_context: MakeContext) -> None:
    with pytest.raises(PermissionDenied):
        vdcs.visible_vdcs(make_context("vdc:demo"))


# ------------------------------------------------------------------------------------- quota


def test_a_request_within_quota_passes_and_says_the_usage_after(make_context: MakeContext) -> None:
    demo = vdcs.get_vdc(make_context("ADMIN"), "demo")
    after = vdcs.check_quota(
        make_context("ADMIN"),
        demo,
        Usage(vcpus=2, memory_mib=4096, disk_gb=20, vms=1),
        current=Usage(6, 6144, 60, 3),
    )
    assert after == Usage(vcpus=8, memory_mib=10240, disk_gb=80, vms=4)


def over_demos_quota(make_context: MakeContext, asked: Usage, current: Usage) -> str:
    """The refusal of ``asked`` on top of ``current`` in VDC demo: its message."""
    demo = vdcs.get_vdc(make_context("ADMIN"), "demo")
    with pytest.raises(QuotaExceeded) as caught:
        vdcs.check_quota(make_context("ADMIN"), demo, asked, current=current)
    return caught.value.message


def test_quota_exceeded_says_which_resource_and_by_how_much(make_context: MakeContext) -> None:
    refused = over_demos_quota(
        make_context, Usage(vcpus=4, memory_mib=1024, disk_gb=20, vms=1), Usage(14, 4096, 60, 3)
    )
    assert refused == (
        "this would exceed the quota of VDC 'demo': vCPUs by 2 (14 used + 4 requested > 16 allowed)"
    )


def test_every_resource_over_quota_is_named(make_context: MakeContext) -> None:
    message = over_demos_quota(
        make_context, Usage(vcpus=1, memory_mib=8192, disk_gb=200, vms=1), Usage(1, 30000, 400, 10)
    )
    assert "memory by 5424 MiB (30000 MiB used + 8192 MiB requested > 32768 MiB allowed)" in message
    assert "disk by 100 GiB (400 GiB used + 200 GiB requested > 500 GiB allowed)" in message
    assert "VMs by 1 (10 used + 1 requested > 10 allowed)" in message
    assert "vCPUs" not in message


def test_a_vdc_over_a_lowered_quota_may_still_shrink(make_context: MakeContext) -> None:
    demo = vdcs.get_vdc(make_context("ADMIN"), "demo")
    after = vdcs.check_quota(
        make_context("ADMIN"), demo, Usage(vcpus=-2, memory_mib=2048), current=Usage(20, 1024, 10, 3)
    )
    assert after == Usage(vcpus=18, memory_mib=3072, disk_gb=10, vms=3)


def test_without_a_given_usage_the_quota_check_reads_proxmox_now(
    world: World, make_context: MakeContext
) -> None:
    demo = vdcs.get_vdc(make_context("ADMIN"), "demo")
    used, _ = proxmox_usage(world, "demo")
    room = demo.quota.vcpus - used.vcpus
    vdcs.check_quota(make_context("ADMIN"), demo, Usage(vcpus=room))
    with pytest.raises(QuotaExceeded, match=f"vCPUs by 1 \\({used.vcpus} used"):
        vdcs.check_quota(make_context("ADMIN"), demo, Usage(vcpus=room + 1))


# ------------------------------------------------------------------------------------- writes


def test_creating_a_vdc_makes_its_pool_in_each_zone_and_its_config_map(
    world: World, wired: KubeSource, make_context: MakeContext, new_vdc: str
) -> None:
    made = vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc))
    assert made.quota == Usage(vcpus=4, memory_mib=8192, disk_gb=100, vms=2, networks=10, public_ips=4)
    for zone in ZONES:
        assert pools(world, zone)[f"fp-{new_vdc}"] == f"flex.plane VDC {new_vdc}"
    stored = wired.get_catalog("vdc", new_vdc)
    assert stored is not None
    assert stored.labels == {"flexplane.io/kind": "vdc", "flexplane.io/id": new_vdc}
    assert stored.spec["quota"] == {
        "vcpus": 4,
        "memoryMib": 8192,
        "diskGb": 100,
        "vms": 2,
        "networks": 10,
        "publicIps": 4,
        "snapshotsPerVm": 10,
    }
    raw = wired.core.read_namespaced_config_map(f"vdc-{new_vdc}", seed.NAMESPACE)
    assert raw.data is not None
    assert json.loads(raw.data["spec"]) == stored.spec
    assert vdcs.usage(make_context("ADMIN"), new_vdc) == Usage(networks=2)  # its default ones


def test_deleting_an_empty_vdc_removes_its_pools_and_its_config_map(
    world: World, wired: KubeSource, make_context: MakeContext, new_vdc: str
) -> None:
    vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc))
    deleted = vdcs.delete_vdc(make_context("ADMIN"), new_vdc)
    assert deleted.id == new_vdc
    for zone in ZONES:
        assert f"fp-{new_vdc}" not in pools(world, zone)
    assert wired.get_catalog("vdc", new_vdc) is None
    assert wired.get_lease(f"fp-lock-vdc-{new_vdc}") is None  # its lock goes with it
    with pytest.raises(NotFound):
        vdcs.get_vdc(make_context("ADMIN"), new_vdc)


def test_a_pool_that_exists_already_is_fine(world: World, make_context: MakeContext, new_vdc: str) -> None:
    world.fakes.on_loop(lambda pve: pve.pools.setdefault(f"fp-{new_vdc}", set()), world.fakes["zone-b"].pve)
    vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc))
    assert all(f"fp-{new_vdc}" in pools(world, zone) for zone in ZONES)


def test_a_zone_that_refuses_its_pool_leaves_nothing_half_made(
    world: World, wired: KubeSource, make_context: MakeContext, new_vdc: str
) -> None:
    world.fakes.on_loop(
        lambda pve: pve.fail(
            "POST", "/pools", 500, "cfs-lock 'file-user_cfg' error: got lock timeout", times=1
        ),
        world.fakes["zone-b"].pve,
    )
    with pytest.raises(UpstreamFailure) as caught:
        vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc))
    assert caught.value.where == "zone-b"
    assert f"could not create pool fp-{new_vdc} in zone zone-b" in caught.value.message
    assert "got lock timeout" in caught.value.message
    assert all(f"fp-{new_vdc}" not in pools(world, zone) for zone in ZONES)
    assert wired.get_catalog("vdc", new_vdc) is None


def test_a_vdc_with_vms_cannot_be_deleted_and_says_how_many(world: World, make_context: MakeContext) -> None:
    _, per_zone = proxmox_usage(world, "demo")
    with pytest.raises(Conflict) as caught:
        vdcs.delete_vdc(make_context("ADMIN"), "demo")
    assert f"VDC 'demo' still has {sum(per_zone.values())} VM(s)" in caught.value.message
    assert all("fp-demo" in pools(world, zone) for zone in ZONES)
    assert vdcs.get_vdc(make_context("ADMIN"), "demo").id == "demo"


def test_a_zone_added_gets_the_pool_and_a_zone_with_vms_cannot_be_removed(
    world: World, make_context: MakeContext, new_vdc: str
) -> None:
    vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc, zones=["zone-a"]))
    assert f"fp-{new_vdc}" not in pools(world, "zone-b")
    grown = vdcs.update_vdc(make_context("ADMIN"), new_vdc, {"zones": ["zone-a", "zone-b"]})
    assert grown.zones == ["zone-a", "zone-b"]
    assert f"fp-{new_vdc}" in pools(world, "zone-b")
    shrunk = vdcs.update_vdc(make_context("ADMIN"), new_vdc, {"zones": ["zone-b"]})
    assert shrunk.zones == ["zone-b"]
    assert f"fp-{new_vdc}" not in pools(world, "zone-a")

    _, per_zone = proxmox_usage(world, "demo")
    with pytest.raises(
        Conflict, match=f"still has {per_zone['zone-b']} VM\\(s\\) in the zone\\(s\\) removed"
    ):
        vdcs.update_vdc(make_context("ADMIN"), "demo", {"zones": ["zone-a"]})
    assert vdcs.get_vdc(make_context("ADMIN"), "demo").zones == ["zone-a", "zone-b"]


def test_a_quota_update_may_name_only_what_changes(make_context: MakeContext, new_vdc: str) -> None:
    vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc))
    changed = vdcs.update_vdc(make_context("ADMIN"), new_vdc, {"quota": {"vms": 7}, "name": "Renamed"})
    assert changed.quota == Usage(vcpus=4, memory_mib=8192, disk_gb=100, vms=7, networks=10, public_ips=4)
    assert changed.name == "Renamed"
    assert vdcs.get_vdc(make_context("ADMIN"), new_vdc).quota.vms == 7


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"id": "Not A Slug"}, "id", "is not a lowercase slug"),
        ({"zones": ["zone-a", "atlantis"]}, "zones", "there is no zone 'atlantis'"),
        ({"compute_profiles": ["huge"]}, "compute_profiles", "there is no compute profile 'huge'"),
        ({"storage_profiles": ["fast"]}, "storage_profiles", "there is no storage profile 'fast'"),
        ({"images": ["beos-5"]}, "images", "there is no image 'beos-5'"),
        ({"quota": {"vcpus": -1, "memory_mib": 1, "disk_gb": 1, "vms": 1}}, "quota.vcpus", "between 0 and"),
        ({"quota": {"vcpus": 1, "memory_mib": 1, "disk_gb": 1}}, "quota.vms", "vms is required"),
        ({"quota": None}, "quota", "quota is required"),
        ({"name": "x" * 201}, "name", "longer than 200"),
        ({"colour": "blue"}, "colour", "there is no field"),
    ],
)
def test_each_bad_value_names_its_field(
    world: World, make_context: MakeContext, new_vdc: str, change: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ValidationFailed, match=words) as caught:
        vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc) | change)
    assert caught.value.field == field
    assert all(f"fp-{new_vdc}" not in pools(world, zone) for zone in ZONES)


def test_vdc_writes_need_admin(make_context: MakeContext, new_vdc: str) -> None:
    with pytest.raises(PermissionDenied):
        vdcs.create_vdc(make_context("USER", f"vdc:{new_vdc}"), vdc_input(new_vdc))
    with pytest.raises(PermissionDenied):
        vdcs.delete_vdc(make_context("USER", "vdc:demo"), "demo")


def test_a_vdc_id_is_created_once(make_context: MakeContext, new_vdc: str) -> None:
    vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc))
    with pytest.raises(Conflict, match="already exists"):
        vdcs.create_vdc(make_context("ADMIN"), vdc_input(new_vdc))
