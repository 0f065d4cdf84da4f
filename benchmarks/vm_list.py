"""How much the whole stack costs over Proxmox itself when listing VMs.

Brings up 4 fake zones of 4 nodes with 4,000 VMs (the devstack's world: agents over mTLS,
the Kubernetes emulator, identity, the orchestrator under daphne) and measures, in one run
and interleaved so that a noisy machine weighs on both alike:

- baseline: the 4 zones' ``/cluster/resources`` called directly, in parallel, over HTTPS;
- stack:    GraphQL ``virtualMachines(first: 100)`` through the orchestrator.

It prints p50 and p99 of both, their ratio, and the orchestrator's peak memory.
Target: p50 ratio <= 1.3.

    .venv/bin/python -m benchmarks.vm_list [--vms 4000] [--rounds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import requests

from devstack.fakezones import TOKEN_ID
from devstack.net import free_port
from devstack.world import World, WorldConfig

ZONES = ("zone-1", "zone-2", "zone-3", "zone-4")
NODES = 4
QUERY = "{ virtualMachines(first: 100) { edges { node { id name status zone host vdc cores memoryMb } } } }"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def seed(world: World, count: int) -> None:
    """``count`` VMs spread over every zone and node, in three VDCs."""
    per_zone = count // len(ZONES)
    for zone in ZONES:
        fake = world.fakes[zone]

        def add(pve: object, zone: str = zone) -> None:
            for i in range(per_zone):
                vmid = 1000 + i
                vdc = ("demo", "other", "bench")[i % 3]
                pve.add_vm(  # type: ignore[attr-defined]
                    vmid,
                    f"{zone}-vm-{i:04d}",
                    node=f"pve{i % NODES + 1}",
                    status="running" if i % 4 else "stopped",
                    config={
                        "cores": 2,
                        "memory": 2048,
                        "tags": f"fp-vdc-{vdc}",
                        "scsi0": f"local-lvm:vm-{vmid}-disk-0,size=20G",
                    },
                    pool=f"fp-{vdc}",
                )

        world.fakes.on_loop(add, fake.pve)


async def _session(tls: ssl.SSLContext) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=tls), timeout=aiohttp.ClientTimeout(total=30)
    )


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vms", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--subnet", type=int, default=40)
    args = parser.parse_args(argv)

    host = f"127.{args.subnet}.0.1"
    with tempfile.TemporaryDirectory(prefix="fp-bench-") as scratch:
        cfg = WorldConfig(
            scratch=Path(scratch),
            subnet=args.subnet,
            zones=ZONES,
            nodes_per_zone=NODES,
            orchestrator_host=host,
            orchestrator_port=free_port(host),
            seed_guests=False,
        )
        with World(cfg) as world:
            seed(world, args.vms)
            token = world.token("admin")
            api = requests.Session()
            api.headers["Authorization"] = f"Bearer {token}"

            # The baseline uses the HTTP client the agents use (aiohttp), one session, zones in parallel.
            loop = asyncio.new_event_loop()
            tls = ssl.create_default_context(cafile=world.fakes.certfile)
            direct = loop.run_until_complete(_session(tls))
            urls = {zone: f"{world.fakes[zone].url('pve1')}/api2/json/cluster/resources" for zone in ZONES}
            auth = {zone: f"PVEAPIToken={TOKEN_ID}={world.fakes[zone].token_secret}" for zone in ZONES}

            async def one(zone: str) -> int:
                async with direct.get(urls[zone], headers={"Authorization": auth[zone]}) as response:
                    response.raise_for_status()
                    return len((await response.json())["data"])

            async def all_zones() -> int:
                return sum(await asyncio.gather(*(one(zone) for zone in ZONES)))

            def baseline() -> int:
                return loop.run_until_complete(all_zones())

            def stack() -> int:
                response = api.post(f"{world.url}/graphql", json={"query": QUERY}, timeout=30)
                body = response.json()
                if response.status_code != 200 or body.get("errors"):
                    raise RuntimeError(f"the stack answered {response.status_code}: {body}")
                return len(body["data"]["virtualMachines"]["edges"])

            assert baseline() >= args.vms, "the fakes do not hold the VMs"
            assert stack() == 100
            for _ in range(5):  # warm both paths: connections, JWKS, imports
                baseline()
                stack()

            times: dict[str, list[float]] = {"baseline": [], "stack": []}
            for _ in range(args.rounds):
                for name, fn in (("baseline", baseline), ("stack", stack)):
                    started = time.perf_counter()
                    fn()
                    times[name].append((time.perf_counter() - started) * 1000)

            assert world.orchestrator is not None
            peak = peak_rss_mib(world.orchestrator.popen.pid)
            loop.run_until_complete(direct.close())
            loop.close()

    b50, b99 = percentile(times["baseline"], 0.5), percentile(times["baseline"], 0.99)
    s50, s99 = percentile(times["stack"], 0.5), percentile(times["stack"], 0.99)
    print(
        f"vm_list: {args.vms} VMs in {len(ZONES)} zones x {NODES} nodes, {args.rounds} rounds, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    print(f"  baseline /cluster/resources x{len(ZONES)} in parallel: p50 {b50:7.1f} ms  p99 {b99:7.1f} ms")
    print(f"  stack    virtualMachines(first: 100):              p50 {s50:7.1f} ms  p99 {s99:7.1f} ms")
    print(f"  ratio    p50 {s50 / b50:.2f}  p99 {s99 / b99:.2f}   (target p50 <= 1.3)")
    print(f"  orchestrator peak RSS {peak:.0f} MiB  (mean stack {statistics.fmean(times['stack']):.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
