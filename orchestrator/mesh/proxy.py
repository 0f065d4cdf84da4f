"""The hub's forwarding proxy: how the orchestrator's pods reach the agents on the mesh.

On Kubernetes the orchestrator's replicas cannot route the mesh's range to the hub's pod: a route
needs NET_ADMIN in every replica, and pod-to-pod routes for a foreign range depend on the CNI. So
the hub, which holds the WireGuard interface, also serves a small HTTP CONNECT proxy on its pod's
cluster address (``manage.py mesh_hub --proxy-listen``). gRPC's C core speaks CONNECT natively (the
``grpc.http_proxy`` channel argument, set by :class:`agentclient.AgentPool` when
FLEXPLANE_MESH_PROXY is configured): the TLS handshake runs through the tunnel, so the agent's and
the orchestrator's certificates are checked end to end and the proxy sees only ciphertext.

What it forwards, and nothing else:

- ``CONNECT <ip>:<port>`` where the address is inside the mesh's range and ``ip:port`` is the
  catalog endpoint of a host the hub has configured as a peer (the agent's mTLS port). Names are
  not resolved; another port, an address outside the range, a host removed: ``403``.
- from a client outside the mesh's range: a node (which reaches the hub's mesh address) cannot use
  the proxy to reach another node.

The allowed endpoints are set by the hub's reconcile pass (:meth:`MeshProxy.allow`), from the same
read of the catalog that configures the peers: a host enrolled is reachable within a pass, a host
removed is refused at once for new tunnels.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Iterable

logger = logging.getLogger(__name__)

DEFAULT_PORT = 3128
HEAD_LIMIT = 8192
HEAD_TIMEOUT = 10.0
CONNECT_TIMEOUT = 5.0
MAX_TUNNELS = 1024
CHUNK = 65536
CLONE_NEWNET = 0x40000000

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ProxyRefused(Exception):
    """A request the proxy does not forward: the HTTP status and the reason said to the client."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


