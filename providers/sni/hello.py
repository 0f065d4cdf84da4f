"""The TLS ClientHello's server name, read from the first bytes a client sends, without answering it.

A TLS connection opens with the client's ClientHello (RFC 8446 4.1.2, RFC 5246 7.4.1.2), in one or more
handshake records; its ``server_name`` extension (RFC 6066 3) names the host the client dialled. That is
all the router needs: it reads these bytes, takes the name, and hands every byte on unchanged to the
backend, which answers the handshake itself (the router never holds a key).

What arrives is a stranger's input on a public port, so nothing in it is trusted: every length is checked
against what is there and against its bound, a record that is not a handshake ends it, a message that is
not a ClientHello ends it, an extension repeated or overrunning ends it, and so do trailing bytes. Any of
these raises :class:`MalformedHello`; :func:`client_hello` never raises anything else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RECORD_HEADER = 5
HANDSHAKE = 22  # the record's content type
CLIENT_HELLO = 1  # the handshake message's type
MAX_RECORD = 2**14  # RFC 8446 5.1: a plaintext record carries at most 16 KiB
# A ClientHello's bound: ~500 bytes is usual, ~1.8 KiB with a post-quantum key share; 16 KiB leaves room
# for many extensions and no room to make the router buffer without end.
MAX_HELLO = 2**14
# Records it may span: a sender fragments only at the record's limit, so 2 hold any ClientHello within
# MAX_HELLO; more would only make the router parse tiny records.
MAX_RECORDS = 4
SERVER_NAME = 0  # the extension's type
HOST_NAME = 0  # the name's type in server_name
# RFC 6066: a DNS host name, ASCII, no trailing dot. Labels of letters, digits and hyphens (and the
# underscore some internal names carry), each 1-63 long.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


class MalformedHello(ValueError):
    """The bytes cannot be (the start of) a TLS ClientHello; says what was wrong."""


@dataclass(frozen=True)
class Hello:
    """A complete ClientHello: the name it asks for (None without ``server_name``) and how many bytes of
    the stream it took (the records that carried it, all of which go to the backend as they came)."""

    server_name: str | None
    length: int


def client_hello(data: bytes) -> Hello | None:
    """The ClientHello at the start of ``data``; None while more bytes are needed to complete it.

    Raises :class:`MalformedHello` as soon as the bytes so far cannot begin a ClientHello within
    :data:`MAX_HELLO` and :data:`MAX_RECORDS`, so a caller that reads until this answers reads a
    bounded amount.
    """
    found = scan(data)
    return found if isinstance(found, Hello) else None


def scan(data: bytes) -> Hello | int:
    """:func:`client_hello`, or while incomplete how many more bytes it needs at least (more than 0):
    a reader that reads exactly that many parses each record once, whatever sizes the bytes come in."""
    message = bytearray()
    offset = 0
    for record in range(MAX_RECORDS + 1):
        if len(message) >= 4:
            wanted = 4 + int.from_bytes(message[1:4], "big")
            if len(message) >= wanted:
                if len(message) > wanted:
                    raise MalformedHello("bytes after the ClientHello in its record")
                return Hello(server_name(bytes(message[4:wanted])), offset)
        if record == MAX_RECORDS:
            break
        header = data[offset : offset + RECORD_HEADER]
        if header:
            _check_record_header(header, first=offset == 0)
        if len(header) < RECORD_HEADER:
            return RECORD_HEADER - len(header)
        length = int.from_bytes(header[3:5], "big")
        if length == 0 or length > MAX_RECORD:
            raise MalformedHello(f"a handshake record of {length} bytes")
        fragment = data[offset + RECORD_HEADER : offset + RECORD_HEADER + length]
        _check_message_start(message + fragment)
        if len(fragment) < length:
            return length - len(fragment)
        message += fragment
        offset += RECORD_HEADER + length
    raise MalformedHello(f"a ClientHello in more than {MAX_RECORDS} records")


def _check_record_header(header: bytes, *, first: bool) -> None:
    """What of a record's header has arrived is a handshake record's (content type, legacy version)."""
    if header[0] != HANDSHAKE:
        what = "the connection does not start with" if first else "the ClientHello is cut by"
        raise MalformedHello(f"{what} a TLS handshake record (content type {header[0]})")
    if len(header) >= 2 and header[1] != 3:
        raise MalformedHello(f"a record of TLS major version {header[1]}")


def _check_message_start(message: bytes | bytearray) -> None:
    """The handshake message's header so far: a ClientHello, of a length within :data:`MAX_HELLO`."""
    if message and message[0] != CLIENT_HELLO:
        raise MalformedHello(f"the first handshake message is of type {message[0]}, not a ClientHello")
    if len(message) >= 4:
        length = int.from_bytes(message[1:4], "big")
        if length > MAX_HELLO:
            raise MalformedHello(f"a ClientHello of {length} bytes (at most {MAX_HELLO})")


