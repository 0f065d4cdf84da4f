"""What a VDC's listing costs as the fleet grows: a tenant's page should cost what the tenant has.

For each fleet size (4,000 and 40,000 VMs by default, in 4 fake zones of 4 nodes), with one VDC of
200 of them (``bench``, 50 per zone) and the rest in another, brings up the devstack's world (agents
over mTLS, the Kubernetes emulator, identity, the orchestrator under uvicorn) and measures, in one run
and interleaved so that a noisy machine weighs on all alike:

- pools: the VDC's pool read directly (``GET /pools/fp-bench?type=qemu``), the 4 zones in parallel;
- vdc:   GraphQL ``virtualMachines(first: 100)`` naming the VDC, through the orchestrator;
- fleet: the same listing fleet-wide (ADMIN without a VDC: ``/cluster/resources`` of every zone).

Before the interleaved rounds, the VDC listing alone runs ``--rounds`` times and the orchestrator's
peak memory is taken: what the VDC listing needs, whatever the fleet. Then the peak after the fleet
listings. Targets: the VDC listing's p50 at most 10 ms over the direct pool reads' (what the whole stack
adds: the HTTP server, the middleware, the catalog read, the agent hop, GraphQL), and at most 1/10 of the
fleet listing's; its memory independent of the fleet size.

    .venv/bin/python -m benchmarks.vdc_list [--fleets 4000,40000] [--vdc 200] [--rounds 40]
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import requests

from benchmarks.kit import (
    DirectReads,
    arguments,
    bench_world,
    interleaved,
    p50s_p99s,
    peak_rss_mib,
    seed_vms,
    verdict,
)
from benchmarks.vm_list import NODES, QUERY, ZONES  # the VM listing's layout and query
from devstack.world import World

VDC = "bench"
TARGET_OVER_POOLS_MS = 10.0
TARGET_OF_FLEET = 0.1


@dataclass(frozen=True)
class Figures:
    fleet_size: int
    p50: dict[str, float]
    p99: dict[str, float]
    vdc_rss: float  # MiB, after the VDC listings alone
    peak_rss: float  # MiB, after the fleet listings too


CREATE_VDC = "mutation($input: VdcInput!) { createVdc(input: $input) { errors { message } } }"


def seed(world: World, fleet: int, vdc_size: int) -> None:
    """VDC ``bench`` in every zone (with its pools), and ``fleet`` VMs over every zone and node:
    ``vdc_size`` of them in ``bench``, evenly spread (one in every ``fleet // vdc_size``), the others
    in VDC ``other``."""
    vdc = {
        "id": VDC,
        "zones": list(ZONES),
        "computeProfiles": ["small"],
        "storageProfiles": ["standard"],
        "images": ["debian-12"],
        "quota": {"vcpus": 100_000, "memoryMib": 100_000_000, "diskGb": 10_000_000, "vms": 100_000},
    }
    answer = requests.post(
        f"{world.url}/graphql",
        json={"query": CREATE_VDC, "variables": {"input": vdc}},
        headers={"Authorization": f"Bearer {world.token('admin')}"},
        timeout=60,
    ).json()
    if answer.get("errors") or answer["data"]["createVdc"]["errors"]:
        raise RuntimeError(f"VDC {VDC} was not made: {answer}")
    every = fleet // vdc_size
    seed_vms(world, fleet // len(ZONES), nodes=NODES, vdcs=(VDC,) + ("other",) * (every - 1))


class Probes:
    """The three ways of listing: the VDC's pools read directly; the stack's, for the VDC and fleet-wide."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"Bearer {world.token('admin')}"
        self.pools = DirectReads(world, f"/pools/fp-{VDC}?type=qemu", lambda data: len(data["members"]))

    def _listing(self, vdc: str | None) -> int:
        headers = {"FlexPlane-VDC-ID": vdc} if vdc else {}
        response = self.api.post(
            f"{self.world.url}/graphql", json={"query": QUERY}, headers=headers, timeout=60
        )
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise RuntimeError(f"the stack answered {response.status_code}: {body}")
        return len(body["data"]["virtualMachines"]["edges"])

    def vdc(self) -> int:
        return self._listing(VDC)

    def fleet(self) -> int:
        return self._listing(None)

    def close(self) -> None:
        self.pools.close()


def measure(subnet: int, fleet: int, vdc_size: int, rounds: int) -> Figures:
    with bench_world(subnet, ZONES, NODES) as world:
        seed(world, fleet, vdc_size)
        probes = Probes(world)
        assert probes.pools() == vdc_size, "the fakes' pools do not hold the VDC's VMs"
        assert probes.vdc() == 100
        assert world.orchestrator is not None
        pid = world.orchestrator.popen.pid
        for _ in range(rounds):  # the VDC listing alone, before any fleet listing: its memory
            probes.vdc()
        vdc_rss = peak_rss_mib(pid)
        assert probes.fleet() == 100
        times = interleaved(rounds, {"pools": probes.pools, "vdc": probes.vdc, "fleet": probes.fleet})
        peak = peak_rss_mib(pid)
        probes.close()
    return Figures(
        fleet,
        *p50s_p99s(times),
        vdc_rss,
        peak,
    )


def report(figures: list[Figures], vdc_size: int, rounds: int) -> bool:
    print(
        f"vdc_list: a VDC of {vdc_size} VMs in {len(ZONES)} zones x {NODES} nodes, {rounds} rounds, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    met = True
    for f in figures:
        over_pools = f.p50["vdc"] - f.p50["pools"]
        of_fleet = f.p50["vdc"] / f.p50["fleet"]
        met = met and over_pools <= TARGET_OVER_POOLS_MS and of_fleet <= TARGET_OF_FLEET
        print(f"  fleet of {f.fleet_size} VMs:")
        labels = {
            "pools": f"GET /pools/fp-{VDC} x{len(ZONES)} direct:",
            "vdc": "virtualMachines(first: 100), VDC:",
            "fleet": "virtualMachines(first: 100), all:",
        }
        for name, label in labels.items():
            print(f"    {name:6} {label:36} p50 {f.p50[name]:7.1f} ms  p99 {f.p99[name]:7.1f} ms")
        print(
            f"    vdc - pools p50 {over_pools:.1f} ms (target <= {TARGET_OVER_POOLS_MS:g}); "
            f"vdc / fleet p50 {of_fleet:.3f} (target <= {TARGET_OF_FLEET})"
        )
        print(
            f"    orchestrator RSS {f.vdc_rss:.0f} MiB after the VDC listings, {f.peak_rss:.0f} MiB after all"
        )
    if len(figures) > 1:
        first, last = figures[0], figures[-1]
        print(
            f"  from {first.fleet_size} to {last.fleet_size} VMs ({last.fleet_size / first.fleet_size:.0f}x):"
        )
        for name in ("pools", "vdc", "fleet"):
            print(f"    {name:6} p50 x{last.p50[name] / first.p50[name]:.2f}")
        print(f"    VDC listing RSS {first.vdc_rss:.0f} -> {last.vdc_rss:.0f} MiB")
    return verdict(met)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, rounds=40, subnet=41)
    parser.add_argument("--fleets", default="4000,40000", help="fleet sizes, comma-separated")
    parser.add_argument("--vdc", type=int, default=200, help="VMs in the VDC (a multiple of 4)")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.fleets.split(",")]
    figures = [measure(args.subnet, size, args.vdc, args.rounds) for size in sizes]
    return 0 if report(figures, args.vdc, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
