"""Backup and restore of what flex.plane keeps in the management cluster (``manage.py backup``/``restore``).

``contents`` says what a backup holds and restores it, ``sealed`` is its file (a plain header, the
document under AES-256-GCM), ``stores`` where it goes (a file, a bucket), ``objects`` the raw API calls,
``operations`` a backup made and restored from them.
"""

from __future__ import annotations

from orchestrator.services.backup.contents import OtherPlatform, Restored, Scope
from orchestrator.services.backup.objects import ManagementObjects, ObjectsApi
from orchestrator.services.backup.operations import make_backup, restore_backup, scope_from_settings
from orchestrator.services.backup.sealed import BackupError, NewerFormat, NotABackup, WrongKey, parse_key
from orchestrator.services.backup.stores import S3Settings, S3Store, read_file, write_file

__all__ = [
    "BackupError",
    "ManagementObjects",
    "NewerFormat",
    "NotABackup",
    "ObjectsApi",
    "OtherPlatform",
    "Restored",
    "S3Settings",
    "S3Store",
    "Scope",
    "WrongKey",
    "make_backup",
    "parse_key",
    "read_file",
    "restore_backup",
    "scope_from_settings",
    "write_file",
]
