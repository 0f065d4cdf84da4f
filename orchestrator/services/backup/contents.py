"""What a backup of the management plane holds, how it is taken, and how it is restored.

It holds what flex.plane alone keeps in the management cluster, selected by the project's own labels
and names, never "everything in the namespace":

- the platform namespace's ConfigMaps labelled ``flexplane.io/kind``: the catalog (profiles, images,
  zones, hosts, VDCs and quotas, organizations' allowances, security groups), edge gateways' desired
  state, mesh peers, agent release pins, host drains' records, and the platform id;
- its Secrets labelled ``flexplane.io/kind`` (join-token records: hashes, not tokens) and the two it
  names in settings: the platform CA (``FLEXPLANE_AGENT_CA_SECRET``: agents keep trusting it, so none
  re-enrolls) and the mesh hub's key (``FLEXPLANE_MESH_HUB_SECRET``: peers keep their tunnels);
- the VDCs' Namespaces (``vdc-<vdc>``, labelled ``flexplane.io/vdc``) and their RoleBindings so labelled;
- each tenant Kubernetes cluster of those namespaces (the document's ``clusters``, :mod:`.clusters`): its
  Cluster API objects, its control plane's Namespace and PKI, its cloud controller's key. Its tenant
  state is its etcd's, snapshotted to the bucket apart; the providers adopt its VMs and make its
  control plane anew from the newest snapshot.

It leaves out, on purpose: Leases (locks and spent console tickets expire within minutes; a restored
lock would only block), Events (the audit trail is shipped as log lines; Events expire by design),
the backup key's own Secret (the operator holds it), and what the providers render again from what it
holds (a cluster's kubeconfigs, its ``etcd-backup`` Secret, its control plane's workloads).

Objects are stored without what the API server sets (uid, resourceVersion, managedFields,
creationTimestamp, generation) and without status, which their controllers recompute. A restore
creates each object or replaces it where it differs, namespaces first, then Secrets and ConfigMaps, then
RoleBindings, then each cluster (paused while it is written, owners first: :mod:`.clusters`); an object
equal to the backup's is left alone, so a second restore changes nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from orchestrator.errors import Conflict
from orchestrator.services.backup import clusters
from orchestrator.services.backup.objects import CONFIG_MAP, NAMESPACE, ROLE_BINDING, SECRET, Kind, ObjectsApi
from orchestrator.services.backup.sealed import FORMAT, BackupError, NotABackup
from orchestrator.sources.kube_objects import (
    KIND_LABEL,
    VDC_LABEL,
    config_map_body,
    config_map_name,
    vdc_of_namespace,
)

# The platform id: a catalog-style ConfigMap (``platform-id``), made once by the first backup.
PLATFORM_KIND = "platform"
PLATFORM_IDENT = "id"
# The order a restore writes kinds in: what others live in or refer to first.
ORDER: tuple[Kind, ...] = (NAMESPACE, SECRET, CONFIG_MAP, ROLE_BINDING)
_KINDS = {k.kind: k for k in ORDER}
# The metadata a backup keeps: everything else is the API server's.
_KEPT_METADATA = ("name", "namespace", "labels", "annotations")

logger = logging.getLogger(__name__)


class OtherPlatform(BackupError):
    """The backup was made of another platform than the one it would be restored to."""


@dataclass(frozen=True)
class Scope:
    """Where flex.plane keeps its state: the platform namespace and the Secrets it names in settings."""

    namespace: str
    named_secrets: tuple[str, ...]


@dataclass
class Restored:
    """What a restore did, object by object: ``created``, ``updated`` or ``unchanged``."""

    outcomes: list[tuple[str, str]] = field(default_factory=list)  # (what, outcome)

    def count(self, outcome: str) -> int:
        return sum(1 for _, o in self.outcomes if o == outcome)

    @property
    def changed(self) -> bool:
        return any(o != "unchanged" for _, o in self.outcomes)


def flexplane_version() -> str:
    try:
        return metadata.version("flexplane")
    except metadata.PackageNotFoundError:
        return "unknown"


def stripped(body: Mapping[str, Any]) -> dict[str, Any]:
    """The object as a backup keeps it: no server-set metadata, no status (nor a Namespace's spec,
    which is the server's finalizers)."""
    meta = body.get("metadata") or {}
    kept = {key: meta[key] for key in _KEPT_METADATA if meta.get(key)}
    out = {key: value for key, value in body.items() if key not in ("metadata", "status")}
    if out.get("kind") == "Namespace":
        out.pop("spec", None)
    return {**out, "metadata": kept}


# ---------------------------------------------------------------------- the platform id


def read_platform_id(objects: ObjectsApi, namespace: str) -> str | None:
    """The platform's id, or None on a cluster that has none (never backed up, or a new one)."""
    body = objects.get(CONFIG_MAP, namespace, config_map_name(PLATFORM_KIND, PLATFORM_IDENT))
    if body is None:
        return None
    try:
        return str(json.loads((body.get("data") or {})["spec"])["id"])
    except (KeyError, TypeError, ValueError) as exc:
        raise BackupError(f"ConfigMap {namespace}/platform-id holds no readable id ({exc})") from None


def ensure_platform_id(objects: ObjectsApi, namespace: str) -> str:
    """The platform's id, made now if it has none (a random UUID, stored once: two racing first backups
    both end up with the one that was written first)."""
    current = read_platform_id(objects, namespace)
    if current is not None:
        return current
    body = config_map_body(PLATFORM_KIND, PLATFORM_IDENT, {"id": str(uuid.uuid4())})
    body["metadata"]["namespace"] = namespace
    with contextlib.suppress(Conflict):  # another backup made it first: its id stands
        objects.create(CONFIG_MAP, body)
    made = read_platform_id(objects, namespace)
    assert made is not None  # written just now, by this call or the one that won
    return made


# ---------------------------------------------------------------------- taking a backup


def _vdc_namespaces(objects: ObjectsApi) -> list[dict[str, Any]]:
    return [ns for ns in objects.list(NAMESPACE, None, VDC_LABEL) if vdc_of_namespace(ns["metadata"]["name"])]


def _selected(
    objects: ObjectsApi, scope: Scope, namespaces: list[dict[str, Any]]
) -> Iterable[tuple[Kind, dict[str, Any]]]:
    """Every object the backup holds of the platform, as the cluster has it, with its kind."""
    yield from ((NAMESPACE, ns) for ns in namespaces)
    labelled = objects.list(SECRET, scope.namespace, KIND_LABEL)
    yield from ((SECRET, secret) for secret in labelled)
    for name in sorted(set(scope.named_secrets) - {s["metadata"]["name"] for s in labelled}):
        secret = objects.get(SECRET, scope.namespace, name)
        if secret is not None:
            yield SECRET, secret
        else:  # a setting that names nothing (a typo, a hub never started): the backup cannot hold it
            logger.warning(
                "the Secret %s/%s the settings name is not there: the backup holds none",
                scope.namespace,
                name,
            )
    yield from ((CONFIG_MAP, cm) for cm in objects.list(CONFIG_MAP, scope.namespace, KIND_LABEL))
    for ns in namespaces:
        bindings = objects.list(ROLE_BINDING, ns["metadata"]["name"], VDC_LABEL)
        yield from ((ROLE_BINDING, binding) for binding in bindings)


def take(
    objects: ObjectsApi, scope: Scope, *, now: datetime.datetime | None = None
) -> tuple[str, str, dict[str, Any]]:
    """The backup's document, with the platform id and the time it was taken (ISO 8601, UTC)."""
    platform = ensure_platform_id(objects, scope.namespace)
    created = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    namespaces = _vdc_namespaces(objects)
    # A list's items lack their kind (the API server names it once, on the list): it is set here.
    items = [
        {**stripped(body), "apiVersion": kind.api_version, "kind": kind.kind}
        for kind, body in _selected(objects, scope, namespaces)
    ]
    held_clusters = [
        {**clusters.stripped(body), "apiVersion": kind.api_version, "kind": kind.kind}
        for kind, body in clusters.selected(objects, [ns["metadata"]["name"] for ns in namespaces])
    ]
    document = {
        "format": FORMAT,
        "platform": platform,
        "createdAt": created,
        "flexplaneVersion": flexplane_version(),
        "namespace": scope.namespace,
        "objects": items,
        "clusters": held_clusters,
    }
    return platform, created, document


# ---------------------------------------------------------------------- restoring one


def check_platform(objects: ObjectsApi, namespace: str, platform: str) -> None:
    """Refuse a backup of another platform; a cluster with no id yet (a new one) takes the backup's."""
    current = read_platform_id(objects, namespace)
    if current is not None and current != platform:
        raise OtherPlatform(
            f"the backup is of platform {platform}, this management cluster is platform {current}: "
            f"restoring it would replace this platform's CA and keys. If this cluster is meant to become "
            f"platform {platform}, delete ConfigMap {namespace}/platform-id first"
        )


def restore(objects: ObjectsApi, document: Mapping[str, Any]) -> Restored:
    """Create or update every object of the backup, in dependency order; what each came to."""
    platform, items = document.get("platform"), document.get("objects")
    if not isinstance(platform, str) or not isinstance(items, list):
        raise NotABackup("the backup's document lacks its platform or objects")
    check_platform(objects, str(document.get("namespace") or ""), platform)
    report = Restored()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if not isinstance(item, dict) or item.get("kind") not in _KINDS:
            raise NotABackup(f"the backup holds an object of an unknown kind: {str(item)[:80]}")
        by_kind.setdefault(item["kind"], []).append(item)
    for kind in ORDER:
        for item in by_kind.get(kind.kind, ()):
            report.outcomes.append((_what(kind, item), _restore_one(objects, kind, item)))
    held_clusters = document.get("clusters") or []  # none in a backup made before clusters were held
    if not isinstance(held_clusters, list) or not all(isinstance(i, dict) for i in held_clusters):
        raise NotABackup("the backup's clusters are not a list of objects")
    for item in held_clusters:
        if item.get("kind") not in clusters.BY_KIND or not (item.get("metadata") or {}).get("name"):
            raise NotABackup(f"the backup holds a cluster's object of an unknown kind: {str(item)[:80]}")
    report.outcomes += clusters.restore(objects, held_clusters, str(document.get("createdAt") or ""))
    return report


def _what(kind: Kind, item: Mapping[str, Any]) -> str:
    meta = item.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{kind.kind} {where}{meta.get('name')}"


def _restore_one(objects: ObjectsApi, kind: Kind, item: dict[str, Any]) -> str:
    """Create the object, or replace it at the version read where it differs from the backup's."""
    meta = item["metadata"]
    current = objects.get(kind, meta.get("namespace"), meta["name"])
    if current is None:
        try:
            objects.create(kind, item)
            return "created"
        except Conflict:  # made meanwhile (by the orchestrator): compare with that one
            current = objects.get(kind, meta.get("namespace"), meta["name"])
            assert current is not None
    if stripped(current) == stripped(item):
        return "unchanged"
    version = (current.get("metadata") or {}).get("resourceVersion")
    objects.replace(kind, {**item, "metadata": {**meta, "resourceVersion": version}})
    return "updated"
