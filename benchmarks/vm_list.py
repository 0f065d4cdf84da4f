"""How much the whole stack costs over Proxmox itself when listing VMs.

Brings up 4 fake zones of 4 nodes with 4,000 VMs (the devstack's world: agents over mTLS,
the Kubernetes emulator, identity, the orchestrator under uvicorn) and measures, in one run
and interleaved so that a noisy machine weighs on both alike:

- baseline: the 4 zones' ``/cluster/resources`` called directly, in parallel, over HTTPS;
- stack:    GraphQL ``virtualMachines(first: 100)`` through the orchestrator.

It prints p50 and p99 of both, their ratio, and the orchestrator's peak memory.
Targets: p50 ratio <= 1.10, p99 ratio <= 1.5.

    .venv/bin/python -m benchmarks.vm_list [--vms 4000] [--rounds 60]
"""

from __future__ import annotations

import os
import statistics
import sys

import requests

from benchmarks.kit import (
    DirectReads,
    arguments,
    bench_world,
    interleaved,
    p50_p99,
    peak_rss_mib,
    seed_vms,
    verdict,
)
from devstack.world import World

ZONES = ("zone-1", "zone-2", "zone-3", "zone-4")
NODES = 4
QUERY = "{ virtualMachines(first: 100) { edges { node { id name status zone host vdc cores memoryMb } } } }"
TARGET = 1.10
P99_TARGET = 1.5


def seed(world: World, count: int) -> None:
    """``count`` VMs spread over every zone and node, in three VDCs."""
    seed_vms(world, count // len(ZONES), nodes=NODES, vdcs=("demo", "other", "bench"))


class Probes:
    """The two ways of listing: Proxmox's own answers (baseline) and the stack's (GraphQL)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"Bearer {world.token('admin')}"
        self.baseline = DirectReads(world, "/cluster/resources")

    def stack(self) -> int:
        response = self.api.post(f"{self.world.url}/graphql", json={"query": QUERY}, timeout=30)
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise RuntimeError(f"the stack answered {response.status_code}: {body}")
        return len(body["data"]["virtualMachines"]["edges"])

    def warm(self, vms: int) -> None:
        assert self.baseline() >= vms, "the fakes do not hold the VMs"
        assert self.stack() == 100
        for _ in range(5):  # warm both paths: connections, JWKS, imports
            self.baseline()
            self.stack()

    def close(self) -> None:
        self.baseline.close()


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, rounds=60, subnet=40)
    parser.add_argument("--vms", type=int, default=4000)
    args = parser.parse_args(argv)

    with bench_world(args.subnet, ZONES, NODES) as world:
        seed(world, args.vms)
        probes = Probes(world)
        probes.warm(args.vms)
        times = interleaved(args.rounds, {"baseline": probes.baseline, "stack": probes.stack})
        assert world.orchestrator is not None
        peak = peak_rss_mib(world.orchestrator.popen.pid)
        probes.close()

    b50, b99 = p50_p99(times["baseline"])
    s50, s99 = p50_p99(times["stack"])
    print(
        f"vm_list: {args.vms} VMs in {len(ZONES)} zones x {NODES} nodes, {args.rounds} rounds, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    print(f"  baseline /cluster/resources x{len(ZONES)} in parallel: p50 {b50:7.1f} ms  p99 {b99:7.1f} ms")
    print(f"  stack    virtualMachines(first: 100):              p50 {s50:7.1f} ms  p99 {s99:7.1f} ms")
    print(
        f"  ratio    p50 {s50 / b50:.2f}  p99 {s99 / b99:.2f}   "
        f"(targets p50 <= {TARGET}, p99 <= {P99_TARGET})"
    )
    print(f"  orchestrator peak RSS {peak:.0f} MiB  (mean stack {statistics.fmean(times['stack']):.1f} ms)")
    return 0 if verdict(s50 / b50 <= TARGET and s99 / b99 <= P99_TARGET) else 1


if __name__ == "__main__":
    sys.exit(main())
