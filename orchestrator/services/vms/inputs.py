"""What a create (or a resize) is given, checked: names, SSH keys, user data, idempotency keys, and
the catalog objects a VDC allows. Pure, but for ``catalog_choice``'s read of the catalog."""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

from agentclient.identity import LOWER_DNS_LABEL
from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models import Vdc

T = TypeVar("T")

MAX_SSH_KEYS = 32
MAX_SSH_KEY_LENGTH = 16 * 1024
MAX_USER_DATA_BYTES = 64 * 1024
# How user data must begin for cloud-init to use it (as vendor data): cloud-config, a script, an
# include list, a boothook, a part handler, a Jinja template or a MIME multipart archive.
USER_DATA_HEADERS = (
    "#cloud-config",
    "#!",
    "#include",
    "#cloud-boothook",
    "#part-handler",
    "## template: jinja",
    "Content-Type: multipart/",
)
MAX_IDEMPOTENCY_KEY_LENGTH = 255
# What Proxmox accepts as a VM name, and what makes a good hostname: one lowercase DNS label.
_NAME = re.compile(LOWER_DNS_LABEL)
# The OpenSSH public key types accepted (DSA is not: OpenSSH itself no longer accepts it).
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
MIN_RSA_BITS = 2048


def validate_name(name: str) -> str:
    if not _NAME.fullmatch(name or ""):
        raise ValidationFailed(
            "name",
            f"{name!r} is not a valid VM name: use 1 to 63 lowercase letters, digits and hyphens, "
            "starting and ending with a letter or digit (a DNS label)",
        )
    return name


def _ssh_string(blob: bytes, offset: int) -> tuple[bytes, int]:
    if offset + 4 > len(blob):
        raise ValueError("truncated")
    (length,) = struct.unpack(">I", blob[offset : offset + 4])
    end = offset + 4 + length
    if end > len(blob):
        raise ValueError("truncated")
    return blob[offset + 4 : end], end


def parse_ssh_key(line: str, index: int) -> str:
    """One OpenSSH public key (``<type> <base64> [comment]``), checked; ``ValidationFailed`` otherwise."""

    def refuse(why: str) -> ValidationFailed:
        return ValidationFailed("ssh_keys", f"SSH key {index + 1} is not a valid public key: {why}")

    text = line.strip()
    if len(text) > MAX_SSH_KEY_LENGTH:
        raise refuse(f"it is longer than {MAX_SSH_KEY_LENGTH} characters")
    if any(ch in text for ch in "\r\n\x00"):
        raise refuse("give one key per entry, on a single line")
    parts = text.split(None, 2)
    if len(parts) < 2:
        raise refuse("expected '<type> <base64 key> [comment]'")
    kind, body = parts[0], parts[1]
    if kind not in SSH_KEY_TYPES:
        raise refuse(f"unknown key type {kind[:40]!r} (accepted: {', '.join(SSH_KEY_TYPES)})")
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise refuse("the key is not valid base64") from None
    try:
        embedded, offset = _ssh_string(blob, 0)
        if embedded.decode("ascii", "replace") != kind:
            raise refuse(
                f"the key data is of type {embedded[:40].decode('ascii', 'replace')!r}, not {kind!r}"
            )
        if kind == "ssh-rsa":
            _exponent, offset = _ssh_string(blob, offset)
            modulus, offset = _ssh_string(blob, offset)
            bits = int.from_bytes(modulus, "big").bit_length()
            if bits < MIN_RSA_BITS:
                raise refuse(f"RSA keys need at least {MIN_RSA_BITS} bits, this one has {bits}")
        elif kind == "ssh-ed25519":
            key, offset = _ssh_string(blob, offset)
            if len(key) != 32:
                raise refuse("an Ed25519 key is 32 bytes long")
        else:
            _curve, offset = _ssh_string(blob, offset)
            _point, offset = _ssh_string(blob, offset)
    except ValueError:
        raise refuse("the key data is truncated") from None
    if len(parts) == 3 and not parts[2].isprintable():
        raise refuse("the comment contains control characters")
    return " ".join(parts)


def parse_ssh_keys(keys: Sequence[str]) -> list[str]:
    if len(keys) > MAX_SSH_KEYS:
        raise ValidationFailed("ssh_keys", f"at most {MAX_SSH_KEYS} SSH keys may be given")
    return [parse_ssh_key(key, index) for index, key in enumerate(keys)]


def validate_user_data(user_data: str | None) -> str | None:
    """The tenant's cloud-init data if cloud-init can use it (None when none is given)."""
    if user_data is None or user_data == "":
        return None
    size = len(user_data.encode("utf-8", "surrogatepass"))
    if size > MAX_USER_DATA_BYTES:
        raise ValidationFailed(
            "user_data", f"user data is {size} bytes; at most {MAX_USER_DATA_BYTES} bytes are accepted"
        )
    if "\x00" in user_data:
        raise ValidationFailed("user_data", "user data must be text, without NUL characters")
    try:
        user_data.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationFailed("user_data", "user data must be valid UTF-8 text") from None
    if not user_data.lstrip("\ufeff").startswith(USER_DATA_HEADERS):
        raise ValidationFailed(
            "user_data",
            "cloud-init would ignore this user data: begin it with #cloud-config (or #!, #include, "
            "#cloud-boothook, #part-handler, ## template: jinja, or a MIME multipart header)",
        )
    return user_data


def validate_idempotency_key(key: str | None) -> str | None:
    if key is None or key == "":
        return None
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH or not key.isprintable():
        raise ValidationFailed(
            "idempotency_key",
            f"the idempotency key must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} printable characters",
        )
    return key


def catalog_choice(field: str, noun: str, allowed: bool, vdc: Vdc, name: str, read: Callable[[], T]) -> T:
    """A catalog object the VDC allows, or ``ValidationFailed`` naming the field."""
    try:
        found = read()
    except NotFound:
        raise ValidationFailed(field, f"there is no {noun} {name!r}") from None
    if not allowed:
        raise ValidationFailed(field, f"VDC {vdc.id} does not allow {noun} {name!r}")
    return found
