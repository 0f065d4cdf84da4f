"""Fake Proxmox zones: one fakepve instance per zone, one HTTPS address per node.

A real Proxmox node serves the API on its own address, and any node answers for the whole
cluster. fakepve serves one address per instance, so the harness adds a listener per node
(each on its own loopback address) to the same fake: taking a node offline both marks it
offline in the fake and closes its listener, as a node that is down would.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from fakepve import FakePve
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
        self.pve = FakePve(host=first, port=PVE_PORT)
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
