"""Placement prefers hosts that have the VM's image cached (its template ready on the VM's storage, as the
zone's /cluster/resources lists it), and says which it was: a pure function, as the rest of placement."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from orchestrator.services.placement import NoCapacity
from tests.orchestrator.services.test_placement import cluster, guest, host, place, rejected, request
from tests.orchestrator.services.test_placement_zones import across

_vmids = itertools.count(9000)
IMAGE = "debian-12"


def template(
    on: str, *, image: str = IMAGE, storage: str = "local-lvm", ready: bool = True
) -> dict[str, Any]:
    """An image's template as the agent makes it: named fp-tpl-<image>, tagged with its image and storage;
    not yet a template while it is being imported."""
    return {
        "type": "qemu",
        "vmid": next(_vmids),
        "node": on,
        "name": f"fp-tpl-{image}",
        "tags": f"fp-image-{image};fp-storage-{storage};fp-template",
        "maxmem": 1024**3,
        "maxcpu": 1,
        "template": 1 if ready else 0,
    }


def test_a_host_with_the_image_cached_wins_over_a_freer_one_without_it_and_the_reasons_say_so() -> None:
    # b is far freer, but only a has the image: a create on b would wait for a download.
    resources = [*cluster("a", "b"), guest("a", mem_mib=8192), template("a")]
    placement = place(request(image=IMAGE), [host("a"), host("b")], resources)
    assert placement.host == "a"
    assert any(
        r.startswith("has image debian-12 cached: its template is ready on storage local-lvm")
        for r in placement.reasons
    )
    assert any(
        "most free capacity of the hosts that have image debian-12 cached" in r for r in placement.reasons
    )
    assert rejected(placement)["b"] == "fits, but would download image debian-12 first; a has it cached"


def test_among_hosts_with_the_image_cached_the_most_free_wins() -> None:
    resources = [*cluster("a", "b", "c"), guest("a", mem_mib=8192), template("a"), template("b")]
    placement = place(request(image=IMAGE), [host("a"), host("b"), host("c")], resources)
    assert placement.host == "b"
    assert "less free capacity" in rejected(placement)["a"]
    assert "would download image debian-12 first" in rejected(placement)["c"]


def test_with_no_host_holding_the_image_the_most_free_is_chosen_and_would_download_it_first() -> None:
    resources = [*cluster("a", "b"), guest("a", mem_mib=8192)]
    placement = place(request(image=IMAGE), [host("a"), host("b")], resources)
    assert placement.host == "b"
    assert (
        "would download image debian-12 first: no host that fits has its template on storage local-lvm yet"
        in placement.reasons
    )
    assert not any("cached" in r for r in placement.reasons)
    assert "less free capacity" in rejected(placement)["a"]


@pytest.mark.parametrize(
    "elsewhere",
    [
        template("a", ready=False),  # still being imported
        template("a", storage="ceph"),  # on another storage than the VM's disk
        template("a", image="ubuntu-24.04"),  # another image
    ],
    ids=["importing", "other-storage", "other-image"],
)
def test_only_a_ready_template_of_the_image_on_the_vms_storage_counts_as_cached(
    elsewhere: dict[str, Any],
) -> None:
    resources = [*cluster("a", "b"), guest("a", mem_mib=8192), elsewhere]
    placement = place(request(image=IMAGE), [host("a"), host("b")], resources)
    assert placement.host == "b"
    assert any(r.startswith("would download image debian-12 first") for r in placement.reasons)


def test_a_host_with_the_image_but_without_room_does_not_take_the_vm() -> None:
    resources = [*cluster("a", "b"), guest("a", mem_mib=15 * 1024), template("a")]
    placement = place(request(image=IMAGE), [host("a"), host("b")], resources)
    assert placement.host == "b"
    assert any(r.startswith("would download image debian-12 first") for r in placement.reasons)
    assert "not enough memory" in rejected(placement)["a"]


def test_a_host_with_the_image_that_is_cordoned_is_still_out_of_the_question() -> None:
    resources = [*cluster("a", "b"), template("a")]
    placement = place(request(image=IMAGE), [host("a", cordoned=True), host("b")], resources)
    assert placement.host == "b"


def test_without_an_image_the_cache_plays_no_part() -> None:
    resources = [*cluster("a", "b"), guest("a", mem_mib=8192), template("a")]
    placement = place(request(), [host("a"), host("b")], resources)
    assert placement.host == "b"
    assert not any("image" in r for r in placement.reasons)


def test_across_zones_a_zone_whose_best_host_has_the_image_wins_over_a_freer_one() -> None:
    zones = {
        "zone-a": [*cluster("pve1"), guest("pve1", mem_mib=8192), template("pve1")],
        "zone-b": [*cluster("pve1", "pve2")],
    }
    hosts = [host("pve1", zone="zone-a"), host("pve1", zone="zone-b"), host("pve2", zone="zone-b")]
    decided = across(zones, hosts, image=IMAGE)
    assert (decided.zone, decided.host) == ("zone-a", "pve1")
    assert decided.reasons[0].startswith(
        "zone zone-a, of the zones zone-a, zone-b: its best host has image debian-12 cached and keeps"
    )
    assert any(
        r.startswith("zone zone-b: its best host zone-b/pve1 fits, but would download image debian-12 first")
        for r in decided.reasons
    )
    assert any(r.startswith("has image debian-12 cached") for r in decided.reasons)


def test_across_zones_without_the_image_anywhere_the_freest_zone_wins() -> None:
    zones = {"zone-a": [*cluster("pve1"), guest("pve1", mem_mib=8192)], "zone-b": [*cluster("pve1")]}
    hosts = [host("pve1", zone="zone-a"), host("pve1", zone="zone-b")]
    decided = across(zones, hosts, image=IMAGE)
    assert decided.zone == "zone-b"
    assert decided.reasons[0].startswith("zone zone-b, of the zones zone-a, zone-b: its best host keeps")


def test_no_capacity_is_unchanged_by_the_cache() -> None:
    resources = [*cluster("a"), guest("a", mem_mib=16 * 1024), template("a")]
    with pytest.raises(NoCapacity, match="not enough memory"):
        place(request(image=IMAGE), [host("a")], resources)
