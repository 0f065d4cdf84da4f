"""Idempotency, quotas and concurrency of creates, checked in the fake Proxmox's own state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from devstack.world import World
from tests.apikit import GraphQL
from tests.vmkit import create, fake_vms, named, ok, scratch_vdcs, vm_names


@pytest.fixture
def vm_name(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    with vm_names(api, world) as name:
        yield name


@pytest.fixture
def vdc_factory(api: GraphQL, world: World) -> Iterator[Callable[..., str]]:
    with scratch_vdcs(api, world) as make:
        yield make


def vms_of(world: World, vdc: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The guests tagged with the VDC, in every zone of the fakes."""
    return {
        (zone, vmid): vm
        for zone in world.fakes.zones
        for vmid, vm in fake_vms(world, zone).items()
        if f"fp-vdc-{vdc}" in str(vm["config"].get("tags", "")).split(";")
    }


def created_twice(
    api: GraphQL, vdc: str, first: tuple[str, str], second: tuple[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two creates in ``vdc``, each (name, idempotency key), the second a retry of the first: both
    answers, the second's the first's VM with no task."""
    made = ok(create(api, "admin", vdc, name=first[0], idempotencyKey=first[1]))
    again = ok(create(api, "admin", vdc, name=second[0], idempotencyKey=second[1]))
    assert again["virtualMachine"]["id"] == made["virtualMachine"]["id"]
    assert again["task"] is None
    return made, again


def test_the_same_idempotency_key_twice_makes_one_vm(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory()
    # A retry after a lost answer, even under another name: the first VM, not a second one.
    first, again = created_twice(api, vdc, (vm_name("a"), "retry-me"), (vm_name("b"), "retry-me"))
    assert again["virtualMachine"]["name"] == vm_name("a")
    assert again["placement"] is None
    zone, vmid = first["virtualMachine"]["id"].split("/")
    assert list(vms_of(world, vdc)) == [(zone, int(vmid))]


def test_the_same_name_and_spec_twice_in_a_vdc_makes_one_vm(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory()
    # Another form (another key), the same request: a retry, the first VM.
    first, _ = created_twice(api, vdc, (vm_name("same"), "form-1"), (vm_name("same"), "form-2"))
    assert len(named(world, vm_name("same"))) == 1
    # Another VDC may use the name.
    elsewhere = ok(create(api, "admin", vdc_factory(), name=vm_name("same")))
    assert elsewhere["virtualMachine"]["id"] != first["virtualMachine"]["id"]
    assert len(named(world, vm_name("same"))) == 2


def test_the_same_name_with_another_spec_is_invalid_on_the_name_and_makes_nothing(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory()
    first = ok(create(api, "admin", vdc, name=vm_name("taken"), idempotencyKey="form-1"))
    refused = create(
        api, "admin", vdc, name=vm_name("taken"), computeProfile="medium", diskGb=30, idempotencyKey="form-2"
    )
    assert [(e["code"], e["field"]) for e in refused["errors"]] == [("INVALID", "name")]
    assert (
        f"already has a VM named '{vm_name('taken')}' ({first['virtualMachine']['id']})"
        in (refused["errors"][0]["message"])
    )
    assert refused["virtualMachine"] is None
    assert len(named(world, vm_name("taken"))) == 1
    # The first request's key, retried with whatever it holds, is still the first VM.
    retried = ok(
        create(api, "admin", vdc, name=vm_name("taken"), computeProfile="medium", idempotencyKey="form-1")
    )
    assert retried["virtualMachine"]["id"] == first["virtualMachine"]["id"]


def test_a_create_without_a_zone_in_a_vdc_of_two_zones_is_placed_in_one_and_says_why(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory(zones=("zone-a", "zone-b"))
    made = ok(create(api, "admin", vdc, name=vm_name("anywhere"), zone=None))
    vm, placement = made["virtualMachine"], made["placement"]
    assert vm["zone"] in ("zone-a", "zone-b")
    assert placement["zone"] == vm["zone"]
    assert placement["host"] == vm["host"]
    assert placement["reasons"][0].startswith(f"zone {vm['zone']}, of the zones zone-a, zone-b:")
    other = "zone-b" if vm["zone"] == "zone-a" else "zone-a"
    assert any(reason.startswith(f"zone {other}:") for reason in placement["reasons"]), placement["reasons"]
    assert named(world, vm_name("anywhere")) == [(vm["zone"], int(vm["id"].split("/")[1]))]
    # Asked again without a zone, it is the same request: the same VM.
    again = ok(create(api, "admin", vdc, name=vm_name("anywhere"), zone=None))
    assert again["virtualMachine"]["id"] == vm["id"]


def test_ten_identical_concurrent_creates_make_exactly_one_vm(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory()
    name = vm_name("once")
    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(
            pool.map(lambda _: create(api, "admin", vdc, name=name, idempotencyKey=name), range(10))
        )
    assert all(r["errors"] == [] for r in results), [r["errors"] for r in results]
    assert {r["virtualMachine"]["id"] for r in results} == {results[0]["virtualMachine"]["id"]}
    assert sum(1 for r in results if r["task"] is not None) == 1  # one made it, nine found it
    assert len(named(world, name)) == 1
    assert len(vms_of(world, vdc)) == 1


def test_twenty_parallel_creates_against_a_quota_of_ten_make_exactly_ten_vms(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory(vms=10)
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda n: create(api, "admin", vdc, name=vm_name(f"n{n}")), range(20)))
    codes = Counter(r["errors"][0]["code"] if r["errors"] else "CREATED" for r in results)
    assert codes == {"CREATED": 10, "QUOTA_EXCEEDED": 10}
    refusals = [r["errors"][0]["message"] for r in results if r["errors"]]
    assert all("VMs by 1 (10 used + 1 requested > 10 allowed)" in message for message in refusals), refusals
    made = vms_of(world, vdc)
    assert len(made) == 10
    assert {f"{zone}/{vmid}" for zone, vmid in made} == {
        r["virtualMachine"]["id"] for r in results if not r["errors"]
    }
    assert all(vm["status"] == "running" for vm in made.values())


def test_the_quota_counts_vcpus_and_memory_and_says_by_how_much(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory(vcpus=3, memoryMib=8192)
    ok(create(api, "admin", vdc, name=vm_name("one"), computeProfile="medium"))
    refused = create(api, "admin", vdc, name=vm_name("two"), computeProfile="medium")
    assert [e["code"] for e in refused["errors"]] == ["QUOTA_EXCEEDED"]
    assert "vCPUs by 1 (2 used + 2 requested > 3 allowed)" in refused["errors"][0]["message"]
    assert named(world, vm_name("two")) == []


def test_a_resize_beyond_the_quota_is_refused(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    vdc = vdc_factory(memoryMib=3072)
    vm = ok(create(api, "admin", vdc, name=vm_name("grow")))["virtualMachine"]
    ok(
        api(
            "mutation($id: ID!) { stopVirtualMachine(id: $id) { errors { code } } }",
            user="admin",
            variables={"id": vm["id"]},
        ).data["stopVirtualMachine"]
    )
    result = api(
        """mutation($input: ResizeVirtualMachineInput!) { resizeVirtualMachine(input: $input) {
             errors { code message } } }""",
        user="admin",
        variables={"input": {"id": vm["id"], "computeProfile": "medium"}},
    ).data["resizeVirtualMachine"]
    assert [e["code"] for e in result["errors"]] == ["QUOTA_EXCEEDED"]
    assert (
        "memory by 1024 MiB (1024 MiB used + 3072 MiB requested > 3072 MiB allowed)"
        in result["errors"][0]["message"]
    )
    assert str(fake_vms(world, "zone-a")[int(vm["id"].split("/")[1])]["config"]["cores"]) == "1"


def test_concurrent_creates_of_several_vdcs_in_one_zone_never_collide_on_vm_ids(
    api: GraphQL, world: World, vm_name: Callable[[str], str], vdc_factory: Callable[..., str]
) -> None:
    # Different VDCs do not wait for each other: they race for the zone's next free VMID.
    vdcs = [vdc_factory() for _ in range(6)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(
            pool.map(lambda n: create(api, "admin", vdcs[n % 6], name=vm_name(f"race{n}")), range(12))
        )
    assert all(r["errors"] == [] for r in results), [r["errors"] for r in results]
    ids = [r["virtualMachine"]["id"] for r in results]
    assert len(set(ids)) == 12
    for n, ident in enumerate(ids):
        assert named(world, vm_name(f"race{n}")) == [("zone-a", int(ident.split("/")[1]))]
