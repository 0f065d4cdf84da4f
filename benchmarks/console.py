"""What the browser console's path costs over a direct connection to the VM's VNC websocket.

Brings up the devstack's world (one fake zone of one node, its agent over mTLS, the Kubernetes emulator,
identity, the orchestrator and portal under uvicorn), adds VM 150 to VDC ``demo`` with a 1024x768 screen,
and opens two consoles on it, side by side:

- stack:  alice's console as the browser opens it: the console page's ticket, ``/ws/console/`` through
          the orchestrator, ``Console.Open`` on the node's agent, Proxmox's vncwebsocket;
- direct: the fake's own ``vncproxy`` and ``vncwebsocket`` with the node's API token (what the agent
          itself does), VNC authentication answered here.

On each, interleaved so that a noisy machine weighs on both alike, it measures:

- round trip: a FramebufferUpdateRequest for one pixel and its answer (RFB's smallest exchange);
- throughput: full 1024x768 frames (3 MiB each in raw encoding), MiB/s.

It prints p50 and p99 of the round trips, the throughputs, and the stack over direct ratios.

    .venv/bin/python -m benchmarks.console [--rounds 300] [--frames 20] [--subnet 44]
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import secrets
import ssl
import struct
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial

import aiohttp
import requests

from benchmarks.kit import arguments, bench_world, p50_p99, percentile
from devstack.fakeconsole import vnc_response
from devstack.fakezones import TOKEN_ID
from devstack.world import World
from tests.portal.sessionkit import COOKIE, login

# A VM id of its own: the seeded guests (devstack.seed.GUESTS) have no screen of this size.
ZONE, NODE, VMID, VDC = "zone-a", "pve1", 150, "demo"
WIDTH, HEIGHT = 1024, 768
RFB = b"RFB 003.008\n"
SOCKET = re.compile(r'data-socket="([^"]+)"')


class Console:
    """One RFB connection (aiohttp's websocket client on both paths), past its handshake."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.buffer = b""

    async def read(self, size: int) -> bytes:
        chunks, have = [self.buffer], len(self.buffer)
        while have < size:
            frame = await self.ws.receive(timeout=30)
            if frame.type != aiohttp.WSMsgType.BINARY:
                raise RuntimeError(f"the console sent {frame.type.name}: {frame.data!r}")
            chunks.append(frame.data)
            have += len(frame.data)
        data = b"".join(chunks)
        self.buffer = data[size:]
        return data[:size]

    async def init(self) -> None:
        """ClientInit, then ServerInit, and noVNC's pixel format (32 bits, red at 0)."""
        await self.ws.send_bytes(b"\x01")
        header = await self.read(24)
        await self.read(int.from_bytes(header[20:24], "big"))
        pixel_format = struct.pack(">BBBBHHHBBBxxx", 32, 24, 0, 1, 255, 255, 255, 0, 8, 16)
        await self.ws.send_bytes(b"\x00\x00\x00\x00" + pixel_format)

    async def update(self, w: int, h: int) -> int:
        """A full (non-incremental) update of the w x h region at 0,0: the bytes it brought."""
        await self.ws.send_bytes(struct.pack(">BBHHHH", 3, 0, 0, 0, w, h))
        header = await self.read(16)
        rw, rh = struct.unpack(">HH", header[8:12])
        if (rw, rh) != (w, h):
            raise RuntimeError(f"asked for {w}x{h} pixels, the console sent {rw}x{rh}: not the seeded screen")
        return 16 + len(await self.read(rw * rh * 4))


async def stack_console(world: World, portal: requests.Session, http: aiohttp.ClientSession) -> Console:
    page = portal.get(f"{world.url}/vdc/{VDC}/console/{ZONE}/{VMID}/", timeout=30)
    found = SOCKET.search(page.text)
    if page.status_code != 200 or found is None:
        raise RuntimeError(f"the console page answered {page.status_code}: {page.text[:300]}")
    cookie = portal.cookies.get(COOKIE, domain=world.cfg.orchestrator_host)
    ws = await http.ws_connect(
        world.url + html.unescape(found.group(1)),
        headers={"Cookie": f"{COOKIE}={cookie}"},
        origin=world.url,
        protocols=("binary",),
        max_msg_size=0,
    )
    console = Console(ws)
    if await console.read(12) != RFB:
        raise RuntimeError("the stack did not greet with RFB 3.8")
    await ws.send_bytes(RFB)
    if await console.read(2) != b"\x01\x01":
        raise RuntimeError("the stack did not offer security type None")
    await ws.send_bytes(b"\x01")
    if await console.read(4) != b"\0\0\0\0":
        raise RuntimeError("the stack's security did not succeed")
    await console.init()
    return console


async def direct_console(world: World, http: aiohttp.ClientSession) -> Console:
    fake = world.fakes[ZONE]
    base = fake.url(NODE)
    auth = {"Authorization": f"PVEAPIToken={TOKEN_ID}={fake.token_secret}"}
    path = f"/api2/json/nodes/{NODE}/qemu/{VMID}"
    tls = ssl.create_default_context(cafile=world.fakes.certfile)
    async with http.post(f"{base}{path}/vncproxy", data={"websocket": "1"}, headers=auth, ssl=tls) as answer:
        answer.raise_for_status()
        data = (await answer.json())["data"]
    ws = await http.ws_connect(
        f"{base}{path}/vncwebsocket",
        params={"port": str(data["port"]), "vncticket": data["ticket"]},
        headers=auth,
        ssl=tls,
        protocols=("binary",),
        max_msg_size=0,
    )
    console = Console(ws)
    if await console.read(12) != RFB:
        raise RuntimeError("the fake did not greet with RFB 3.8")
    await ws.send_bytes(RFB)
    count = (await console.read(1))[0]
    if 2 not in await console.read(count):
        raise RuntimeError("the fake did not offer VNC authentication")
    await ws.send_bytes(b"\x02")
    await ws.send_bytes(vnc_response(data["ticket"], await console.read(16)))
    if await console.read(4) != b"\0\0\0\0":
        raise RuntimeError("the fake refused the ticket")
    await console.init()
    return console


def seed(world: World) -> None:
    rgbx = secrets.token_bytes(WIDTH * HEIGHT * 4)  # noise: what compresses nowhere

    def add(pve: object) -> None:
        pve.add_vm(  # type: ignore[attr-defined]
            VMID,
            "bench-console",
            node=NODE,
            status="running",
            config={
                "cores": 2,
                "memory": 2048,
                "tags": f"fp-vdc-{VDC}",
                "scsi0": f"local-lvm:vm-{VMID}-disk-0,size=20G",
            },
            pool=f"fp-{VDC}",
        ).screen = (WIDTH, HEIGHT, rgbx)

    world.fakes.on_loop(add, world.fakes[ZONE].pve)


async def timed(
    rounds: int, probes: Mapping[str, Callable[[], Awaitable[int]]]
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Milliseconds of each probe, rounds times, one of each in turn; and the bytes each brought."""
    times: dict[str, list[float]] = {name: [] for name in probes}
    moved = dict.fromkeys(probes, 0)
    for _ in range(rounds):
        for name, probe in probes.items():
            started = time.perf_counter()
            moved[name] += await probe()
            times[name].append((time.perf_counter() - started) * 1000)
    return times, moved


Measured = tuple[dict[str, list[float]], dict[str, list[float]], dict[str, int]]


async def measure(world: World, portal: requests.Session, rounds: int, frames: int) -> Measured:
    async with aiohttp.ClientSession() as http:
        consoles = {
            "stack": await stack_console(world, portal, http),
            "direct": await direct_console(world, http),
        }
        try:
            for console in consoles.values():  # warm both paths
                for _ in range(10):
                    await console.update(1, 1)
                await console.update(WIDTH, HEIGHT)
            trips, _ = await timed(rounds, {name: partial(c.update, 1, 1) for name, c in consoles.items()})
            sizes = {name: partial(c.update, WIDTH, HEIGHT) for name, c in consoles.items()}
            full, moved = await timed(frames, sizes)
        finally:
            for console in consoles.values():
                await console.ws.close()
    return trips, full, moved


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, rounds=300, subnet=44, rounds_help="round trips on each path")
    parser.add_argument("--frames", type=int, default=20, help="full frames on each path")
    args = parser.parse_args(argv)

    with bench_world(args.subnet, (ZONE,), 1) as world:
        seed(world)
        portal, _ = login(world, "alice")
        trips, frames, moved = asyncio.run(measure(world, portal, args.rounds, args.frames))

    print(
        f"console: VM {ZONE}/{VMID}, {WIDTH}x{HEIGHT} raw frames, {args.rounds} round trips and "
        f"{args.frames} frames per path, interleaved; python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    rates = {}
    for name in trips:
        p50, p99 = p50_p99(trips[name])
        rates[name] = moved[name] / (1024 * 1024) / (sum(frames[name]) / 1000)
        trip = f"round trip p50 {p50:6.2f} ms  p99 {p99:6.2f} ms"
        print(f"  {name:6}  {trip}   throughput {rates[name]:7.1f} MiB/s")
    s50, d50 = percentile(trips["stack"], 0.5), percentile(trips["direct"], 0.5)
    print(
        f"  stack/direct: round trip p50 x{s50 / d50:.2f} (+{s50 - d50:.2f} ms), "
        f"throughput x{rates['stack'] / rates['direct']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