_PHRASES = {
    400: "Bad Request",
    403: "Forbidden",
    405: "Method Not Allowed",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def parse_listen(value: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) as the address to listen on; ``ValueError`` otherwise."""
    host, sep, port = value.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not host:port")
    return host, int(port)


def parse_target(target: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """A CONNECT target ``ip:port`` (``[v6]:port``): the address and the port; ``ProxyRefused`` otherwise."""
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ProxyRefused(400, f"{target!r} is not address:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host), int(port)
    except ValueError:
        raise ProxyRefused(403, f"{host!r} is not an address: the mesh proxy resolves no names") from None


def check_request(
    head: bytes,
    client: str,
    network: Network,
    allowed: frozenset[tuple[str, int]],
) -> tuple[str, int]:
    """The destination of a proxy request's head, when it may be forwarded; ``ProxyRefused`` otherwise."""
    try:
        client_ip = ipaddress.ip_address(client)
    except ValueError:
        client_ip = None
    if client_ip is not None and client_ip in network:
        raise ProxyRefused(403, "a client on the mesh: the proxy serves the orchestrator, not the nodes")
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ProxyRefused(400, "not an HTTP/1 request")
    method, target, _ = parts
    if method != "CONNECT":
        raise ProxyRefused(405, f"{method} is not served: only CONNECT to an agent on the mesh")
    ip, port = parse_target(target)
    if ip not in network:
        raise ProxyRefused(403, f"{ip} is outside the mesh range {network}")
    if (str(ip), port) not in allowed:
        raise ProxyRefused(403, f"{target} is not the endpoint of an agent on the mesh")
    return str(ip), port


def _enter(netns: str) -> None:
    """This thread into network namespace ``netns`` (the tests' and the devstack's hub)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {netns}: {os.strerror(errno)}")
    finally:
        os.close(fd)


class MeshProxy:
    """The CONNECT proxy on ``listen`` (host:port), forwarding to agents inside ``network``.

    It runs its own event loop in a thread (in ``netns`` when given: its sockets, listening and
    dialling, are the hub's). :meth:`allow` sets the endpoints it forwards to; none until then.
    """

    def __init__(self, listen: str, network: Network, *, netns: str | None = None) -> None:
        self.listen = parse_listen(listen)
        self.network = network
        self.netns = netns
        self._allowed: frozenset[tuple[str, int]] = frozenset()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._tunnels = 0
        self.opened = 0  # tunnels opened since start
        self.address: tuple[str, int] | None = None

    def allow(self, endpoints: Iterable[tuple[str, int]]) -> None:
        """The agents' endpoints (mesh address, port) tunnels may go to, replacing the previous set."""
        self._allowed = frozenset((str(ipaddress.ip_address(ip)), int(port)) for ip, port in endpoints)

    @property
    def allowed(self) -> frozenset[tuple[str, int]]:
        return self._allowed

    def start(self) -> tuple[str, int]:
        """Listen (in its thread); the address it listens on. Raises OSError when it cannot."""
        started = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                if self.netns:
                    _enter(self.netns)
                loop = asyncio.new_event_loop()
                self._loop = loop
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._handle, self.listen[0], self.listen[1], limit=HEAD_LIMIT)
                )
                sockname = self._server.sockets[0].getsockname()
                self.address = (str(sockname[0]), int(sockname[1]))
            except BaseException as exc:
                failure.append(exc)
                started.set()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=serve, name="mesh-proxy", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]
        assert self.address is not None
        logger.info("mesh proxy listening on %s:%d for %s", *self.address, self.network)
        return self.address

    def stop(self) -> None:
        loop, server = self._loop, self._server
        if loop is None or server is None:
            return

        async def close() -> None:
            server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        with contextlib.suppress(RuntimeError):  # the loop already ended
            asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._loop = self._server = None

    # ------------------------------------------------------------------------------- a tunnel

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = str(peer[0]) if peer else "?"
        upstream: asyncio.StreamWriter | None = None
        try:
            if self._tunnels >= MAX_TUNNELS:
                raise ProxyRefused(503, f"{MAX_TUNNELS} tunnels are open: try again later")
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            except asyncio.IncompleteReadError as exc:
                if not exc.partial:
                    return  # connected and left: a probe of the port
                raise ProxyRefused(400, "no complete request head") from None
            except (asyncio.LimitOverrunError, TimeoutError):
                raise ProxyRefused(400, "no complete request head") from None
            host, port = check_request(head, client, self.network, self._allowed)
            up_reader, upstream = await self._dial(host, port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            self._tunnels += 1
            self.opened += 1
            try:
                await asyncio.gather(_pump(reader, upstream), _pump(up_reader, writer))
            finally:
                self._tunnels -= 1
        except ProxyRefused as refused:
            logger.info("mesh proxy: refused %s: %s", client, refused.reason)
            with contextlib.suppress(OSError):
                body = (refused.reason + "\n").encode()
                writer.write(
                    f"HTTP/1.1 {refused.status} {_PHRASES.get(refused.status, 'Error')}\r\n".encode()
                    + b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for stream in (upstream, writer):
                if stream is not None:
                    stream.close()

    async def _dial(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the agent, made in this loop's thread (so in the hub's namespace)."""
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(
                asyncio.get_running_loop().sock_connect(sock, (host, port)), CONNECT_TIMEOUT
            )
        except TimeoutError:
            sock.close()
            raise ProxyRefused(504, f"{host}:{port} did not answer within {CONNECT_TIMEOUT:g} s") from None
        except OSError as exc:
            sock.close()
            raise ProxyRefused(502, f"{host}:{port}: {exc.strerror or exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return await asyncio.open_connection(sock=sock, limit=CHUNK)


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Bytes from source to sink until source ends; then sink's write side is closed."""
    try:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except OSError:
        sink.close()
