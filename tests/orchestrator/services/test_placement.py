"""Placement, as a pure function of the catalog's hosts and one zone's /cluster/resources."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from orchestrator.models import Host
from orchestrator.services import placement
from orchestrator.services.placement import NoCapacity, Placement, PlacementRequest
from orchestrator.sources.proxmox import ClusterResources

GIB = 1024**3
MIB = 1024**2
_vmids = itertools.count(100)


def host(node: str, *, zone: str = "z", cordoned: bool = False, mem: float = 1.0, cpu: float = 1.0) -> Host:
    return Host(
        key=f"{zone}/{node}",
        zone=zone,
        node=node,
        endpoint=f"{node}:7443",
        cordoned=cordoned,
        memory_overcommit=mem,
        cpu_overcommit=cpu,
    )


def node(name: str, *, status: str = "online", mem_gib: int = 16, cpus: int = 8) -> dict[str, Any]:
    return {"type": "node", "node": name, "status": status, "maxmem": mem_gib * GIB, "maxcpu": cpus}


def storage(
    name: str, *, on: str, status: str = "available", total_gib: int = 500, used_gib: int = 0
) -> dict[str, Any]:
    return {
        "type": "storage",
        "node": on,
        "storage": name,
        "status": status,
        "maxdisk": total_gib * GIB,
        "disk": used_gib * GIB,
    }


def guest(
    on: str, *, mem_mib: int = 1024, cpus: int = 1, vdc: str | None = None, template: bool = False
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "qemu",
        "vmid": next(_vmids),
        "node": on,
        "maxmem": mem_mib * MIB,
        "maxcpu": cpus,
        "template": 1 if template else 0,
    }
    if vdc:
        item["tags"] = f"fp-vdc-{vdc};fp-cp-small"
    return item


def cluster(*names: str, **kwargs: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in names:
        out += [node(name, **kwargs), storage("local-lvm", on=name), storage("local", on=name)]
    return out


def place(request: PlacementRequest, hosts: list[Host], resources: list[dict[str, Any]]) -> Placement:
    """Placement fed ``/cluster/resources`` as Proxmox answers it (through the source's parsing)."""
    return placement.place(request, hosts, ClusterResources.parse(resources))


def request(**kwargs: Any) -> PlacementRequest:
    values: dict[str, Any] = {
        "zone": "z",
        "vdc": "demo",
        "vcpus": 2,
        "memory_mib": 2048,
        "disk_gb": 20,
        "storage": "local-lvm",
    }
    values.update(kwargs)
    return PlacementRequest(**values)


def rejected(placement: Any) -> dict[str, str]:
    return {r.host: r.reason for r in placement.rejected}


def test_it_picks_the_host_with_the_most_free_capacity() -> None:
    resources = [*cluster("a", "b", "c"), guest("a", mem_mib=8192), guest("c", mem_mib=4096)]
    placement = place(request(), [host("a"), host("b"), host("c")], resources)
    assert placement.host == "b"
    assert placement.zone == "z"
    assert any("most free capacity" in reason for reason in placement.reasons)
    assert set(rejected(placement)) == {"a", "c"}
    assert "less free capacity" in rejected(placement)["a"]


def test_equally_free_hosts_are_told_apart_by_the_fewest_vms_of_the_vdc() -> None:
    resources = [
        *cluster("a", "b"),
        guest("a", mem_mib=1024, vdc="demo"),
        guest("b", mem_mib=1024, vdc="other"),
    ]
    placement = place(request(vdc="demo"), [host("a"), host("b")], resources)
    assert placement.host == "b"
    assert "fewest VMs of VDC demo" in placement.reasons[-1]
    assert "has 1 VM of VDC demo" in rejected(placement)["a"]
    # The same hosts, the other VDC: it goes where it has none.
    assert place(request(vdc="other"), [host("a"), host("b")], resources).host == "a"


def test_spread_does_not_override_a_clearly_freer_host() -> None:
    resources = [*cluster("a", "b"), guest("a", vdc="demo"), guest("b", mem_mib=8192)]
    assert place(request(vdc="demo"), [host("a"), host("b")], resources).host == "a"


def test_offline_cordoned_and_storage_less_hosts_are_rejected_with_their_reason() -> None:
    resources = [
        node("down", status="offline"),
        *cluster("cordoned", "ok"),
        node("nostore"),
        storage("local", on="nostore"),
        node("inactive"),
        storage("local-lvm", on="inactive", status="unknown"),
    ]
    hosts = [host("down"), host("cordoned", cordoned=True), host("nostore"), host("inactive"), host("ok")]
    placement = place(request(), hosts, resources)
    assert placement.host == "ok"
    reasons = rejected(placement)
    assert reasons["down"] == "the node is offline"
    assert "cordoned" in reasons["cordoned"]
    assert "storage local-lvm is not configured" in reasons["nostore"]
    assert "storage local-lvm is unknown" in reasons["inactive"]


def test_hosts_of_other_zones_and_unknown_nodes_are_not_candidates() -> None:
    resources = cluster("a")
    placement = place(request(), [host("a"), host("b"), host("a", zone="elsewhere")], resources)
    assert placement.host == "a"
    assert rejected(placement) == {"b": "Proxmox does not report this node in the zone's cluster"}


def test_memory_counts_every_guest_times_the_overcommit_but_not_templates() -> None:
    # 16 GiB, 15 GiB allocated: 1 GiB free, not enough for 2 GiB ...
    full = [*cluster("a"), guest("a", mem_mib=15 * 1024), guest("a", mem_mib=64 * 1024, template=True)]
    with pytest.raises(NoCapacity) as refused:
        place(request(), [host("a")], full)
    assert "not enough memory: needs 2048 MiB, 1024 MiB free" in refused.value.message
    # ... unless the host may overcommit its memory by half again.
    assert place(request(), [host("a", mem=1.5)], full).host == "a"


def test_a_volumes_holder_counts_no_memory_nor_vcpus_it_never_runs() -> None:
    # 16 GiB, 13 GiB allocated to a VM: 3 GiB free for 2 GiB, however many volumes' holders are there.
    holders = [{**guest("a", mem_mib=4096, cpus=4), "name": f"data-{n}.volume"} for n in range(4)]
    assert place(request(), [host("a")], [*cluster("a"), guest("a", mem_mib=13 * 1024), *holders]).host == "a"


def test_vcpus_are_counted_with_the_cpu_overcommit() -> None:
    busy = [*cluster("a", cpus=4), guest("a", cpus=3)]
    with pytest.raises(NoCapacity) as refused:
        place(request(vcpus=2), [host("a", cpu=1.0)], busy)
    assert "not enough vCPUs: needs 2, 1 free" in refused.value.message
    assert place(request(vcpus=2), [host("a", cpu=2.0)], busy).host == "a"


def test_disk_must_fit_in_the_storage_free_space() -> None:
    resources = [node("a"), storage("local-lvm", on="a", total_gib=100, used_gib=90)]
    with pytest.raises(NoCapacity) as refused:
        place(request(disk_gb=20), [host("a")], resources)
    assert "not enough disk on storage local-lvm: needs 20 GiB, 10 GiB free" in refused.value.message


def test_no_capacity_names_every_host_and_what_it_lacked() -> None:
    resources = [*cluster("a", "b"), guest("a", mem_mib=16 * 1024)]
    with pytest.raises(NoCapacity) as refused:
        place(request(), [host("a"), host("b", cordoned=True)], resources)
    error = refused.value
    assert error.code == "NO_CAPACITY"
    assert error.placement.host is None
    assert {r.host for r in error.placement.rejected} == {"a", "b"}
    assert error.message.startswith("no host in zone z has room for 2 vCPUs, 2048 MiB of memory")
    assert "a: not enough memory" in error.message
    assert "b: the host is cordoned" in error.message


def test_a_zone_without_hosts_has_no_capacity() -> None:
    with pytest.raises(NoCapacity, match="zone z has no hosts"):
        place(request(), [], [])


def test_the_choice_is_deterministic_between_identical_hosts() -> None:
    resources = cluster("c", "a", "b")
    assert place(request(), [host("c"), host("b"), host("a")], resources).host == "a"
