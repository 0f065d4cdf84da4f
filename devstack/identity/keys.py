"""The provider's secrets: made once per data directory, kept in files only their owner can read."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

PRIVATE_FILE_MODE = 0o600
RSA_KEY_SIZE = 2048


def ensure_signing_key(path: Path) -> str:
    """The PEM of the RSA key that signs every token, generated on the first call for ``path``."""
    if not path.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_SIZE)
        pem = key.private_bytes(
            encoding=serialization.Encoding.PEM,
            format=serialization.PrivateFormat.PKCS8,
            encryption_algorithm=serialization.NoEncryption(),
        )
        write_private_file(path, pem.decode("ascii"))
    return path.read_text(encoding="ascii")


def ensure_secret_key(path: Path) -> str:
    """Django's ``SECRET_KEY`` (it signs the login session), generated on the first call for ``path``."""
    if not path.exists():
        write_private_file(path, secrets.token_urlsafe(50))
    return path.read_text(encoding="ascii").strip()


def write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600, atomically: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file with mode 0600, so the secret is never readable by others.
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        Path(temporary).chmod(PRIVATE_FILE_MODE)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
