"""The host services' own logic against an in-memory zone (tests/orchestrator/fakezone.py): where a
drain moves a VM, and what the admin sees of a node. The drain itself runs against the world in
test_hosts.py."""

from __future__ import annotations

import pytest

from orchestrator.models import Host
from orchestrator.services.hosts.details import HostUsage
from orchestrator.services.hosts.drain import _Unmovable, target_of
from orchestrator.services.hosts.records import DrainVm
from orchestrator.sources.proxmox import LocalDisk, MigrationCheck, NodeResource
from tests.orchestrator.fakezone import GIB, FakeZone, guest, storage


def host(node: str, *, cordoned: bool = False) -> Host:
    return Host(key=f"zone-a/{node}", zone="zone-a", node=node, endpoint=f"{node}:7443", cordoned=cordoned)


HOSTS = [host("pve1"), host("pve2"), host("pve3")]


def zone() -> FakeZone:
    fake = FakeZone(nodes=("pve1", "pve2", "pve3"))
    fake.add(guest(100, "pve1", cpus=2, memory=4 * GIB), {"scsi0": "local-lvm:vm-100-disk-0,size=20G"})
    return fake


def target(
    fake: FakeZone, check: MigrationCheck | None = None, hosts: list[Host] = HOSTS
) -> tuple[str, bool]:
    vm = fake.guests[100]
    return target_of(
        hosts, fake, "pve1", DrainVm(100, vm.name, "demo"), vm, check or MigrationCheck(), fake.resources()
    )


def test_a_drain_moves_a_vm_to_another_host_of_its_zone_that_placement_picks() -> None:
    fake = zone()
    fake.add(guest(101, "pve2", cpus=6, memory=24 * GIB))  # pve2 is the fuller one
    assert target(fake) == ("pve3", False)


def test_local_disks_go_with_the_vm_and_count_on_their_storage() -> None:
    fake = zone()
    check = MigrationCheck(local_disks=(LocalDisk("local-lvm:vm-100-disk-0", 20 * GIB, cdrom=False),))
    assert target(fake, check)[1] is True


def test_a_vm_with_local_devices_cannot_move() -> None:
    with pytest.raises(_Unmovable, match="local devices of the host"):
        target(zone(), MigrationCheck(local_resources=("hostpci0",)))


def test_hosts_proxmox_refuses_are_left_out_with_its_reasons() -> None:
    check = MigrationCheck(
        allowed_nodes=frozenset({"pve3"}), refused={"pve2": "unavailable storage: local-lvm"}
    )
    with pytest.raises(_Unmovable) as refused:
        target(zone(), check, hosts=[host("pve1"), host("pve2")])
    assert "pve2: Proxmox refuses it (unavailable storage: local-lvm)" in refused.value.reason


def test_a_vm_goes_nowhere_when_the_storage_of_its_disks_is_missing_elsewhere() -> None:
    fake = zone()
    fake.storages = [storage("pve1")]
    with pytest.raises(_Unmovable, match="storage local-lvm is not configured"):
        target(fake)


def test_a_vm_without_a_disk_on_a_storage_cannot_be_placed() -> None:
    fake = zone()
    fake.configs[100] = {"ide2": "none,media=cdrom"}
    with pytest.raises(_Unmovable, match="no disk on a Proxmox storage"):
        target(fake)


def test_a_nodes_usage_is_what_proxmox_reports_of_it() -> None:
    node = NodeResource(node="pve1", status="online", cpu=0.25, maxcpu=8, mem=GIB, maxmem=8 * GIB)
    usage = HostUsage.from_node(node)
    assert (usage.cpu_fraction, usage.cpu_cores, usage.memory_used, usage.memory_total) == (
        0.25,
        8,
        GIB,
        8 * GIB,
    )
    assert usage.storage_used is None
