"""The options ``manage.py backup`` and ``restore`` (and ``backup_dump`` and ``fetch_dump``) share, declared
once: where the backup is (``--file`` or ``--s3``, exactly one), the key that seals it (``--key-file``)
and a bucket's retention (``--keep``); and the key and the bucket they name, read with the environment's
settings (``orchestrator.services.backup.options``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.core.management.base import CommandError, CommandParser

from orchestrator.services.backup import S3Store
from orchestrator.services.backup.options import load_key, s3_settings
from orchestrator.services.backup.stores import SUFFIX


def add_where(parser: CommandParser, *, file_help: str, s3_help: str) -> None:
    """``--file`` or ``--s3``, one of them required; the help says which way the backup goes."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--file", help=file_help)
    where.add_argument("--s3", help=s3_help)


def add_key_file(parser: CommandParser) -> None:
    parser.add_argument("--key-file", help="The key (base64 of 32 bytes); default FLEXPLANE_BACKUP_KEY_FILE.")


def add_keep(parser: CommandParser, *, of: str) -> None:
    parser.add_argument("--keep", type=int, default=0, help=f"With --s3: keep only the newest N {of}.")


def keep_count(options: Mapping[str, Any]) -> int:
    """``--keep``'s count (0: keep all); CommandError unless positive and given with ``--s3``."""
    keep = int(options["keep"])
    if keep < 0 or (keep and not options["s3"]):
        raise CommandError("--keep takes a positive count, and only with --s3")
    return keep


def backup_key(options: Mapping[str, Any]) -> bytes:
    """The key ``--key-file`` names, else the environment's (BackupError when there is none)."""
    return load_key(options["key_file"], os.environ)


def bucket(options: Mapping[str, Any], suffix: str = SUFFIX) -> S3Store:
    """The bucket ``--s3`` names, reached as the environment says; its objects of ``suffix``."""
    return S3Store(options["s3"], s3_settings(os.environ).client(), suffix)