class _Reader:
    """Bounded reads over one ClientHello's body: every length is checked against what is left."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def take(self, count: int, what: str) -> bytes:
        if count > len(self.data) - self.offset:
            raise MalformedHello(f"{what} runs past the end of its enclosure")
        chunk = self.data[self.offset : self.offset + count]
        self.offset += count
        return chunk

    def number(self, size: int, what: str) -> int:
        return int.from_bytes(self.take(size, what), "big")

    def vector(self, size: int, what: str) -> bytes:
        """A vector with a ``size``-byte length prefix."""
        return self.take(self.number(size, f"the length of {what}"), what)

    @property
    def left(self) -> int:
        return len(self.data) - self.offset


def server_name(body: bytes) -> str | None:
    """The host name of a ClientHello's body (after its 4-byte header), lowercased; None without one."""
    hello = _Reader(body)
    hello.take(2 + 32, "the version and random")
    if len(hello.vector(1, "the session id")) > 32:
        raise MalformedHello("a session id longer than 32 bytes")
    suites = hello.vector(2, "the cipher suites")
    if not suites or len(suites) % 2:
        raise MalformedHello(f"cipher suites of {len(suites)} bytes")
    if not hello.vector(1, "the compression methods"):
        raise MalformedHello("no compression method")
    if not hello.left:
        return None  # TLS 1.2 allows a ClientHello without extensions
    extensions = _Reader(hello.vector(2, "the extensions"))
    if hello.left:
        raise MalformedHello("bytes after the extensions")
    seen: set[int] = set()
    name: str | None = None
    while extensions.left:
        kind = extensions.number(2, "an extension's type")
        data = extensions.vector(2, f"extension {kind}")
        if kind in seen:
            raise MalformedHello(f"extension {kind} twice")
        seen.add(kind)
        if kind == SERVER_NAME:
            name = _host_name(data)
    return name


def _host_name(data: bytes) -> str:
    """The ``host_name`` entry of a ``server_name`` extension (RFC 6066 3: one per type)."""
    outer = _Reader(data)
    names = _Reader(outer.vector(2, "the server name list"))
    if outer.left or not names.left:
        raise MalformedHello("a server_name extension that is not one list of names")
    found: str | None = None
    while names.left:
        kind = names.number(1, "a server name's type")
        value = names.vector(2, "a server name")
        if kind != HOST_NAME:
            continue
        if found is not None:
            raise MalformedHello("two host names in server_name")
        found = _valid_host(value)
    if found is None:
        raise MalformedHello("a server_name extension without a host name")
    return found


def _valid_host(value: bytes) -> str:
    try:
        host = value.decode("ascii").lower()
    except UnicodeDecodeError:
        raise MalformedHello("a host name that is not ASCII") from None
    if not is_host_name(host):
        raise MalformedHello(f"the host name {host[:80]!r} is not a DNS name")
    return host


def is_host_name(host: str) -> bool:
    """Whether ``host`` (lower case) is a DNS host name as RFC 6066 takes it."""
    return len(host) <= 253 and _HOST.fullmatch(host) is not None
