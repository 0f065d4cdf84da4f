"""Backup and restore of what flex.plane keeps in the management cluster (``manage.py backup``/``restore``).

``contents`` says what a backup holds and restores it, ``sealed`` is its file (a plain header, the
document under AES-256-GCM), ``stores`` where it goes (a file, a bucket), ``objects`` the raw API calls.
"""

from __future__ import annotations

from django.conf import settings

from orchestrator.services.backup.contents import OtherPlatform, Restored, Scope, restore, take
from orchestrator.services.backup.objects import ManagementObjects, ObjectsApi
from orchestrator.services.backup.sealed import (
    BackupError,
    Header,
    NewerFormat,
    NotABackup,
    WrongKey,
    parse_key,
    seal,
    unseal,
)
from orchestrator.services.backup.stores import S3Settings, S3Store, read_file, write_file

__all__ = [
    "BackupError",
    "NewerFormat",
    "NotABackup",
    "OtherPlatform",
    "Restored",
    "S3Settings",
    "S3Store",
    "Scope",
    "WrongKey",
    "make_backup",
    "objects_from_settings",
    "parse_key",
    "read_file",
    "restore_backup",
    "scope_from_settings",
    "write_file",
]


def scope_from_settings() -> Scope:
    """The deployment's platform namespace and the Secrets it names."""
    return Scope(
        settings.FLEXPLANE_NAMESPACE,
        (settings.FLEXPLANE_AGENT_CA_SECRET, settings.FLEXPLANE_MESH_HUB_SECRET),
    )


def objects_from_settings() -> ObjectsApi:
    """The management cluster the orchestrator's settings name (its API client, its timeout)."""
    from orchestrator.sources.kube import kube

    source = kube()
    return ManagementObjects(source.core.api_client, source.timeout)


def make_backup(objects: ObjectsApi, scope: Scope, key: bytes) -> tuple[str, str, int, bytes]:
    """A sealed backup: the platform id, when it was taken, how many objects it holds, the file's bytes."""
    platform, created, document = take(objects, scope)
    blob = seal(document, key, platform=platform, created=created, version=document["flexplaneVersion"])
    return platform, created, len(document["objects"]), blob


def restore_backup(objects: ObjectsApi, blob: bytes, key: bytes) -> tuple[Header, Restored]:
    """Open a backup with the key and restore it; its header and what each object came to."""
    header, document = unseal(blob, key)
    if document.get("platform") != header.platform:
        raise NotABackup("the backup's document and header name different platforms")
    return header, restore(objects, document)
