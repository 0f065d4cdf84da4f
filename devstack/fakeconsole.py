"""A VM's VNC console that stays open, where fakepve's ends after its first picture.

fakepve answers ``vncproxy`` (websocket=1) and ``vncwebsocket`` with RFB 3.8 and VNC authentication,
then sends one screen and hangs up: noVNC draws it and at once shows the console as disconnected. Here
the server keeps the session as a VNC server does: it answers every full FramebufferUpdateRequest with
the VM's screen (raw encoding, 32 bits per pixel, red at the shift the client's SetPixelFormat asks:
noVNC asks for 0, others keep the server's 16), leaves incremental ones unanswered (nothing ever
changes), and reads key, pointer and clipboard events until the client leaves. The screen is
``vm.screen`` (width, height, RGBX bytes) when a test sets one, else a plain picture of 640x400.
``vm.console_sessions`` counts the sessions that passed authentication; ``vm.console_keys`` keeps the
last key events clients sent (pressed or released, keysym).
"""

from __future__ import annotations

import hmac
import secrets
import struct
from typing import Any

import aiohttp
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

RFB = b"RFB 003.008\n"
DEFAULT_SIZE = (640, 400)
# How many key events a VM keeps.
KEPT_KEYS = 1000
# pveproxy relays what it reads from the VM's VNC socket in binary frames of at most 128 KiB
# (PVE::APIServer::AnyEvent's websocket_proxy): a full screen reaches the client as many frames.
PROXY_FRAME = 128 * 1024
_screens: dict[tuple[int, int], bytes] = {}


def picture(width: int, height: int) -> bytes:
    """A dark screen with a lighter band and a blue box: something to see in a screenshot (RGBX)."""
    if (width, height) in _screens:
        return _screens[(width, height)]
    dark, band, box = b"\x0f\x17\x2a\x00", b"\x1e\x29\x3b\x00", b"\x03\x84\xc7\x00"
    rows = []
    for y in range(height):
        base = band if height // 8 <= y < height // 8 + 24 else dark
        row = bytearray(base * width)
        if height // 3 <= y < height // 3 + height // 4:
            start, end = width // 4, width // 4 + width // 3
            row[start * 4 : end * 4] = box * (end - start)
        rows.append(bytes(row))
    _screens[(width, height)] = b"".join(rows)
    return _screens[(width, height)]


def swapped(pixels: bytes) -> bytes:
    """RGBX as BGRX (or back)."""
    out = bytearray(pixels)
    out[0::4], out[2::4] = pixels[2::4], pixels[0::4]
    return bytes(out)


def vnc_response(secret: str, challenge: bytes) -> bytes:
    key = (secret.encode() + b"\0" * 8)[:8]
    key = bytes(int(f"{byte:08b}"[::-1], 2) for byte in key)
    encryptor = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()  # noqa: S305 - RFB's DES challenge
    return encryptor.update(challenge) + encryptor.finalize()


class _Client:
    """Exact byte counts from the client's websocket frames."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.buffer = b""

    async def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            frame = await self.ws.receive()
            if frame.type != aiohttp.WSMsgType.BINARY:
                raise ConnectionError("the client went away")
            self.buffer += frame.data
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


def _region(
    screen: tuple[int, int, bytes], x: int, y: int, w: int, h: int
) -> tuple[int, int, int, int, bytes]:
    width, height, pixels = screen
    x, y = min(x, width), min(y, height)
    w, h = min(w, width - x), min(h, height - y)
    if (x, y, w, h) == (0, 0, width, height):
        return x, y, w, h, pixels
    stride = width * 4
    rows = (pixels[row * stride + x * 4 : row * stride + (x + w) * 4] for row in range(y, y + h))
    return x, y, w, h, b"".join(rows)


class ConsoleScreen:
    """A mixin placed before ``FakePve`` in the harness's bases (``devstack.fakezones.HarnessPve``)."""

    async def _rfb(self, ws: Any, vm: Any, secret: str) -> None:
        client = _Client(ws)
        await ws.send_bytes(RFB)
        if await client.read(12) != RFB:
            return
        await ws.send_bytes(b"\x01\x02")  # one security type: VNC authentication
        if await client.read(1) != b"\x02":
            return
        challenge = secrets.token_bytes(16)
        await ws.send_bytes(challenge)
        if not hmac.compare_digest(await client.read(16), vnc_response(secret, challenge)):
            reason = b"authentication failed"
            await ws.send_bytes(struct.pack(">II", 1, len(reason)) + reason)
            return
        await ws.send_bytes(struct.pack(">I", 0))
        await client.read(1)  # ClientInit
        vm.console_sessions = getattr(vm, "console_sessions", 0) + 1
        screen = getattr(vm, "screen", None)
        if not (
            isinstance(screen, tuple) and len(screen) == 3 and len(screen[2]) == screen[0] * screen[1] * 4
        ):
            screen = (*DEFAULT_SIZE, picture(*DEFAULT_SIZE))
        name = str(vm.name).encode()
        # 32 bits per pixel, depth 24, little-endian, true colour, red/green/blue at 16/8/0.
        init = struct.pack(
            ">HHBBBBHHHBBBxxxI", screen[0], screen[1], 32, 24, 0, 1, 255, 255, 255, 16, 8, 0, len(name)
        )
        await ws.send_bytes(init + name)
        rgbx = screen
        screen = (screen[0], screen[1], swapped(screen[2]))  # red at 16, as ServerInit says
        while True:
            (kind,) = await client.read(1)
            if kind == 0:  # SetPixelFormat: 32 bits per pixel; red at shift 0 (noVNC) or 16
                red_shift = (await client.read(19))[13]
                screen = rgbx if red_shift == 0 else (rgbx[0], rgbx[1], swapped(rgbx[2]))
            elif kind == 2:  # SetEncodings
                (count,) = struct.unpack(">xH", await client.read(3))
                await client.read(4 * count)
            elif kind == 3:  # FramebufferUpdateRequest
                incremental, x, y, w, h = struct.unpack(">BHHHH", await client.read(9))
                if not incremental:
                    x, y, w, h, data = _region(screen, x, y, w, h)
                    update = struct.pack(">BxHHHHHi", 0, 1, x, y, w, h, 0) + data
                    view = memoryview(update)
                    for start in range(0, len(view), PROXY_FRAME):
                        await ws.send_bytes(view[start : start + PROXY_FRAME])
            elif kind == 4:  # KeyEvent: kept on the VM (pressed or released, keysym), for the tests
                down, keysym = struct.unpack(">BxxI", await client.read(7))
                keys = getattr(vm, "console_keys", [])
                vm.console_keys = [*keys[-KEPT_KEYS + 1 :], (bool(down), keysym)]
            elif kind == 5:  # PointerEvent
                await client.read(5)
            elif kind == 6:  # ClientCutText
                (length,) = struct.unpack(">xxxI", await client.read(7))
                await client.read(length)
            else:
                return
