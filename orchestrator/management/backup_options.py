"""The options ``manage.py backup`` and ``restore`` share, declared once: where the backup is (``--file``
or ``--s3``, exactly one) and the key that seals it (``--key-file``); and the key and the bucket they
name, read with the environment's settings (``orchestrator.services.backup.options``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.core.management.base import CommandParser

from orchestrator.services.backup import S3Store
from orchestrator.services.backup.options import load_key, s3_settings


def add_where(parser: CommandParser, *, file_help: str, s3_help: str) -> None:
    """``--file`` or ``--s3``, one of them required; the help says which way the backup goes."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--file", help=file_help)
    where.add_argument("--s3", help=s3_help)


def add_key_file(parser: CommandParser) -> None:
    parser.add_argument("--key-file", help="The key (base64 of 32 bytes); default FLEXPLANE_BACKUP_KEY_FILE.")


def backup_key(options: Mapping[str, Any]) -> bytes:
    """The key ``--key-file`` names, else the environment's (BackupError when there is none)."""
    return load_key(options["key_file"], os.environ)


def bucket(options: Mapping[str, Any]) -> S3Store:
    """The bucket ``--s3`` names, reached as the environment says."""
    return S3Store(options["s3"], s3_settings(os.environ).client())
