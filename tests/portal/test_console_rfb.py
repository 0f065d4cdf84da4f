"""The console's idle watch: which of the browser's RFB bytes are its user's input."""

from __future__ import annotations

import struct

from portal.console.rfb import InputWatcher

HANDSHAKE = b"RFB 003.008\n" + b"\x01" + b"\x01"
PIXEL_FORMAT = b"\x00\x00\x00\x00" + struct.pack(">BBBBHHHBBBxxx", 32, 24, 0, 1, 255, 255, 255, 0, 8, 16)
ENCODINGS = b"\x02\x00" + struct.pack(">H", 3) + struct.pack(">iii", 0, 7, -223)
UPDATE = struct.pack(">BBHHHH", 3, 1, 0, 0, 640, 400)
KEY = struct.pack(">BBxxI", 4, 1, 0x61)
POINTER = struct.pack(">BBHH", 5, 1, 10, 20)
QEMU_KEY = struct.pack(">BBHII", 255, 0, 1, 0x61, 30)


def test_the_handshake_and_the_viewers_requests_are_not_input() -> None:
    watcher = InputWatcher()

    assert watcher.feed(HANDSHAKE + PIXEL_FORMAT + ENCODINGS) is False
    for _ in range(100):
        assert watcher.feed(UPDATE) is False


def test_keys_the_pointer_and_qemus_key_events_are_input_however_the_bytes_are_cut() -> None:
    watcher = InputWatcher()
    watcher.feed(HANDSHAKE + PIXEL_FORMAT)

    assert watcher.feed(UPDATE + KEY) is True
    assert watcher.feed(POINTER[:3]) is True
    assert watcher.feed(POINTER[3:]) is True
    assert watcher.feed(UPDATE) is False
    assert watcher.feed(QEMU_KEY) is True
    assert watcher.feed(UPDATE[:4]) is False
    assert watcher.feed(UPDATE[4:]) is False


def test_the_clipboard_is_input_and_its_text_is_skipped() -> None:
    watcher = InputWatcher()
    watcher.feed(HANDSHAKE)
    text = b"\x03\x00\x00\x00\x04\x05"  # bytes that would read as messages of other kinds

    assert watcher.feed(b"\x06\x00\x00\x00" + struct.pack(">I", len(text)) + text) is True
    assert watcher.feed(UPDATE) is False


def test_a_message_it_does_not_know_makes_every_later_byte_input() -> None:
    watcher = InputWatcher()
    watcher.feed(HANDSHAKE)

    assert watcher.feed(b"\x99whatever") is True
    assert watcher.feed(UPDATE) is True
