"""The ClientHello parser: real ClientHellos of Python's OpenSSL, cut and re-framed any way, and inputs a
stranger could send, which it refuses with MalformedHello and nothing else."""

from __future__ import annotations

import socket
import ssl
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.sni.hello import MAX_HELLO, MAX_RECORDS, Hello, MalformedHello, client_hello, scan


def openssl_hello(name: str | None, *, tls12: bool = False) -> bytes:
    """The first flight of Python's TLS client for ``name``, as it would send it."""
    context = ssl.create_default_context()
    context.check_hostname = name is not None
    if name is None:
        context.verify_mode = ssl.CERT_NONE
    if tls12:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    connection = context.wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        connection.do_handshake()
    return outgoing.read()


def records(message: bytes, sizes: list[int]) -> bytes:
    """``message`` (a handshake message) framed in records of ``sizes`` bytes, the rest in the last."""
    out, offset = b"", 0
    for size in [*sizes, len(message)]:
        fragment = message[offset : offset + size]
        if not fragment:
            break
        out += bytes([22, 3, 1]) + struct.pack("!H", len(fragment)) + fragment
        offset += len(fragment)
    return out


def message_of(flight: bytes) -> bytes:
    """The handshake message of a one-record first flight."""
    return flight[5 : 5 + struct.unpack("!H", flight[3:5])[0]]


def built(extensions: list[tuple[int, bytes]], *, suites: bytes = b"\x13\x01") -> bytes:
    """A hand-made one-record ClientHello with these extensions (type, data)."""
    body = b"\x03\x03" + bytes(32) + b"\x00" + struct.pack("!H", len(suites)) + suites + b"\x01\x00"
    block = b"".join(struct.pack("!HH", kind, len(data)) + data for kind, data in extensions)
    body += struct.pack("!H", len(block)) + block
    message = b"\x01" + len(body).to_bytes(3, "big") + body
    return records(message, [])


def sni(*names: tuple[int, bytes]) -> bytes:
    entries = b"".join(bytes([kind]) + struct.pack("!H", len(value)) + value for kind, value in names)
    return struct.pack("!H", len(entries)) + entries


def is_address(name: str) -> bool:
    """Whether TLS clients take ``name`` for an address (they send no server name for one): as the C
    library reads one, or as OpenSSL does (four decimal numbers to 255, leading zeros too: ``0.0.0.08``)."""
    labels = name.split(".")
    if len(labels) == 4 and all(label.isdigit() and int(label) <= 255 for label in labels):
        return True
    try:
        socket.inet_aton(name)
    except OSError:
        return False
    return True


NAMES = st.from_regex(
    r"\A[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?){0,4}\Z"
).filter(lambda name: not is_address(name))
TLS13 = openssl_hello("web.demo.k8s.example.com")


def test_a_tls13_client_hello_names_its_host_and_its_length() -> None:
    assert client_hello(TLS13) == Hello("web.demo.k8s.example.com", len(TLS13))


def test_a_tls12_client_hello_names_its_host_too() -> None:
    flight = openssl_hello("konnectivity.web.demo.example.com", tls12=True)
    assert client_hello(flight) == Hello("konnectivity.web.demo.example.com", len(flight))


def test_a_client_hello_without_a_server_name_has_none() -> None:
    flight = openssl_hello(None)
    assert client_hello(flight) == Hello(None, len(flight))


def test_the_name_is_lowercased() -> None:
    assert client_hello(built([(0, sni((0, b"Web.Demo.Example.COM")))])) == Hello(
        "web.demo.example.com", len(built([(0, sni((0, b"Web.Demo.Example.COM")))]))
    )


def test_bytes_after_the_client_hello_are_not_its_own() -> None:
    assert client_hello(TLS13 + b"\x17\x03\x03") == Hello("web.demo.k8s.example.com", len(TLS13))


@settings(max_examples=60, deadline=None)
@given(name=NAMES)
def test_any_host_name_python_sends_is_read_back(name: str) -> None:
    flight = openssl_hello(name)
    assert client_hello(flight) == Hello(name, len(flight))


@given(cuts=st.lists(st.integers(1, 600), max_size=MAX_RECORDS - 1))
def test_the_client_hello_may_span_records_of_any_size(cuts: list[int]) -> None:
    flight = records(message_of(TLS13), cuts)
    assert client_hello(flight) == Hello("web.demo.k8s.example.com", len(flight))


