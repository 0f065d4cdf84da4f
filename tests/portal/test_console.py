"""The browser console end to end: the console page's ticket, the websocket through the orchestrator, the
agent of the VM's node, the fake Proxmox's VNC server; who may open one, and how many.

The socket is the world's orchestrator's, reached with the browser's session cookie and Origin; the RFB bytes
are the ones noVNC would exchange.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import struct
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
import requests
from django.core import signing
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin, Subprotocol

from devstack.net import free_port
from devstack.world import World
from orchestrator.services.console import TICKET_SALT
from portal.auth import EXPIRATION_KEY
from tests.portal.sessionkit import COOKIE, login, portal_session, set_portal_session

RFB = b"RFB 003.008\n"
WEB_1 = ("zone-a", 100)  # devstack/seed.py: alice's VM (VDC demo), running
SOCKET = re.compile(r'data-socket="([^"]+)"')


def console_page(world: World, session: requests.Session, vm: tuple[str, int] = WEB_1) -> requests.Response:
    zone, vmid = vm
    return session.get(f"{world.url}/vdc/demo/console/{zone}/{vmid}/", timeout=30)


def socket_path(world: World, session: requests.Session) -> str:
    page = console_page(world, session)
    assert page.status_code == 200, page.text[:500]
    found = SOCKET.search(page.text)
    assert found is not None
    return html.unescape(found.group(1))


@contextmanager
def console(
    world: World, session: requests.Session | None, path: str, url: str | None = None
) -> Iterator[ClientConnection]:
    cookie = session.cookies.get(COOKIE, domain=world.cfg.orchestrator_host) if session else None
    base = url or world.url
    with connect(
        base.replace("http", "ws", 1) + path,
        additional_headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {},
        origin=Origin(base),
        subprotocols=[Subprotocol("binary")],
        open_timeout=15,
    ) as socket:
        yield socket


class Rfb:
    """Exact byte counts from the socket (its frames need not follow RFB's messages)."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.buffer = b""

    def read(self, size: int, timeout: float = 15) -> bytes:
        while len(self.buffer) < size:
            frame = self.socket.recv(timeout=timeout)
            assert isinstance(frame, bytes), f"a text frame on the console: {frame!r}"
            self.buffer += frame
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


def handshake(socket: ClientConnection) -> bytes:
    """noVNC's side of the RFB handshake through ClientInit; answers the name in the VM's ServerInit."""
    rfb = Rfb(socket)
    assert rfb.read(12) == RFB
    socket.send(RFB)
    assert rfb.read(2) == b"\x01\x01"  # one security type, None: the Proxmox ticket stayed on the node
    socket.send(b"\x01")
    assert rfb.read(4) == b"\x00\x00\x00\x00"
    socket.send(b"\x01")  # ClientInit
    header = rfb.read(24)
    return rfb.read(int.from_bytes(header[20:24], "big"))


def refused(world: World, session: requests.Session | None, path: str) -> int:
    with pytest.raises(InvalidStatus) as caught, console(world, session, path):
        pass
    return caught.value.response.status_code


def closed(socket: ClientConnection, timeout: float = 15) -> tuple[int, str]:
    """The close code, and what the app said in its text frame before closing."""
    said, close = "", None
    try:
        while True:
            frame = socket.recv(timeout=timeout)
            if isinstance(frame, str):
                said = json.loads(frame)["message"]
    except ConnectionClosed as exc:
        close = exc.rcvd
    assert close is not None
    return close.code, said


def test_alice_opens_her_vms_console_and_speaks_rfb_with_its_vnc_server(
    world: World, alice: requests.Session
) -> None:
    page = console_page(world, alice)
    assert page.status_code == 200
    assert "/static/portal/console.js" in page.text  # noVNC is served by the app, never a CDN
    assert "PVEVNC" not in page.text  # nothing of Proxmox reaches the page
    assert ":8006" not in page.text

    with console(world, alice, html.unescape(SOCKET.search(page.text).group(1))) as socket:  # type: ignore[union-attr]
        assert socket.subprotocol == "binary"
        assert handshake(socket) == b"web-1"


def test_bob_cannot_open_alices_vms_console_nor_use_her_ticket(
    world: World, alice: requests.Session, bob: requests.Session
) -> None:
    assert console_page(world, bob).status_code == 404  # her VDC is not his: not found, as if missing
    mine = bob.get(f"{world.url}/vdc/other/console/zone-a/100/", timeout=30)
    assert mine.status_code == 404  # her VM, asked through his own VDC
    assert refused(world, bob, socket_path(world, alice)) == 403


def test_a_forged_an_altered_and_an_expired_ticket_are_refused(world: World, alice: requests.Session) -> None:
    path = socket_path(world, alice)
    ticket = path.removeprefix("/ws/console/").removesuffix("/")
    payload = signing.loads(ticket, salt=TICKET_SALT)

    class Past(signing.TimestampSigner):
        def timestamp(self) -> str:
            return signing.b62_encode(int(time.time()) - 3600)

    expired = Past(salt=TICKET_SALT).sign_object(payload)
    altered = signing.dumps({**payload, "vm": "zone-a/102"}, salt=TICKET_SALT)[:-4] + ticket[-4:]
    forged = signing.TimestampSigner(key="not-the-secret-key", salt=TICKET_SALT).sign_object(payload)

    for bad in (expired, altered, forged, "nonsense"):
        assert refused(world, alice, f"/ws/console/{bad}/") == 403
    assert refused(world, None, path) == 403  # and the genuine one, without the session


def test_a_ticket_opens_one_console_and_the_second_open_with_it_is_refused_in_words(
    world: World, alice: requests.Session
) -> None:
    path = socket_path(world, alice)
    with console(world, alice, path) as first:
        assert handshake(first) == b"web-1"
    with console(world, alice, path) as second:  # the same page's ticket, well within its life
        code, said = closed(second)
    assert code == 4403
    assert said == (
        "this console ticket was used already: a ticket opens one console; reload the page to open another"
    )


def test_the_consoles_past_the_limit_per_vm_are_refused_in_words(
    world: World, alice: requests.Session
) -> None:
    with ExitStack() as stack:
        for _ in range(2):  # FLEXPLANE_CONSOLE_MAX_PER_VM's default
            socket = stack.enter_context(console(world, alice, socket_path(world, alice)))
            assert handshake(socket) == b"web-1"
        with console(world, alice, socket_path(world, alice)) as third:
            code, said = closed(third)
        assert code == 4429
        assert (
            said == "VM zone-a/100 already has 2 consoles open, the most allowed: close one to open another"
        )
    # Closed, they hand their slots back.
    with console(world, alice, socket_path(world, alice)) as again:
        assert handshake(again) == b"web-1"


def replica(world: World, name: str, env: dict[str, str]) -> Iterator[str]:
    """Another orchestrator of the world's, with these settings, while the fixture lasts: its URL."""
    host = world.cfg.orchestrator_host
    port, https_port = free_port(host), free_port(host)
    spawned = world.spawn_orchestrator(name, port, https_port, env)
    yield f"http://{host}:{port}"
    spawned.stop()


@pytest.fixture(scope="module")
def impatient(world: World) -> Iterator[str]:
    """A replica that closes consoles after one second without input: its URL."""
    yield from replica(world, "orchestrator-console-idle", {"FLEXPLANE_CONSOLE_IDLE_TIMEOUT": "1"})


def test_an_idle_console_is_closed(world: World, alice: requests.Session, impatient: str) -> None:
    page = alice.get(f"{impatient}/vdc/demo/console/zone-a/100/", timeout=30)
    path = html.unescape(SOCKET.search(page.text).group(1))  # type: ignore[union-attr]
    with console(world, alice, path, url=impatient) as socket:
        handshake(socket)
        code, said = closed(socket, timeout=10)
    assert code == 4408
    assert said == "closed after 1 s without input"


def test_an_update_larger_than_a_websocket_message_arrives_whole(
    world: World, alice: requests.Session
) -> None:
    width, height = 800, 600  # 1.8 MiB in raw encoding: more than the console sends in one message
    pixels = bytes(range(256)) * (width * height * 4 // 256)
    pve = world.fakes["zone-a"].pve
    vm = next(vm for vm in pve.vms if vm.vmid == WEB_1[1])

    def show(screen: object) -> None:
        vm.screen = screen

    world.fakes.on_loop(show, (width, height, pixels))
    try:
        with console(world, alice, socket_path(world, alice)) as socket:
            rfb = Rfb(socket)
            assert rfb.read(12) == RFB
            socket.send(RFB)
            rfb.read(2)
            socket.send(b"\x01")
            rfb.read(4)
            socket.send(b"\x01")
            header = rfb.read(24)
            rfb.read(int.from_bytes(header[20:24], "big"))
            # noVNC's pixel format (red at shift 0: the screen's own byte order), then a full update.
            socket.send(
                b"\x00\x00\x00\x00" + struct.pack(">BBBBHHHBBBxxx", 32, 24, 0, 1, 255, 255, 255, 0, 8, 16)
            )
            socket.send(struct.pack(">BBHHHH", 3, 0, 0, 0, width, height))
            assert struct.unpack(">BxHHHHHi", rfb.read(16)) == (0, 1, 0, 0, width, height, 0)
            assert rfb.read(width * height * 4, timeout=30) == pixels
    finally:
        world.fakes.on_loop(show, None)


def test_a_console_ends_with_its_session(world: World) -> None:
    session = login(world, "alice")[0]
    path = socket_path(world, session)
    store = portal_session(session, world)
    store[EXPIRATION_KEY] = time.time() + 4  # the session's short life runs out in four seconds
    store.save()
    set_portal_session(session, world, store)

    with console(world, session, path) as socket:
        assert handshake(socket) == b"web-1"
        code, said = closed(socket, timeout=10)

    assert code == 4401
    assert said == "your session ended: reload the page to sign in again"


@pytest.fixture(scope="module")
def one_each(world: World) -> Iterator[str]:
    """A replica that lets a user open one console at a time: its URL."""
    yield from replica(world, "orchestrator-console-per-user", {"FLEXPLANE_CONSOLE_MAX_PER_USER": "1"})


def test_a_users_consoles_past_their_limit_are_refused_in_words(
    world: World, alice: requests.Session, one_each: str
) -> None:
    def path_of(vm: str) -> str:
        page = alice.get(f"{one_each}/vdc/demo/console/{vm}/", timeout=30)
        return html.unescape(SOCKET.search(page.text).group(1))  # type: ignore[union-attr]

    with console(world, alice, path_of("zone-a/100"), url=one_each) as first:
        assert handshake(first) == b"web-1"
        with console(world, alice, path_of("zone-b/100"), url=one_each) as second:  # another VM of hers
            code, said = closed(second)
    assert code == 4429
    assert said == "you already have 1 console open, the most allowed: close one to open another"


def test_keys_keep_a_console_open_and_screen_requests_do_not(
    world: World, alice: requests.Session, impatient: str
) -> None:
    page = alice.get(f"{impatient}/vdc/demo/console/zone-a/100/", timeout=30)
    path = html.unescape(SOCKET.search(page.text).group(1))  # type: ignore[union-attr]
    key = struct.pack(">BBxxI", 4, 1, 0x61)
    incremental = struct.pack(">BBHHHH", 3, 1, 0, 0, 1, 1)  # the fake answers none: nothing changes
    with console(world, alice, path, url=impatient) as socket:
        handshake(socket)
        started = time.monotonic()
        while time.monotonic() - started < 2.5:  # past the one-second idle limit, typing
            socket.send(key)
            time.sleep(0.3)
        assert socket.state.name == "OPEN"
        typed = time.monotonic()
        with contextlib.suppress(ConnectionClosed):
            while time.monotonic() - typed < 3:  # then only asking for screen updates
                socket.send(incremental)
                time.sleep(0.3)
        code, _ = closed(socket, timeout=10)
    assert code == 4408
