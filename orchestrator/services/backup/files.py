"""A sealed file: any file (a database dump) encrypted with the backup key, in chunks, never whole in memory.

The management plane's backup is a small JSON document sealed in one piece (``sealed``). A database dump
is not: Zitadel's grows with its event store, and the job that seals it has a few hundred MiB of memory.
So a sealed file is ``MAGIC``, one plain line of JSON (the format, what it holds, when and by which
flex.plane version it was made, a random salt, the chunk size), then the file in chunks of that size,
each sealed with AES-256-GCM on its own:

- the key of one file is HKDF-SHA256 of the backup key with the file's random salt, so nonces need
  only count chunks (no random nonce is ever reused across files);
- a chunk's nonce is its index, and a last byte saying whether it is the last chunk: chunks cannot be
  reordered, and a file cut at a chunk's end is refused (its new last chunk was not sealed as last);
- every chunk's associated data is the header, which cannot be altered unnoticed.

Its magic differs from a backup's, so ``manage.py restore`` refuses a sealed dump as "not a backup"
and this module refuses a backup as "not a sealed file", before either needs the key.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from orchestrator.services.backup.sealed import BackupError, NewerFormat, NotABackup, WrongKey

MAGIC = b"FLEXPLANE-SEALED-FILE\n"
FORMAT = 1
CHUNK = 1 << 20  # 1 MiB of the file per chunk: memory stays a few MiB whatever the file's size
TAG_BYTES = 16
SALT_BYTES = 16
# A header is a few hundred bytes, a chunk at most this: a damaged header never makes a reader allocate more.
MAX_HEADER = 4096
MAX_CHUNK = 64 << 20
_INFO = b"flex.plane sealed file, format 1"
# What a sealed file may say it holds: one path segment of a bucket's key (its folder there).
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}\Z")


@dataclass(frozen=True)
class FileHeader:
    """What a sealed file says about itself in plain text."""

    format: int
    name: str  # what it holds, e.g. "identity" (Zitadel's database)
    created: str  # ISO 8601, UTC
    version: str  # flex.plane's, that sealed it
    salt: bytes
    chunk: int

    def line(self) -> bytes:
        fields = {
            "format": self.format,
            "name": self.name,
            "created": self.created,
            "version": self.version,
            "salt": base64.b64encode(self.salt).decode("ascii"),
            "chunk": self.chunk,
        }
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode() + b"\n"

    def cipher(self, key: bytes) -> AESGCM:
        """AES-GCM under this file's own key (the backup key and the file's salt)."""
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=self.salt, info=_INFO).derive(key)
        return AESGCM(derived)


def new_header(name: str, *, created: str, version: str, chunk: int = CHUNK) -> FileHeader:
    """The header of a file about to be sealed: a fresh salt, so a fresh key."""
    if not NAME.match(name):
        raise BackupError(f"{name!r} cannot name a sealed file: lower-case letters, digits and '-' only")
    return FileHeader(FORMAT, name, created, version, os.urandom(SALT_BYTES), chunk)


def _nonce(index: int, last: bool) -> bytes:
    return index.to_bytes(11, "big") + (b"\x01" if last else b"\x00")


def seal_stream(source: BinaryIO, out: BinaryIO, key: bytes, header: FileHeader) -> int:
    """Write the sealed file of ``source`` to ``out``; how many bytes of ``source`` it holds."""
    head = MAGIC + header.line()
    out.write(head)
    aead = header.cipher(key)
    plain, index, size = source.read(header.chunk), 0, 0
    while True:
        # A full chunk may be the last: only reading on tells.
        following = source.read(header.chunk) if len(plain) == header.chunk else b""
        last = not following
        out.write(aead.encrypt(_nonce(index, last), plain, head))
        size += len(plain)
        if last:
            return size
        plain, index = following, index + 1


def read_file_header(source: BinaryIO) -> tuple[FileHeader, bytes]:
    """The header of a sealed file and the bytes it authenticates; ``NotABackup`` or ``NewerFormat``
    before any key is needed."""
    magic = source.read(len(MAGIC))
    if magic != MAGIC:
        raise NotABackup(
            "this is not a flex.plane sealed file (it does not start with FLEXPLANE-SEALED-FILE)"
        )
    line = source.readline(MAX_HEADER)
    if not line.endswith(b"\n"):
        raise NotABackup("the sealed file's header is cut short")
    try:
        fields = json.loads(line)
        header = FileHeader(
            int(fields["format"]),
            str(fields["name"]),
            str(fields["created"]),
            str(fields["version"]),
            base64.b64decode(fields["salt"], validate=True),
            int(fields["chunk"]),
        )
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise NotABackup(f"the sealed file's header is unreadable ({exc})") from None
    if header.format > FORMAT:
        raise NewerFormat(
            f"the sealed file is in format {header.format}, made by flex.plane {header.version}; this one "
            f"reads format {FORMAT} at most: open it with flex.plane {header.version} or newer"
        )
    if not 0 < header.chunk <= MAX_CHUNK or len(header.salt) != SALT_BYTES:
        raise NotABackup("the sealed file's header names an impossible chunk size or salt")
    return header, magic + line


def open_stream(source: BinaryIO, out: BinaryIO, key: bytes) -> tuple[FileHeader, int]:
    """Write the file sealed in ``source`` to ``out``; its header and size. ``WrongKey`` when the key
    does not open it, ``NotABackup`` when a later chunk was altered or the file cut short."""
    header, head = read_file_header(source)
    aead = header.cipher(key)
    block_size = header.chunk + TAG_BYTES
    block, index, size = source.read(block_size), 0, 0
    while True:
        following = source.read(block_size) if len(block) == block_size else b""
        last = not following
        try:
            plain = aead.decrypt(_nonce(index, last), block, head)
        except InvalidTag:
            raise _refusal(header, index, len(block)) from None
        out.write(plain)
        size += len(plain)
        if last:
            return header, size
        block, index = following, index + 1


def _refusal(header: FileHeader, index: int, length: int) -> BackupError:
    """Why a chunk does not open: the first one, the key (or an altered header); a later one, damage."""
    what = f"the sealed {header.name} file made {header.created}"
    if index == 0 and length >= TAG_BYTES:
        return WrongKey(f"the key does not open {what} (another key, or the file was altered)")
    return NotABackup(f"{what} is altered or cut short at its chunk {index}: it cannot be opened whole")


@contextlib.contextmanager
def written(path: Path) -> Iterator[BinaryIO]:
    """A file written whole or not at all (a temporary file beside it, renamed when the block ends
    without an error), readable by its owner only: a dump holds every user's password hash."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _reading(path: Path) -> BinaryIO:
    try:
        return path.open("rb")
    except OSError as exc:
        raise BackupError(f"cannot read {path}: {exc.strerror}") from None


def seal_file(source: Path, target: Path, key: bytes, header: FileHeader) -> int:
    """Seal the file ``source`` into ``target``; how many bytes it holds."""
    with _reading(source) as reading, written(target) as out:
        return seal_stream(reading, out, key, header)


def open_file(source: Path, target: Path, key: bytes) -> tuple[FileHeader, int]:
    """Open the sealed file ``source`` into ``target`` (left untouched when it does not open whole)."""
    with _reading(source) as reading, written(target) as out:
        return open_stream(reading, out, key)
