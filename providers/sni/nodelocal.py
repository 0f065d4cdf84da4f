"""``python -m providers.sni.nodelocal``: a tenant node's way to its API server in the SNI mode.

Pods reach their cluster's API server through the ``kubernetes`` Service, whose endpoint is the address
the API server advertises. Behind the SNI router no address leads to one cluster's API server: the router
tells clusters apart by the TLS server name, and a pod's client dials the Service's ClusterIP, so its TLS
names none (Go sends no server name for an address). So in the SNI mode the API server advertises the
node-local address (:data:`providers.controlplane.model.NODE_LOCAL_ADDRESS`), and on every node this
proxy (a DaemonSet on the host's network, :func:`providers.controlplane.tenant.node_local_proxy`) holds
that address on an interface of its own and listens there on the API server's port. kube-proxy sends a
pod's connection to the Service there, on the pod's own node; the proxy opens a connection to the router
at the cluster's endpoint, names the cluster's API server in a CONNECT request (:mod:`.connect`), and
once the router answers 200 copies bytes both ways. The pod's TLS is with its API server end to end,
verified with the cluster's CA (the serving certificate names the Service's ClusterIP); the proxy holds no
key and no credential.

Settings, from the environment: ``FLEXPLANE_NODE_LOCAL_LISTEN`` (ADDRESS:PORT it listens on),
``FLEXPLANE_NODE_LOCAL_UPSTREAM`` (HOST:PORT of the cluster's endpoint: its API server's host name under
the SNI domain and the router's port), ``FLEXPLANE_NODE_LOCAL_NAME`` (the API server's host name the
CONNECT request asks for; the upstream's host when unset, so it is set only where the router is dialled
by its address),
``FLEXPLANE_NODE_LOCAL_INTERFACE`` (the dummy interface that holds the listening address) and
``FLEXPLANE_NODE_LOCAL_CONNECT_TIMEOUT`` (seconds for the router to answer, 5). It runs until SIGTERM.

``python -m providers.sni.nodelocal hold`` puts the listening address on the interface (made if missing,
kept afterwards for the next pod) and exits: the pod's init container, the one step that needs
``CAP_NET_ADMIN``, so that the proxy itself runs with no capability.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

from providers.common.settings import seconds_of
from providers.sni import connect
from providers.sni.router import CHUNK, close, keepalive, served, splice

log = logging.getLogger("providers.sni.nodelocal")


@dataclass(frozen=True)
class Upstream:
    """The cluster's endpoint: the router's address (by the API server's host name) and port."""

    host: str
    port: int
    name: str  # the API server's host name, which the CONNECT request asks for
    timeout: float = 5.0  # for the router to accept and answer the CONNECT request


class Refused(Exception):
    """The router answered the CONNECT request with another status than 200."""


class Tunnel:
    """The connection handler: each connection carried to the API server through the router."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.connections: set[asyncio.Task[None]] = set()  # held, as the router's are

    async def serve(self, host: str, port: int) -> asyncio.Server:
        return await asyncio.start_server(self.handle, host, port, limit=CHUNK)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with served(self.connections, writer):
            upstream = await self.open()
            if upstream is not None:
                try:
                    await splice(reader, writer, *upstream)
                finally:
                    await close(upstream[1])

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection through the router to the API server, its CONNECT answered 200; None (logged) when
        the router does not accept or answer in time, or refuses."""
        up = self.upstream
        try:
            return await asyncio.wait_for(self._connect(), up.timeout)
        except TimeoutError:
            log.warning("%s:%s did not answer within %ss", up.host, up.port, up.timeout)
        except (OSError, connect.BadRequest, Refused) as error:
            log.warning("%s:%s: %s", up.host, up.port, error)
        return None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        up = self.upstream
        reader, writer = await asyncio.open_connection(up.host, up.port, limit=CHUNK)
        try:
            keepalive(writer)
            writer.write(connect.request(up.name, up.port))
            await writer.drain()
            status, reason = await connect.read_response(reader)
            if status != 200:
                raise Refused(f"refused with {status}: {reason}")
        except BaseException:
            await close(writer)
            raise
        return reader, writer


def host_port(name: str, value: str) -> tuple[str, int]:
    """``HOST:PORT`` of the setting ``name``; the process exits naming it otherwise."""
    host, colon, port = value.strip().rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SystemExit(f"{name} must be HOST:PORT, not {value!r}")
    return host.strip("[]"), int(port)


def hold_address(interface: str, address: str) -> None:
    """Put ``address`` (/32) on the dummy ``interface``, made and brought up if it is not there."""

    def ip(*args: str, check: bool = True) -> int:
        # iproute2 by its absolute path, no shell; the arguments are the pod's own settings.
        done = subprocess.run(["/usr/sbin/ip", *args], capture_output=True, check=check)  # noqa: S603
        return done.returncode

    if ip("link", "show", interface, check=False):
        ip("link", "add", interface, "type", "dummy")
    ip("addr", "replace", f"{address}/32", "dev", interface)
    ip("link", "set", interface, "up")


async def serve(tunnel: Tunnel, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT, then stop taking connections (those open end with their peers)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    server = await tunnel.serve(host, port)
    up = tunnel.upstream
    log.info("carrying %s:%s to %s at %s:%s", host, port, up.name, up.host, up.port)
    async with server:
        await stop.wait()
    log.info("stopped")


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    listen = host_port("FLEXPLANE_NODE_LOCAL_LISTEN", os.environ.get("FLEXPLANE_NODE_LOCAL_LISTEN", ""))
    if sys.argv[1:] == ["hold"]:
        interface = os.environ.get("FLEXPLANE_NODE_LOCAL_INTERFACE", "").strip()
        if not interface:
            raise SystemExit("FLEXPLANE_NODE_LOCAL_INTERFACE must name the interface to hold the address on")
        try:
            hold_address(interface, listen[0])
        except (OSError, subprocess.CalledProcessError) as error:
            detail = getattr(error, "stderr", b"") or b""
            log.error("%s on %s: %s %s", listen[0], interface, error, detail.decode().strip())
            return 1
        log.info("%s is on %s", listen[0], interface)
        return 0
    if sys.argv[1:]:
        raise SystemExit(f"usage: python -m providers.sni.nodelocal [hold], not {' '.join(sys.argv[1:])!r}")
    upstream = os.environ.get("FLEXPLANE_NODE_LOCAL_UPSTREAM", "")
    host, port = host_port("FLEXPLANE_NODE_LOCAL_UPSTREAM", upstream)
    try:
        timeout = seconds_of("FLEXPLANE_NODE_LOCAL_CONNECT_TIMEOUT", Upstream.timeout)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    name = os.environ.get("FLEXPLANE_NODE_LOCAL_NAME", "").strip().lower() or host.lower()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(Tunnel(Upstream(host, port, name, timeout)), *listen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
