"""Fake Proxmox zones: one fakepve instance per zone, one HTTPS address per node.

A real Proxmox node serves the API on its own address, and any node answers for the whole
cluster. fakepve serves one address per instance, so the harness adds a listener per node
(each on its own loopback address) to the same fake: taking a node offline both marks it
offline in the fake and closes its listener, as a node that is down would.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from fakepve import FakePve, PveError, TaskError
from fakepve.certs import make_cert

T = TypeVar("T")
PVE_PORT = 8006
TOKEN_ID = "root@pam!flexplane"


class EventLoopThread:
    """An asyncio loop in a daemon thread, for serving fakes to synchronous callers."""

    def __init__(self, name: str = "fake-zones") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run a plain function on the loop's thread (fakepve's state is not thread-safe)."""

        async def wrapped() -> Any:
            return fn(*args)

        return self.run(wrapped())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT])?$")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def _bytes(text: str) -> int | None:
    match = _SIZE.match(text.strip().upper())
    return int(float(match.group(1)) * _UNITS[match.group(2) or ""]) if match else None


def _spelled(size: int) -> str:
    """Proxmox's spelling of a size: the largest unit that divides it."""
    for unit in "TGMK":
        if size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


class HarnessPve(FakePve):
    """fakepve with the gaps this project meets closed: a QEMU disk resize that really resizes.

    fakepve answers ``PUT /nodes/{node}/qemu/{vmid}/resize`` from the schema alone and stores
    nothing; this resizes the drive's ``size=`` in a task that holds the VM's config lock, and
    refuses to shrink with Proxmox's wording.
    """

    def _routes_qemu_resize(self) -> list[tuple[str, str, Any]]:
        return [("PUT", "/nodes/{node}/qemu/{vmid}/resize", self._qemu_resize)]

    async def _qemu_resize(self, values: dict[str, Any], user: str) -> Any:
        vm = self.find(values["node"], int(values["vmid"]))
        disk, text = str(values["disk"]), str(values["size"])
        grow = text.startswith("+")
        requested = _bytes(text.lstrip("+"))
        if requested is None:
            raise PveError(400, "Parameter verification failed.", {"size": "invalid size string"})
        if vm.lock:
            raise PveError(500, f"VM is locked ({vm.lock})")
        drive = vm.config.get(disk)
        if drive is None:
            raise PveError(500, f"disk '{disk}' does not exist")

        def resized() -> str:
            parts = str(vm.config[disk]).split(",")
            current = next((_bytes(p[5:]) for p in parts if p.startswith("size=")), None) or 0
            new = current + requested if grow else requested
            if new < current:
                raise TaskError("shrinking disks is not supported")
            kept = [p for p in parts if not p.startswith("size=")]
            return ",".join([*kept, f"size={_spelled(new)}"])

        try:
            resized()  # refuse at once what the task would refuse, as Proxmox does
        except TaskError as exc:
            raise PveError(500, str(exc)) from exc

        async def body() -> None:
            vm.config[disk] = resized()

        return await self.task(vm.node, "resize", vm.vmid, user, body, vm=vm)


@dataclass
class FakeZone:
    """One Proxmox cluster: a FakePve with a listener per node."""

    name: str
    node_addresses: dict[str, str]  # node -> loopback address
    token_secret: str
    pve: FakePve = field(init=False)
    _sites: dict[str, web.TCPSite] = field(default_factory=dict, init=False)
    _ssl: ssl.SSLContext | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        first = next(iter(self.node_addresses.values()))
        self.pve = HarnessPve(host=first, port=PVE_PORT)
        self.pve.cluster_name = self.name
        self.pve.time_scale = 0
        self.pve.nodes.clear()
        for node in self.node_addresses:
            self.pve.add_node(node)
        self.pve.apitokens[TOKEN_ID] = self.token_secret

    def url(self, node: str) -> str:
        return f"https://{self.node_addresses[node]}:{PVE_PORT}"

    async def start(self, certfile: str, keyfile: str) -> None:
        self._ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ssl.load_cert_chain(certfile, keyfile)
        await self.pve.start(certfile, keyfile)
        first = next(iter(self.node_addresses))
        assert self.pve.runner is not None
        self._sites[first] = next(iter(self.pve.runner.sites))  # pve.start made it
        for node in list(self.node_addresses)[1:]:
            await self._listen(node)

    async def _listen(self, node: str) -> None:
        assert self.pve.runner is not None
        site = web.TCPSite(self.pve.runner, self.node_addresses[node], PVE_PORT, ssl_context=self._ssl)
        await site.start()
        self._sites[node] = site

    async def set_node_offline(self, node: str, offline: bool = True) -> None:
        """The node goes down (its API stops answering) or comes back."""
        self.pve.set_node_offline(node, offline)
        if offline and node in self._sites:
            await self._sites.pop(node).stop()
            self._drop_connections(self.node_addresses[node])
        elif not offline and node not in self._sites:
            await self._listen(node)

    def _drop_connections(self, address: str) -> None:
        """Close the keep-alive connections clients hold to an address (closing the listener keeps them)."""
        assert self.pve.runner is not None
        assert self.pve.runner.server is not None
        for handler in self.pve.runner.server.connections:
            transport = handler.transport
            if transport is not None and transport.get_extra_info("sockname", ("",))[0] == address:
                transport.close()

    async def stop(self) -> None:
        await self.pve.stop()
        self._sites.clear()


class FakeZones:
    """Every zone's fake, served from one event loop thread."""

    def __init__(self, zones: dict[str, dict[str, str]], secrets: dict[str, str], pki_dir: Path) -> None:
        self.loop = EventLoopThread()
        self.zones = {name: FakeZone(name, nodes, secrets[name]) for name, nodes in zones.items()}
        addresses = [a for nodes in zones.values() for a in nodes.values()]
        pki_dir.mkdir(parents=True, exist_ok=True)
        self.certfile, self.keyfile, _ = make_cert(str(pki_dir), name="fakepve", hosts=tuple(addresses))

    def start(self) -> None:
        for zone in self.zones.values():
            self.loop.run(zone.start(self.certfile, self.keyfile))

    def stop(self) -> None:
        try:
            for zone in self.zones.values():
                self.loop.run(zone.stop())
        finally:
            self.loop.stop()

    def __getitem__(self, zone: str) -> FakeZone:
        return self.zones[zone]

    def set_node_offline(self, zone: str, node: str, offline: bool = True) -> None:
        self.loop.run(self.zones[zone].set_node_offline(node, offline))

    def on_loop(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the fakes' loop: seed or inspect a fake safely from another thread."""
        return self.loop.call(fn, *args)
