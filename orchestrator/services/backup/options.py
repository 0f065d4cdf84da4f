"""The backup commands' key and bucket, from their options and the environment (the CronJob's Secrets).

``FLEXPLANE_BACKUP_KEY_FILE`` (or ``--key-file``) names a file holding the key as base64, as a mounted
Secret has it; ``FLEXPLANE_BACKUP_KEY`` holds it directly. ``FLEXPLANE_BACKUP_S3_ENDPOINT``, ``_REGION``,
``_ACCESS_KEY`` and ``_SECRET_KEY`` say how to reach the bucket (without credentials, boto3's usual chain).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from orchestrator.services.backup.sealed import BackupError, parse_key
from orchestrator.services.backup.stores import S3Settings


def load_key(key_file: str | None, environ: Mapping[str, str]) -> bytes:
    """The AES-256 key: from ``key_file``, else FLEXPLANE_BACKUP_KEY_FILE, else FLEXPLANE_BACKUP_KEY."""
    path = key_file or environ.get("FLEXPLANE_BACKUP_KEY_FILE")
    if path:
        try:
            return parse_key(Path(path).read_text())
        except OSError as exc:
            raise BackupError(f"cannot read the backup key file {path}: {exc.strerror}") from None
    text = environ.get("FLEXPLANE_BACKUP_KEY")
    if not text:
        raise BackupError(
            "no backup key: give --key-file, or set FLEXPLANE_BACKUP_KEY_FILE or FLEXPLANE_BACKUP_KEY "
            "(make one with `openssl rand -base64 32` and keep a copy outside the management cluster)"
        )
    return parse_key(text)


def s3_settings(environ: Mapping[str, str]) -> S3Settings:
    """How to reach the bucket, from the environment."""
    return S3Settings(
        endpoint=environ.get("FLEXPLANE_BACKUP_S3_ENDPOINT") or None,
        region=environ.get("FLEXPLANE_BACKUP_S3_REGION") or "us-east-1",
        access_key=environ.get("FLEXPLANE_BACKUP_S3_ACCESS_KEY") or None,
        secret_key=environ.get("FLEXPLANE_BACKUP_S3_SECRET_KEY") or None,
    )
