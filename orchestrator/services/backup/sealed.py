"""A backup's file: a small plain header, then the document sealed with AES-256-GCM.

The file is ``MAGIC``, one line of JSON (the format version, the platform id, when and by which
flex.plane version it was made, the nonce), then the ciphertext. The header is plain so that a restore
can say *why* it refuses (another platform, a newer format) before it needs the key, and so that a
bucket's retention can tell one platform's backups from another's; it is the AES-GCM associated data,
so it cannot be altered without the tag failing. The nonce is 96 random bits, new for every backup: a
key seals at most a few backups a day, far below the 2**32 messages random nonces are safe for.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from orchestrator.errors import FlexPlaneError

MAGIC = b"FLEXPLANE-BACKUP\n"
# The document's format; a restore refuses a newer one (it cannot know what that one holds).
FORMAT = 1
KEY_BYTES = 32
NONCE_BYTES = 12


class BackupError(FlexPlaneError):
    """A backup could not be made, read or restored; the message says what to do."""


class NotABackup(BackupError):
    """The bytes are not a flex.plane backup, or it is damaged."""


class WrongKey(BackupError):
    """The key does not open the backup (or the backup was altered)."""


class NewerFormat(BackupError):
    """The backup was made by a newer flex.plane, in a format this one cannot read."""


@dataclass(frozen=True)
class Header:
    """What a backup says about itself in plain text."""

    format: int
    platform: str
    created: str  # ISO 8601, UTC
    version: str  # flex.plane's, that made it
    nonce: bytes

    def line(self) -> bytes:
        fields = {
            "format": self.format,
            "platform": self.platform,
            "created": self.created,
            "version": self.version,
            "nonce": base64.b64encode(self.nonce).decode("ascii"),
        }
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def parse_key(text: str | bytes) -> bytes:
    """The AES-256 key from its base64 text (``openssl rand -base64 32``); ``BackupError`` otherwise."""
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BackupError(f"the backup key is not base64 ({exc})") from None
    if len(key) != KEY_BYTES:
        raise BackupError(f"the backup key is {len(key)} bytes; it must be {KEY_BYTES} (AES-256)")
    return key


def seal(document: dict[str, Any], key: bytes, *, platform: str, created: str, version: str) -> bytes:
    """The file of a backup: the header, then the document encrypted under ``key``."""
    header = Header(FORMAT, platform, created, version, os.urandom(NONCE_BYTES))
    head = MAGIC + header.line()
    plain = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return head + AESGCM(key).encrypt(header.nonce, plain, head)


def read_header(blob: bytes) -> tuple[Header, bytes, bytes]:
    """The header of a backup, the bytes it authenticates and the ciphertext; ``NotABackup`` or
    ``NewerFormat`` before any key is needed."""
    if not blob.startswith(MAGIC):
        raise NotABackup("this is not a flex.plane backup (it does not start with FLEXPLANE-BACKUP)")
    end = blob.find(b"\n", len(MAGIC))
    if end < 0:
        raise NotABackup("the backup's header is cut short")
    try:
        fields = json.loads(blob[len(MAGIC) : end])
        header = Header(
            int(fields["format"]),
            str(fields["platform"]),
            str(fields["created"]),
            str(fields["version"]),
            base64.b64decode(fields["nonce"], validate=True),
        )
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise NotABackup(f"the backup's header is unreadable ({exc})") from None
    if header.format > FORMAT:
        raise NewerFormat(
            f"the backup is in format {header.format}, made by flex.plane {header.version}; this one reads "
            f"format {FORMAT} at most: restore it with flex.plane {header.version} or newer"
        )
    return header, blob[: end + 1], blob[end + 1 :]


def unseal(blob: bytes, key: bytes) -> tuple[Header, dict[str, Any]]:
    """The header and document of a backup; ``WrongKey`` when the key does not open it."""
    header, head, cipher = read_header(blob)
    try:
        plain = AESGCM(key).decrypt(header.nonce, cipher, head)
    except InvalidTag:
        raise WrongKey(
            f"the key does not open the backup of platform {header.platform} made {header.created} "
            "(another key, or the file was altered)"
        ) from None
    document = json.loads(plain)
    if not isinstance(document, dict):
        raise NotABackup("the backup's document is not a JSON object")
    return header, document