@given(data=st.data())
def test_every_strict_prefix_asks_for_more_and_never_more_than_completes_the_record(
    data: st.DataObject,
) -> None:
    flight = records(message_of(TLS13), data.draw(st.lists(st.integers(1, 600), max_size=MAX_RECORDS - 1)))
    cut = data.draw(st.integers(0, len(flight) - 1))
    wanted = scan(flight[:cut])
    assert isinstance(wanted, int)
    assert 0 < wanted <= len(flight) - cut


@given(junk=st.binary(max_size=300))
def test_arbitrary_bytes_are_refused_as_malformed_or_wait_for_more(junk: bytes) -> None:
    try:
        result = client_hello(junk)
    except MalformedHello:
        return
    assert result is None or isinstance(result, Hello)


@given(position=st.integers(0, len(TLS13) - 1), value=st.integers(0, 255))
def test_a_client_hello_with_any_byte_changed_parses_or_is_refused_as_malformed(
    position: int, value: int
) -> None:
    changed = TLS13[:position] + bytes([value]) + TLS13[position + 1 :]
    try:
        result = client_hello(changed)
    except MalformedHello:
        return
    assert result is None or isinstance(result, Hello)


@pytest.mark.parametrize(
    ("flight", "why"),
    [
        (b"GET / HTTP/1.1\r\nHost: web\r\n\r\n", "does not start with a TLS handshake record"),
        (b"\x80\x2e\x01\x03\x01", "does not start with a TLS handshake record"),  # an SSLv2 hello
        (b"\x16\x02\x00\x00\x10", "major version 2"),
        (b"\x16\x03\x01\x00\x00", "record of 0 bytes"),
        (b"\x16\x03\x01\x40\x01", "record of 16385 bytes"),
        (b"\x16\x03\x01\x00\x04\x02\x00\x00\x00", "type 2, not a ClientHello"),
        (b"\x16\x03\x01\x00\x04\x01\x01\x00\x00", f"ClientHello of 65536 bytes \\(at most {MAX_HELLO}\\)"),
    ],
)
def test_what_cannot_be_a_client_hello_is_refused_at_once(flight: bytes, why: str) -> None:
    with pytest.raises(MalformedHello, match=why):
        client_hello(flight)


def test_a_record_of_another_kind_inside_the_client_hello_is_refused() -> None:
    message = message_of(TLS13)
    flight = records(message[:100], []) + b"\x17\x03\x03\x00\x05hello"
    with pytest.raises(MalformedHello, match="cut by a TLS handshake record"):
        client_hello(flight)


def test_a_client_hello_in_too_many_records_is_refused() -> None:
    flight = records(message_of(TLS13), [1] * MAX_RECORDS)
    with pytest.raises(MalformedHello, match=f"more than {MAX_RECORDS} records"):
        client_hello(flight)


@pytest.mark.parametrize(
    ("extensions", "why"),
    [
        ([(0, sni((0, b"a.example"))), (0, sni((0, b"b.example")))], "extension 0 twice"),
        ([(0, sni((0, b"a.example"), (0, b"b.example")))], "two host names"),
        ([(0, sni((1, b"a.example")))], "without a host name"),
        ([(0, sni((0, "bücher.example".encode())))], "not ASCII"),
        ([(0, sni((0, b"a..example")))], "not a DNS name"),
        ([(0, sni((0, b"-a.example")))], "not a DNS name"),
        ([(0, sni((0, b"a.example\x00.evil")))], "not a DNS name"),
        ([(0, sni((0, b"a" * 64 + b".example")))], "not a DNS name"),
        ([(0, sni((0, b"a.example")) + b"\x00")], "not one list of names"),
        ([(0, b"\x00\x09\x00\x00\x05a")], "runs past the end"),
    ],
)
def test_a_server_name_extension_against_the_rules_is_refused(
    extensions: list[tuple[int, bytes]], why: str
) -> None:
    with pytest.raises(MalformedHello, match=why):
        client_hello(built(extensions))


def test_cipher_suites_of_an_odd_length_are_refused() -> None:
    with pytest.raises(MalformedHello, match="cipher suites of 3 bytes"):
        client_hello(built([], suites=b"\x13\x01\x13"))


def test_bytes_after_the_handshake_message_in_its_record_are_refused() -> None:
    message = message_of(TLS13) + b"\x00"
    with pytest.raises(MalformedHello, match="bytes after the ClientHello"):
        client_hello(records(message, []))
