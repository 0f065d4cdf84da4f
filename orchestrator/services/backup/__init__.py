"""Backup and restore of what flex.plane keeps in the management cluster (``manage.py backup``/``restore``).

``contents`` says what a backup holds and restores it, ``sealed`` is its file (a plain header, the
document under AES-256-GCM), ``stores`` where it goes (a file, a bucket), ``objects`` the raw API calls,
``operations`` a backup made and restored from them. ``files`` seals any file in chunks, and ``dumps``
stores and fetches database dumps so sealed (Zitadel's, ``manage.py backup_dump`` and ``fetch_dump``).
"""

from __future__ import annotations

from orchestrator.services.backup.contents import OtherPlatform, Restored, Scope
from orchestrator.services.backup.dumps import SealedDump, fetch_dump, open_dump, seal_dump, store_dump
from orchestrator.services.backup.files import FileHeader
from orchestrator.services.backup.objects import ManagementObjects, ObjectsApi
from orchestrator.services.backup.operations import make_backup, restore_backup, scope_from_settings
from orchestrator.services.backup.sealed import BackupError, NewerFormat, NotABackup, WrongKey, parse_key
from orchestrator.services.backup.stores import DUMP_SUFFIX, S3Settings, S3Store, read_file, write_file

__all__ = [
    "DUMP_SUFFIX",
    "BackupError",
    "FileHeader",
    "ManagementObjects",
    "NewerFormat",
    "NotABackup",
    "ObjectsApi",
    "OtherPlatform",
    "Restored",
    "S3Settings",
    "S3Store",
    "Scope",
    "SealedDump",
    "WrongKey",
    "fetch_dump",
    "make_backup",
    "open_dump",
    "parse_key",
    "read_file",
    "restore_backup",
    "scope_from_settings",
    "seal_dump",
    "store_dump",
    "write_file",
]
