"""A backup made and restored, from the settings' scope and a management cluster's objects."""

from __future__ import annotations

from django.conf import settings

from orchestrator.services.backup.contents import Restored, Scope, restore, take
from orchestrator.services.backup.objects import ObjectsApi
from orchestrator.services.backup.sealed import Header, NotABackup, seal, unseal


def scope_from_settings() -> Scope:
    """The deployment's platform namespace and the Secrets it names: the platform CA's, and with the mesh
    on (``FLEXPLANE_MESH_RANGE``) the hub's key."""
    named = [settings.FLEXPLANE_AGENT_CA_SECRET]
    if settings.FLEXPLANE_MESH_RANGE:
        named.append(settings.FLEXPLANE_MESH_HUB_SECRET)
    return Scope(settings.FLEXPLANE_NAMESPACE, tuple(named))


def make_backup(objects: ObjectsApi, scope: Scope, key: bytes) -> tuple[str, str, int, bytes]:
    """A sealed backup: the platform id, when it was taken, how many objects it holds, the file's bytes."""
    platform, created, document = take(objects, scope)
    blob = seal(document, key, platform=platform, created=created, version=document["flexplaneVersion"])
    return platform, created, len(document["objects"]) + len(document["clusters"]), blob


def restore_backup(objects: ObjectsApi, blob: bytes, key: bytes) -> tuple[Header, Restored]:
    """Open a backup with the key and restore it; its header and what each object came to."""
    header, document = unseal(blob, key)
    if document.get("platform") != header.platform:
        raise NotABackup("the backup's document and header name different platforms")
    return header, restore(objects, document)
