"""How many listings one orchestrator process answers per second while its tail stays short.

Brings up the world of ``benchmarks.vdc_list`` (4 zones x 4 nodes, 4,000 VMs, a VDC ``bench`` of 200
of them), then, for each number of concurrent clients in ``--clients``, lets that many clients list for
``--seconds``, each sending its next request as soon as its last is answered: VDC listings
(``virtualMachines(first: 100)`` naming ``bench``), with a fleet-wide listing (ADMIN, every zone's
``/cluster/resources``) as every ``--fleet-every``-th request of each client. The clients run in a
process of their own, so that their Python does not share an interpreter with the world's fakes.

It prints, per number of clients, the listings answered per second and their p50 and p99, and the
figure: the most listings per second of a level whose p99 stayed within 250 ms. The same run at
another commit gives the before and after (issue 39: twice the listings per second).

    .venv/bin/python -m benchmarks.throughput [--clients 1,2,4,8,16] [--seconds 8] [--fleet-every 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import requests

from benchmarks.kit import bench_world, percentile
from benchmarks.vdc_list import VDC, seed
from benchmarks.vm_list import NODES, QUERY, ZONES

FLEET = 4000
P99_LIMIT_MS = 250.0


@dataclass(frozen=True)
class Level:
    clients: int
    seconds: float
    latencies: tuple[float, ...]  # milliseconds, every listing answered
    failures: int

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds

    @property
    def p50(self) -> float:
        return percentile(list(self.latencies), 0.5)

    @property
    def p99(self) -> float:
        return percentile(list(self.latencies), 0.99)


def load(url: str, token: str, clients: int, seconds: float, fleet_every: int) -> tuple[list[float], int]:
    """``clients`` threads listing for ``seconds``: every answer's milliseconds, and how many failed."""
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def client() -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        start.wait()
        until = time.monotonic() + seconds
        sent = 0
        while time.monotonic() < until:
            sent += 1
            headers = {} if sent % fleet_every == 0 else {"FlexPlane-VDC-ID": VDC}
            began = time.perf_counter()
            response = session.post(f"{url}/graphql", json={"query": QUERY}, headers=headers, timeout=60)
            took = (time.perf_counter() - began) * 1000
            ok = response.status_code == 200 and not response.json().get("errors")
            with lock:
                if ok:
                    latencies.append(took)
                else:
                    failures[0] += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, failures[0]


def measure(subnet: int, levels: list[int], seconds: float, fleet_every: int) -> list[Level]:
    with bench_world(subnet, ZONES, NODES) as world, ProcessPoolExecutor(max_workers=1) as clients:
        seed(world, FLEET, 200)
        token = world.token("admin")
        load(world.url, token, 2, 2.0, fleet_every)  # warm: connections, the schema, the agents' channels
        measured = []
        for count in levels:
            latencies, failures = clients.submit(load, world.url, token, count, seconds, fleet_every).result()
            measured.append(Level(count, seconds, tuple(latencies), failures))
    return measured


def report(levels: list[Level], fleet_every: int) -> float:
    print(
        f"throughput: VDC listings (one in {fleet_every} fleet-wide) against one orchestrator process, "
        f"{FLEET} VMs in {len(ZONES)} zones x {NODES} nodes, python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cpus"
    )
    best = 0.0
    for level in levels:
        within = level.p99 <= P99_LIMIT_MS and not level.failures
        if within:
            best = max(best, level.per_second)
        print(
            f"  {level.clients:3} clients: {level.per_second:6.1f} listings/s  p50 {level.p50:6.1f} ms  "
            f"p99 {level.p99:6.1f} ms  failed {level.failures}" + ("" if within else "  (p99 over the limit)")
        )
    print(f"  listings per second with p99 <= {P99_LIMIT_MS:g} ms: {best:.1f}")
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subnet", type=int, default=48)
    parser.add_argument("--clients", default="1,2,4,8,16", help="clients of each level, comma-separated")
    parser.add_argument("--seconds", type=float, default=8.0, help="how long each level lasts")
    parser.add_argument("--fleet-every", type=int, default=20, help="each client's n-th is fleet-wide")
    args = parser.parse_args(argv)
    levels = measure(args.subnet, [int(n) for n in args.clients.split(",")], args.seconds, args.fleet_every)
    return 0 if report(levels, args.fleet_every) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
