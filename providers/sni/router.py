"""One listening port for every control plane: connections routed by the name in their TLS ClientHello.

For each connection the router reads the ClientHello (:mod:`.hello`) under a deadline, looks its server
name up (:mod:`.routes`), opens a TCP connection to that backend, sends it every byte read so far, and
then copies bytes both ways until both sides have finished. It never terminates TLS: the client's
handshake is with the backend (the tenant's API server or Konnectivity server), which shows its own
certificate of its own cluster's CA, and client certificates reach it untouched.

A client whose TLS carries no server name (one that dials an address: a tenant pod's client of the
``kubernetes`` Service) names its control plane the way a client of an HTTP proxy does instead: it opens
with ``CONNECT <host>:<port> HTTP/1.1`` and its headers (:mod:`.connect`), is answered ``200`` once the
backend accepted, and its TLS follows, spliced as above. That is what each tenant node's proxy does
(:mod:`.nodelocal`). The request names a host no differently than a ClientHello does, in clear text as
the server name is, so it opens nothing a ClientHello would not: the backend still authenticates the
client itself.

Refused, and closed: a first flight that is not a ClientHello or breaks its rules (:class:`.MalformedHello`),
one that does not complete within :attr:`Timeouts.hello` (a client that sends nothing, or a trickle), one
without a server name or with a name no control plane has (answered with TLS's fatal
``unrecognized_name`` alert first, so a client's error says why); a CONNECT request malformed (answered
400), naming no control plane (404) or not complete within the same deadline. A backend that cannot be
reached within :attr:`Timeouts.connect` closes the connection too (a CONNECT request's is answered 502).

Half-close: when one side ends its stream (TCP FIN), the other side's write is ended the same way and
the opposite direction goes on, as a TCP proxy must (a client may send its request and shut its write
side before reading the answer). A reset on either side closes both. Idle connections are not cut
(watches are idle for minutes): TCP keepalive finds peers that went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

from providers.sni import connect
from providers.sni.hello import RECORD_HEADER, Hello, MalformedHello, scan
from providers.sni.routes import Backend, Lookup

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
CLOSE_GRACE = 5.0
# TLS's fatal alert unrecognized_name (RFC 6066 3), in a plaintext record of TLS 1.0 framing, which
# every client reads before the handshake.
UNRECOGNIZED_NAME = bytes([21, 3, 1, 0, 2, 2, 112])


@dataclass(frozen=True)
class Timeouts:
    hello: float = 10.0  # for the whole ClientHello to arrive
    connect: float = 5.0  # for the backend to accept


class Router:
    """The connection handler of an asyncio server: ``asyncio.start_server(router.handle, ...)``."""

    def __init__(self, lookup: Lookup, timeouts: Timeouts | None = None) -> None:
        self.lookup = lookup
        self.timeouts = timeouts or Timeouts()
        # The connections' tasks, held: once a client has half-closed, its transport leaves the event
        # loop's selector, the backend's protocol holds its StreamReader only weakly, and nothing else
        # would reach the task, which the garbage collector would then destroy mid-stream.
        self.connections: set[asyncio.Task[None]] = set()

    async def serve(self, host: str, port: int) -> asyncio.Server:
        return await asyncio.start_server(self.handle, host, port, limit=CHUNK)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with served(self.connections, writer) as peer:
            await self._route(reader, writer, peer)

    async def _route(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: object) -> None:
        try:
            first, hello = await asyncio.wait_for(read_opening(reader), self.timeouts.hello)
        except TimeoutError:
            log.info("refused %s: no ClientHello nor CONNECT request within %ss", peer, self.timeouts.hello)
            return
        except MalformedHello as error:
            log.info("refused %s: %s", peer, error)
            return
        except connect.BadRequest as error:
            log.info("refused %s: %s", peer, error)
            await _answer(writer, connect.response(400, str(error)))
            return
        if isinstance(hello, connect.Request):
            await self._tunnel(reader, writer, hello, peer)
            return
        if hello is None:
            log.info("refused %s: closed before its ClientHello was complete", peer)
            return
        backend = self.lookup(hello.server_name) if hello.server_name else None
        if backend is None:
            log.info("refused %s: no control plane is named %r", peer, hello.server_name)
            await _answer(writer, UNRECOGNIZED_NAME)
            return
        upstream = await self._open(backend, hello.server_name or "")
        if upstream is not None:
            await self._splice(reader, writer, first, upstream)

    async def _tunnel(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: connect.Request,
        peer: object,
    ) -> None:
        """A CONNECT request's connection: answered 404 for a name no control plane has, 502 for a backend
        that does not answer, else 200 and spliced (what follows the request is the client's TLS)."""
        backend = self.lookup(request.host)
        if backend is None:
            log.info("refused %s: no control plane is named %r", peer, request.host)
            await _answer(writer, connect.response(404, f"no control plane is named {request.host}"))
            return
        upstream = await self._open(backend, request.host)
        if upstream is None:
            await _answer(writer, connect.response(502, f"{request.host} does not answer"))
            return
        writer.write(connect.response(200))
        await self._splice(reader, writer, b"", upstream)

    async def _open(
        self, backend: Backend, name: str
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to ``backend``; None (logged) when it does not accept within the deadline."""
        try:
            upstream = await asyncio.wait_for(
                asyncio.open_connection(backend.host, backend.port, limit=CHUNK), self.timeouts.connect
            )
        except (TimeoutError, OSError) as error:
            log.warning(
                "%s: its backend %s:%s (%s) did not answer: %s",
                name,
                backend.host,
                backend.port,
                backend.service,
                error,
            )
            return None
        keepalive(upstream[1])
        return upstream

    async def _splice(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        first: bytes,
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        upstream_reader, upstream_writer = upstream
        try:
            if first:
                upstream_writer.write(first)
                await upstream_writer.drain()
            await splice(reader, writer, upstream_reader, upstream_writer)
        finally:
            await close(upstream_writer)


@contextlib.asynccontextmanager
async def served(connections: set[asyncio.Task[None]], writer: asyncio.StreamWriter) -> AsyncIterator[object]:
    """A connection served (its peer's address given): its task held in ``connections`` meanwhile (see
    :class:`Router`), TCP keepalive on, a reset or a broken pipe the end of it, and closed afterwards."""
    task = asyncio.current_task()
    if task is not None:
        connections.add(task)
    peer = writer.get_extra_info("peername")
    keepalive(writer)
    try:
        yield peer
    except (ConnectionError, OSError) as error:
        log.debug("connection from %s ended: %s", peer, error)
    finally:
        await close(writer)
        if task is not None:
            connections.discard(task)


async def read_opening(reader: asyncio.StreamReader) -> tuple[bytes, Hello | connect.Request | None]:
    """What a connection opens with: its ClientHello (:func:`read_hello`) or its CONNECT request
    (:func:`.connect.read_request`), and the bytes read; (bytes, None) when the client closed first."""
    try:
        start = await reader.readexactly(RECORD_HEADER)
    except asyncio.IncompleteReadError as ended:
        return ended.partial, None
    if connect.opens_request(start):
        return start, await connect.read_request(reader, start)
    return await read_hello(reader, start)


async def read_hello(reader: asyncio.StreamReader, data: bytes = b"") -> tuple[bytes, Hello | None]:
    """The bytes read (``data``, already read, first) and the ClientHello they start with; (bytes, None)
    when the client closed first.

    Reads exactly what the ClientHello's records need (:func:`.scan` bounds them), so whatever the client
    sent after it stays in ``reader`` for the splice.
    """
    while True:
        found = scan(data)
        if isinstance(found, Hello):
            return data, found
        try:
            data += await reader.readexactly(found)
        except asyncio.IncompleteReadError as ended:
            return data + ended.partial, None


async def splice(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Copy a to b and b to a until both directions ended; a failing direction ends both."""
    tasks = [
        asyncio.ensure_future(_pipe(a_reader, b_writer)),
        asyncio.ensure_future(_pipe(b_reader, a_writer)),
    ]
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in pending:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                await task
    finally:
        for task in tasks:
            task.cancel()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Bytes from ``source`` to ``sink``; at the source's end, the sink's write side is ended (half-close)."""
    while True:
        chunk = await source.read(CHUNK)
        if not chunk:
            break
        sink.write(chunk)
        await sink.drain()
    if sink.can_write_eof() and not sink.is_closing():
        sink.write_eof()


async def _answer(writer: asyncio.StreamWriter, response: bytes) -> None:
    """Send an answer the connection ends with."""
    writer.write(response)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def keepalive(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)


async def close(writer: asyncio.StreamWriter) -> None:
    """Close, letting what is buffered go out for :data:`CLOSE_GRACE` seconds; then drop it (a peer that
    reads nothing does not keep its connection's task forever)."""
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), CLOSE_GRACE)
    except TimeoutError:
        writer.transport.abort()
    except (ConnectionError, OSError):
        pass
