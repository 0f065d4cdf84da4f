"""Placement across zones, for a create that names none: a pure function of the catalog's hosts and each
zone's /cluster/resources."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.services import placement
from orchestrator.services.placement import NoCapacity, Placement, PlacementRequest
from orchestrator.sources.proxmox import ClusterResources
from tests.orchestrator.services.test_placement import cluster, guest, host, request


def across(
    zones: dict[str, list[dict[str, Any]]],
    hosts: list[Any],
    *,
    asked: tuple[str, ...] = (),
    unanswered: dict[str, str] | None = None,
    **kwargs: Any,
) -> Placement:
    """Placement across ``asked`` (default: the zones given), fed each zone's resources as Proxmox answers."""
    requests: dict[str, PlacementRequest] = {
        zone: request(zone=zone, **kwargs) for zone in (asked or tuple(zones))
    }
    resources = {zone: ClusterResources.parse(items) for zone, items in zones.items()}
    return placement.place_in_zones(requests, hosts, resources, unanswered)


def test_with_no_zone_named_the_zone_whose_best_host_is_most_free_wins_and_says_why() -> None:
    zones = {
        "zone-a": [*cluster("pve1"), guest("pve1", mem_mib=8192)],
        "zone-b": [*cluster("pve1", "pve2"), guest("pve1", mem_mib=2048)],
    }
    hosts = [host("pve1", zone="zone-a"), host("pve1", zone="zone-b"), host("pve2", zone="zone-b")]
    decided = across(zones, hosts)
    assert (decided.zone, decided.host) == ("zone-b", "pve2")
    assert decided.reasons[0].startswith("zone zone-b, of the zones zone-a, zone-b: its best host keeps")
    assert any(
        r.startswith("zone zone-a: its best host zone-a/pve1 fits, but less free capacity")
        for r in decided.reasons
    )
    # The host's own reasons follow the zone's.
    assert any("room for 2 vCPUs" in r for r in decided.reasons)
    rejected = {r.host: r.reason for r in decided.rejected}
    assert rejected["zone-a/pve1"] == "fits, but its zone was not chosen"
    assert "less free capacity" in rejected["pve1"]  # the chosen zone's own host


def test_equally_free_zones_are_told_apart_by_the_fewest_vms_of_the_vdc() -> None:
    zones = {
        "zone-a": [*cluster("pve1", cpus=64), guest("pve1", mem_mib=256, vdc="demo")],
        "zone-b": [*cluster("pve1", cpus=64), guest("pve1", mem_mib=512, vdc="other")],
    }
    hosts = [host("pve1", zone="zone-a"), host("pve1", zone="zone-b")]
    decided = across(zones, hosts, vdc="demo")
    assert decided.zone == "zone-b"
    assert any("fewest VMs of VDC demo" in r for r in decided.reasons)
    # With the VDC's VM in zone-b instead, zone-a.
    zones["zone-a"].pop()
    zones["zone-b"].append(guest("pve1", mem_mib=256, vdc="demo"))
    assert across(zones, hosts, vdc="demo").zone == "zone-a"


def test_a_zone_that_does_not_answer_is_skipped_and_named_in_the_reasons() -> None:
    zones = {"zone-a": cluster("pve1")}
    hosts = [host("pve1", zone="zone-a"), host("pve1", zone="zone-b")]
    decided = across(
        zones, hosts, asked=("zone-a", "zone-b"), unanswered={"zone-b": "it did not answer (timed out)"}
    )
    assert (decided.zone, decided.host) == ("zone-a", "pve1")
    assert "zone zone-b was skipped: it did not answer (timed out)" in decided.reasons
    # Without a word on why, it is still named.
    assert (
        "zone zone-b was skipped: it did not answer"
        in across(zones, hosts, asked=("zone-a", "zone-b")).reasons
    )


def test_a_full_zone_is_passed_over_for_one_with_room() -> None:
    zones = {"zone-a": [*cluster("pve1"), guest("pve1", mem_mib=16 * 1024)], "zone-b": cluster("pve1")}
    hosts = [host("pve1", zone="zone-a"), host("pve1", zone="zone-b")]
    decided = across(zones, hosts)
    assert decided.zone == "zone-b"
    assert "zone zone-a: no host has room" in decided.reasons
    assert "not enough memory" in {r.host: r.reason for r in decided.rejected}["zone-a/pve1"]


def test_no_zone_with_room_is_no_capacity_naming_every_zones_hosts_and_the_skipped_ones() -> None:
    zones = {"zone-a": [*cluster("pve1"), guest("pve1", mem_mib=16 * 1024)]}
    hosts = [host("pve1", zone="zone-a"), host("pve1", zone="zone-b", cordoned=True)]
    with pytest.raises(NoCapacity) as refused:
        across(zones, hosts, asked=("zone-a", "zone-b"))
    error = refused.value
    assert error.placement.host is None
    assert error.message.startswith("no zone of zone-a, zone-b has a host with room")
    assert "no host in zone zone-a has room" in error.message
    assert "zone zone-b was skipped" in error.message
    assert {r.host for r in error.placement.rejected} == {"zone-a/pve1"}


def test_one_zone_is_placed_exactly_as_a_named_zone_is() -> None:
    zones = {"zone-a": [*cluster("a", "b"), guest("a", mem_mib=4096)]}
    hosts = [host("a", zone="zone-a"), host("b", zone="zone-a")]
    one = across(zones, hosts)
    assert one == placement.place(request(zone="zone-a"), hosts, ClusterResources.parse(zones["zone-a"]))
