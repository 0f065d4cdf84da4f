"""A hostile tenant racing creates past the VDC's quota: 20 at once, each of which fits alone, together
over one quota in turn (disk, vCPUs, memory), sent to several orchestrator replicas (one process answers
its requests one at a time; replicas share only the VDC's lock). The quota holds in every resource, not
only the count of VMs: a clone is counted at the size its create asked for from the moment it is tagged,
although it has its template's size until it is configured and grown, outside the VDC's lock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from devstack.net import free_port
from devstack.processes import Process, stop_all
from devstack.world import World
from orchestrator.models import Usage
from orchestrator.models.vms import request_tag
from orchestrator.sources.qemu_config import parse_config
from tests.apikit import GraphQL
from tests.vmkit import MEDIUM, SMALL, create, fake_vms, put_tagged_vm, scratch_vdcs, vm_names

pytestmark = pytest.mark.promise("quota")

CREATES = 20
REPLICAS = 4
GIB = 1024**3
# About 48 KB of user data: its snippet, written through the host's agent after the VDC's lock is released,
# holds the clone at its template's size for longer (how the race was first won).
USER_DATA = "#cloud-config\n" + "".join(f"# padding line {n:05d} {'x' * 80}\n" for n in range(500))


@pytest.fixture
def vm_name(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    with vm_names(api, world) as name:
        yield name


@pytest.fixture(scope="module")
def replicas(world: World) -> Iterator[list[GraphQL]]:
    """The world's orchestrator and more replicas beside it, each with its own GraphQL client."""
    host = world.cfg.orchestrator_host
    ports = [free_port(host) for _ in range(1, REPLICAS)]
    processes: list[Process] = []
    try:
        for n, port in enumerate(ports, start=1):
            name = f"orchestrator-replica-{n}"
            processes.append(world.spawn_orchestrator(name, port, free_port(host), wait=False))
        for process, port in zip(processes, ports, strict=True):
            world.wait_orchestrator(process, port)
        clients = [GraphQL(world)]
        for port in ports:
            client = GraphQL(world)
            client.url = f"http://{host}:{port}/graphql"
            clients.append(client)
        yield clients
    finally:
        stop_all(processes)


@pytest.fixture
def vdc_factory(api: GraphQL, world: World) -> Iterator[Callable[..., str]]:
    with scratch_vdcs(api, world) as make:
        yield make


def live_usage(world: World, vdc: str) -> Usage:
    """What the VDC's VMs have in the fake Proxmox now: their configured vCPUs, memory and boot disk."""
    total = Usage()
    for zone in world.fakes.zones:
        for vm in fake_vms(world, zone).values():
            if f"fp-vdc-{vdc}" not in str(vm["config"].get("tags", "")).split(";"):
                continue
            config = parse_config(vm["config"])
            disk = config.boot_disk
            total = total + Usage(
                vcpus=int(vm["config"].get("cores", 1)),
                memory_mib=int(vm["config"].get("memory", 512)),
                disk_gb=-(-(disk.size if disk else 0) // GIB),
                vms=1,
            )
    return total


PROFILES = {SMALL: (1, 1024), MEDIUM: (2, 4096)}


def add_in_flight(world: World, vdc: str, name: str, profile: str, disk_gb: int) -> int:
    """A VM of the VDC as a create leaves it when it releases the VDC's lock: tagged (with the size it asked
    for), still its template's size (1 vCPU, 512 MiB, a 1 GiB disk) until it is configured and grown."""
    pve = world.fakes["zone-a"].pve
    vcpus, memory = PROFILES[profile]

    def add() -> int:
        vmid = max([vm.vmid for vm in pve.vms] + [6000]) + 1
        tags = f";{request_tag(vcpus, memory, disk_gb)}"
        put_tagged_vm(pve, vmid, name, vdc, status="stopped", tags=tags, disk="1G")
        return vmid

    vmid: int = world.fakes.on_loop(add)
    return vmid


def finish(world: World, vmid: int, profile: str, disk_gb: int) -> None:
    """The in-flight VM configured and grown, as its create goes on to do."""
    pve = world.fakes["zone-a"].pve
    vcpus, memory = PROFILES[profile]
    world.fakes.on_loop(
        lambda: pve.vm(vmid).config.update(
            cores=vcpus, memory=memory, scsi0=f"local-lvm:vm-{vmid}-disk-0,size={disk_gb}G"
        )
    )


# (the quota's resource, the VDC's quota, the profile and disk of each create, how many fit beside the
# create in flight, what the refusals name)
RACES = [
    ("disk", {"diskGb": 55}, SMALL, 10, 4, "disk by"),
    ("vcpus", {"vcpus": 5}, MEDIUM, 10, 1, "vCPUs by"),
    ("memory", {"memoryMib": 4608}, SMALL, 10, 3, "memory by"),
]


@pytest.mark.parametrize(
    ("resource", "quota", "profile", "disk_gb", "fit", "named"), RACES, ids=[r[0] for r in RACES]
)
def test_twenty_concurrent_creates_that_each_fit_never_take_the_vdc_over_its_quota(
    replicas: list[GraphQL],
    world: World,
    vm_name: Callable[[str], str],
    vdc_factory: Callable[..., str],
    resource: str,
    quota: dict[str, int],
    profile: str,
    disk_gb: int,
    fit: int,
    named: str,
) -> None:
    vdc = vdc_factory(**quota)
    # One create is already past the lock, its clone tagged but not yet configured: the 20 must count it
    # at the size it asked for, not at the size it has for now.
    in_flight = add_in_flight(world, vdc, vm_name("in-flight"), profile, disk_gb)
    # Requests to the zone's nodes take 0.3 s (as to a busy host), /cluster/resources does not: what each
    # create does after the lock (write the user data, configure, grow) overlaps the next one's check.
    fake = world.fakes["zone-a"]
    slow = dict.fromkeys(fake.node_addresses, 0.3)
    world.fakes.on_loop(lambda: fake.pve.network.update(node_latency=slow))

    def one(n: int) -> dict[str, Any]:
        return create(
            replicas[n % len(replicas)],  # several replicas: one orchestrator answers one request at a time
            "admin",
            vdc,
            name=vm_name(f"{resource}{n}"),
            computeProfile=profile,
            diskGb=disk_gb,
            userData=USER_DATA,
        )

    with ThreadPoolExecutor(max_workers=CREATES) as pool:
        results = list(pool.map(one, range(CREATES)))
    finish(world, in_flight, profile, disk_gb)

    codes = Counter(str(r["errors"][0]["code"]) if r["errors"] else "CREATED" for r in results)
    assert codes == {"CREATED": fit, "QUOTA_EXCEEDED": CREATES - fit}, [r["errors"] for r in results]
    refusals = [str(r["errors"][0]["message"]) for r in results if r["errors"]]
    assert all(named in message for message in refusals), refusals
    used = live_usage(world, vdc)
    limits = {"vcpus": 64, "memoryMib": 65536, "diskGb": 2000, **quota}
    assert used.vcpus <= limits["vcpus"], used
    assert used.memory_mib <= limits["memoryMib"], used
    assert used.disk_gb <= limits["diskGb"], used
    assert used.vms == fit + 1
