"""What the benchmarks share: a world of fake zones filled with VMs, percentiles, peak memory."""

from __future__ import annotations

import argparse
import asyncio
import ssl
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp

from devstack.fakezones import TOKEN_ID
from devstack.net import free_port
from devstack.world import World, WorldConfig


def arguments(
    doc: str | None, *, rounds: int, subnet: int, rounds_help: str | None = None
) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring as the help, ``--rounds`` and the world's ``--subnet``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=rounds, help=rounds_help)
    parser.add_argument("--subnet", type=int, default=subnet)
    return parser


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p50_p99(samples: list[float]) -> tuple[float, float]:
    """The median and the 99th percentile of ``samples``."""
    return percentile(samples, 0.5), percentile(samples, 0.99)


def p50s_p99s(times: dict[str, list[float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Each probe's median, and each probe's 99th percentile."""
    return (
        {name: percentile(samples, 0.5) for name, samples in times.items()},
        {name: percentile(samples, 0.99) for name, samples in times.items()},
    )


def verdict(met: bool) -> bool:
    """Says whether the targets were met, last in a report; and returns it."""
    print(f"  targets {'met' if met else 'NOT met'}")
    return met


def peak_rss_mib(pid: int) -> float:
    """The highest resident memory of process ``pid`` so far, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def interleaved(rounds: int, probes: dict[str, Callable[[], int]]) -> dict[str, list[float]]:
    """Milliseconds of each probe, ``rounds`` times, one of each in turn."""
    times: dict[str, list[float]] = {name: [] for name in probes}
    for _ in range(rounds):
        for name, fn in probes.items():
            started = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - started) * 1000)
    return times


@contextmanager
def bench_world(subnet: int, zones: Sequence[str], nodes: int) -> Iterator[World]:
    """The devstack's world on ``127.<subnet>.x.y`` with no seeded guests, in a scratch folder."""
    host = f"127.{subnet}.0.1"
    with tempfile.TemporaryDirectory(prefix="fp-bench-") as scratch:
        cfg = WorldConfig(
            scratch=Path(scratch),
            subnet=subnet,
            zones=tuple(zones),
            nodes_per_zone=nodes,
            orchestrator_host=host,
            orchestrator_port=free_port(host),
            seed_guests=False,
        )
        with World(cfg) as world:
            yield world


def seed_vms(
    world: World,
    per_zone: int,
    *,
    nodes: int,
    vdcs: Sequence[str],
    size: tuple[int, int, int] = (2, 2048, 20),
    extra_tags: str = "",
) -> None:
    """``per_zone`` VMs in each zone, spread over its nodes and round-robin over ``vdcs``, each of
    ``size`` (vCPUs, MiB of memory, GiB of disk) with a NIC and its address, tagged with their VDC
    and ``extra_tags``."""
    cores, memory, disk_gb = size
    for zone in world.fakes.zones:
        fake = world.fakes[zone]

        def add(pve: object, zone: str = zone) -> None:
            for i in range(per_zone):
                vmid = 1000 + i
                vdc = vdcs[i % len(vdcs)]
                pve.add_vm(  # type: ignore[attr-defined]
                    vmid,
                    f"{zone}-vm-{i:04d}",
                    node=f"pve{i % nodes + 1}",
                    status="running" if i % 4 else "stopped",
                    config={
                        "cores": cores,
                        "memory": memory,
                        "tags": f"fp-vdc-{vdc}{extra_tags}",
                        "scsi0": f"local-lvm:vm-{vmid}-disk-0,size={disk_gb}G",
                        # A NIC on its VDC's network, as every VM has one: a listing never reads it.
                        "net0": f"virtio=BC:24:11:{i >> 16 & 255:02X}:{i >> 8 & 255:02X}:{i & 255:02X},"
                        "bridge=vmbr0,firewall=1",
                        "ipconfig0": f"ip=10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}/8,gw=10.0.0.1",
                    },
                    pool=f"fp-{vdc}",
                )

        world.fakes.on_loop(add, fake.pve)


class DirectReads:
    """One Proxmox path read straight from each zone's first node, zones in parallel, with the HTTP
    client the agents use (aiohttp, one session): what the stack's answer is measured against.

    ``count`` says how many items an answer's ``data`` holds; calling the reads returns their sum.
    """

    def __init__(
        self, world: World, path: str, count: Callable[[Any], int] = len, timeout: float = 60.0
    ) -> None:
        self.count = count
        self.loop = asyncio.new_event_loop()
        tls = ssl.create_default_context(cafile=world.fakes.certfile)
        self.session = self.loop.run_until_complete(self._session(tls, timeout))
        zones = world.fakes.zones
        self.urls = {zone: f"{world.fakes[zone].url('pve1')}/api2/json{path}" for zone in zones}
        self.auth = {zone: f"PVEAPIToken={TOKEN_ID}={world.fakes[zone].token_secret}" for zone in zones}

    @staticmethod
    async def _session(tls: ssl.SSLContext, timeout: float) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=tls), timeout=aiohttp.ClientTimeout(total=timeout)
        )

    async def _one(self, zone: str) -> int:
        async with self.session.get(self.urls[zone], headers={"Authorization": self.auth[zone]}) as answer:
            answer.raise_for_status()
            return self.count((await answer.json())["data"])

    async def _all(self) -> int:
        return sum(await asyncio.gather(*(self._one(zone) for zone in self.urls)))

    def __call__(self) -> int:
        return self.loop.run_until_complete(self._all())

    def close(self) -> None:
        self.loop.run_until_complete(self.session.close())
        self.loop.close()
