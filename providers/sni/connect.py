"""HTTP/1.1 CONNECT (RFC 9110 9.3.6) as the router and the nodes' proxies speak it: a control plane named
by a request instead of a TLS server name.

A client that cannot send a server name (it dials an address) opens its connection with::

    CONNECT api.c1.vdc.k8s.example.com:443 HTTP/1.1\\r\\n
    Host: api.c1.vdc.k8s.example.com:443\\r\\n
    \\r\\n

and, once answered ``HTTP/1.1 200 Connection established``, sends its TLS as it would have to the
control plane itself. The port is the router's own (what the client would have dialled); only the host
chooses the control plane. Anything else (a header section over :data:`MAX_REQUEST` bytes, another
method, a target that is not ``host:port``, another protocol version) is a :class:`BadRequest`, answered
400: what arrives is a stranger's input on a public port.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from http import HTTPStatus

from providers.sni.hello import is_host_name

METHOD = b"CONNECT "
END = b"\r\n\r\n"
MAX_REQUEST = 4096  # the request line and its headers; a proxy's request is a tenth of it


class BadRequest(ValueError):
    """The opening is not a CONNECT request this router takes; says what was wrong."""


@dataclass(frozen=True)
class Request:
    """A CONNECT request's target."""

    host: str
    port: int


def opens_request(start: bytes) -> bool:
    """Whether a connection's first bytes begin a CONNECT request (a TLS record begins with 22)."""
    return METHOD.startswith(start[: len(METHOD)]) and bool(start)


async def read_request(reader: asyncio.StreamReader, start: bytes = b"") -> Request:
    """The CONNECT request that ``start`` (its first bytes, already read) begins, read to its blank line
    and no further, so what the client sends after it stays in ``reader``."""
    try:
        rest = await reader.readuntil(END)
    except asyncio.IncompleteReadError:
        raise BadRequest("the connection ended inside its CONNECT request") from None
    except asyncio.LimitOverrunError:
        raise BadRequest(f"a CONNECT request longer than {MAX_REQUEST} bytes") from None
    data = start + rest
    if len(data) > MAX_REQUEST:
        raise BadRequest(f"a CONNECT request longer than {MAX_REQUEST} bytes")
    return parse(data)


def parse(data: bytes) -> Request:
    """The target of a whole CONNECT request (its request line and headers, to the blank line)."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest("a CONNECT request that is not ASCII") from None
    line = text.split("\r\n", 1)[0]
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "CONNECT":
        raise BadRequest(f"not a CONNECT request line: {line[:100]!r}")
    target, version = parts[1], parts[2]
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest(f"not HTTP/1.x: {version[:20]!r}")
    host, colon, port = target.rpartition(":")
    host = host.lower()
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadRequest(f"the target is not host:port: {target[:100]!r}")
    if not is_host_name(host):
        raise BadRequest(f"the target's host is not a DNS name: {host[:100]!r}")
    return Request(host, int(port))


def request(host: str, port: int) -> bytes:
    """The CONNECT request for ``host:port``."""
    target = f"{host}:{port}"
    return f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode("ascii")


def response(status: int, reason: str = "") -> bytes:
    """The answer to a CONNECT request: 200 opens the tunnel; any other ends the connection, with
    ``reason`` as its plain-text body."""
    phrase = "Connection established" if status == 200 else HTTPStatus(status).phrase
    if status == 200:
        return f"HTTP/1.1 200 {phrase}\r\n\r\n".encode("ascii")
    body = (reason or phrase).encode("utf-8") + b"\n"
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, str]:
    """A CONNECT answer's status and its reason (its body, for a refusal), read to its header section's
    end (and, for a refusal, the body); raises :class:`BadRequest` for what is not an HTTP/1.x answer."""
    try:
        head = await reader.readuntil(END)
    except asyncio.IncompleteReadError:
        raise BadRequest("the router closed the connection without answering") from None
    except asyncio.LimitOverrunError:
        raise BadRequest("the router's answer is too long") from None
    line = head.split(b"\r\n", 1)[0].decode("ascii", "replace")
    parts = line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise BadRequest(f"not an HTTP answer: {line[:100]!r}")
    status = int(parts[1])
    if status == 200:
        return status, ""
    body = await reader.read(MAX_REQUEST)
    return status, body.decode("utf-8", "replace").strip() or line
