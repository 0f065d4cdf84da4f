"""What a browser's RFB bytes say about its user: input (keys, pointer, clipboard), or only the viewer
asking for screen updates.

The console's idle limit counts the user's input, not noVNC's traffic: a VM whose screen changes (a
blinking cursor) makes noVNC ask for updates all along, without anyone at the keyboard. The relay itself
never depends on this: it forwards every byte unchanged; this only watches them.

After the handshake the browser sends (RFC 6143, section 7.3, and the extensions noVNC speaks) messages
whose length their first bytes give. A message this does not know ends the watching: from then on every
byte counts as input, so a console is never closed as idle for want of understanding its client.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

# What the browser sends before its first message: its version (12), the security type it chose (1) and
# ClientInit (1); the agent's greeting offers security type None only, so nothing else comes between.
HANDSHAKE_BYTES = 14
INPUT_TYPES = frozenset({4, 5, 6})
QEMU = 255
QEMU_KEY = 0


def _u8(at: int) -> Callable[[bytes], int]:
    return lambda head: head[at]


def _u16(at: int) -> Callable[[bytes], int]:
    return lambda head: int(struct.unpack_from(">H", head, at)[0])


def _cut_text(head: bytes) -> int:
    (length,) = struct.unpack_from(">i", head, 4)  # negative: the extended clipboard's
    return 8 + abs(length)


# type: (bytes needed to know the length, the length from them)
_LENGTHS: dict[int, tuple[int, Callable[[bytes], int]]] = {
    0: (1, lambda head: 20),  # SetPixelFormat
    2: (4, lambda head: 4 + 4 * _u16(2)(head)),  # SetEncodings
    3: (1, lambda head: 10),  # FramebufferUpdateRequest
    4: (1, lambda head: 8),  # KeyEvent
    5: (1, lambda head: 6),  # PointerEvent
    6: (8, _cut_text),  # ClientCutText
    150: (1, lambda head: 10),  # EnableContinuousUpdates
    248: (9, lambda head: 9 + _u8(8)(head)),  # ClientFence
    250: (1, lambda head: 4),  # xvp
    251: (7, lambda head: 8 + 16 * _u8(6)(head)),  # SetDesktopSize
}


def _qemu_length(head: bytes) -> int | None:
    """A QEMU client message's length: its extended key event, or its audio messages; None: unknown."""
    if len(head) < 2:
        return -1
    if head[1] == QEMU_KEY:
        return 12
    if head[1] == 1:  # audio: enable, disable (4 bytes), set format (10)
        if len(head) < 4:
            return -1
        return 10 if _u16(2)(head) == 2 else 4
    return None


class InputWatcher:
    """Feed it the browser's bytes in order; it says whether they held the user's input."""

    def __init__(self) -> None:
        self.skip = HANDSHAKE_BYTES
        self.buffer = b""
        self.lost = False

    def feed(self, data: bytes) -> bool:
        if self.lost:
            return True
        if self.skip:
            taken = min(self.skip, len(data))
            self.skip -= taken
            data = data[taken:]
        self.buffer += data
        found = False
        while self.buffer:
            kind = self.buffer[0]
            if kind == QEMU:
                length = _qemu_length(self.buffer)
                is_input = len(self.buffer) > 1 and self.buffer[1] == QEMU_KEY
            elif kind in _LENGTHS:
                needed, measure = _LENGTHS[kind]
                length = measure(self.buffer) if len(self.buffer) >= needed else -1
                is_input = kind in INPUT_TYPES
            else:
                length = None
                is_input = True
            if length is None:
                self.lost, self.buffer = True, b""
                return True
            if length < 0 or len(self.buffer) < length:
                return found or is_input  # the rest of it comes with the next bytes
            self.buffer = self.buffer[length:]
            found = found or is_input
        return found
