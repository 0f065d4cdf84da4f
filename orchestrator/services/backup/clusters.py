"""Tenant clusters in a backup: their Cluster API objects and the Secrets they cannot be rebuilt without.

What a cluster is, to a backup (each object as ``contents.stripped`` keeps it, plus its ownerReferences
without their uids):

- every Cluster API object of a Cluster in a VDC's namespace: the Cluster, its FlexControlPlane and
  ProxmoxCluster, MachineDeployments, MachineSets, Machines, KubeadmConfigs and ProxmoxMachines, and the
  templates (ProxmoxMachineTemplate, KubeadmConfigTemplate); an object belongs to the Cluster its
  ``cluster.x-k8s.io/cluster-name`` label names;
- its cloud controller's key, ``<cluster>-cloud-controller`` in the VDC's namespace (the orchestrator's:
  a Zitadel key, valid again once Zitadel's database is restored; nothing else can make it);
- its hosted control plane's Namespace ``fpcp-<vdc>-<cluster>`` and PKI Secret ``pki`` there: its CAs'
  keys. A new CA would orphan every worker (their kubelets trust the old one) and every kubeconfig.

What it leaves out, because the providers rebuild it from the above: the ``<cluster>-kubeconfig`` and
``<cluster>-ca`` Secrets and the ``kubeconfigs`` Secret (rendered from the PKI), the ``etcd-backup``
Secret (rendered from the providers' settings), the control plane's copy of the cloud controller's key,
every Deployment, StatefulSet, Service and Job of the control plane's namespace; and CABPK's bootstrap
data Secrets (a made worker needs none, a new one gets new data). Nor kopf's bookkeeping on our objects
(``<group>/last-handled-configuration``, a handler's progress): a restored object is new to a provider.
The tenant's own state is in its etcd, whose snapshots are in the bucket (``render_etcd_backup``).

A restore writes a cluster the way ``clusterctl move`` does, so that no controller acts on half of it:
its Cluster first, with ``spec.paused`` and the ``cluster.x-k8s.io/paused`` annotation, then every other
object (annotated paused too) owners before dependants, each ownerReference's uid the new owner's (the
uids of the lost cluster mean nothing here, and the garbage collector deletes an object whose owners'
uids are all gone); then each object's pause taken away, the Cluster's last. A restore that fails part of
the way leaves what it wrote paused (``HalfRestored``): the next one writes what differs and unpauses it.
An owner neither the backup nor the management cluster has is refused before anything is written
(``UnknownOwner``). A cluster whose objects all equal the backup's is not touched (not even paused): a
second restore changes nothing.

A FlexControlPlane's ``spec.restore`` (an etcd restore a tenant asked for) is not held: it is the live
object's record, and without its status it would run again. A FlexControlPlane the restore creates (the
management cluster had lost it, and with it its control plane's namespace and etcd) is asked instead
``{id: platform-restore-<the backup's time>, snapshot: "" (the newest), newControlPlane: true}``: its
provider makes its etcd from the cluster's newest snapshot before its API server first starts
(``providers.controlplane.restore``). One that exists keeps its own request. The recovery point of a
cluster's tenant state is therefore its newest etcd snapshot, not the platform backup's time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.errors import Conflict, FlexPlaneError, UpstreamFailure
from orchestrator.services.backup.objects import NAMESPACE, SECRET, Kind, ObjectsApi
from orchestrator.services.backup.sealed import BackupError, NotABackup
from orchestrator.sources.kube_objects import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    CONTROL_PLANE_PKI_SECRET,
    FLEX_CONTROL_PLANE,
    KUBEADM_CONFIG,
    KUBEADM_CONFIG_TEMPLATE,
    MACHINE,
    MACHINE_DEPLOYMENT,
    MACHINE_SET,
    PAUSED_ANNOTATION,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE,
    PROXMOX_MACHINE_TEMPLATE,
    Resource,
    cloud_controller_secret,
    control_plane_namespace,
    vdc_of_namespace,
)


def _kind(resource: Resource) -> Kind:
    return Kind(resource.api_version, resource.plural, resource.kind)


# A cluster's Cluster API kinds, the Cluster first.
CLUSTER_KIND = _kind(CLUSTER)
KINDS: tuple[Kind, ...] = (
    CLUSTER_KIND,
    *(
        _kind(r)
        for r in (
            FLEX_CONTROL_PLANE,
            PROXMOX_CLUSTER,
            PROXMOX_MACHINE_TEMPLATE,
            KUBEADM_CONFIG_TEMPLATE,
            MACHINE_DEPLOYMENT,
            MACHINE_SET,
            MACHINE,
            KUBEADM_CONFIG,
            PROXMOX_MACHINE,
        )
    ),
)
BY_KIND = {kind.kind: kind for kind in (*KINDS, NAMESPACE, SECRET)}
_CAPI = {kind.kind for kind in KINDS}
# kopf's bookkeeping on the objects our providers handle: the spec it last handled, a handler's progress.
_KOPF_DIFFBASE = "/last-handled-configuration"
_KOPF_PROGRESS_FIELDS = {"started", "retries", "success", "failure"}
_KEPT_METADATA = ("name", "namespace", "labels", "annotations")
_OWNER_FIELDS = ("apiVersion", "kind", "name", "controller", "blockOwnerDeletion")
# A pause taken away while a controller writes the object: tried again this many times.
_ATTEMPTS = 5


class UnknownOwner(NotABackup):
    """An object of the backup is owned by one the backup does not hold and the cluster does not have."""


class HalfRestored(BackupError):
    """A cluster's restore failed part of the way: what was written stays paused until a restore ends it."""


@dataclass
class ClusterItems:
    """One cluster's objects in a backup, as ``(kind, body)``."""

    namespace: str
    name: str
    items: list[dict[str, Any]] = field(default_factory=list)


def _is_kopf_progress(value: Any) -> bool:
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return False
    return isinstance(parsed, dict) and bool(parsed) and set(parsed) <= _KOPF_PROGRESS_FIELDS | {"purpose"}


def _annotations(annotations: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in annotations.items()
        if not key.endswith(_KOPF_DIFFBASE) and not ("/" in key and _is_kopf_progress(value))
    }


def _owners(references: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """ownerReferences as a backup keeps them: without the uid (the owner is found by kind and name)."""
    kept = [{key: ref[key] for key in _OWNER_FIELDS if key in ref} for ref in references]
    return sorted(kept, key=lambda ref: (str(ref.get("kind")), str(ref.get("name"))))


def stripped(body: Mapping[str, Any]) -> dict[str, Any]:
    """A cluster's object as a backup keeps it: no status, no server-set metadata, no finalizers, no
    kopf bookkeeping; its ownerReferences by kind and name."""
    meta = body.get("metadata") or {}
    kept: dict[str, Any] = {key: meta[key] for key in _KEPT_METADATA if meta.get(key)}
    if kept.get("annotations"):
        kept["annotations"] = _annotations(kept["annotations"])
        if not kept["annotations"]:
            del kept["annotations"]
    if meta.get("ownerReferences"):
        kept["ownerReferences"] = _owners(meta["ownerReferences"])
    out = {key: value for key, value in body.items() if key not in ("metadata", "status")}
    if out.get("kind") == "Namespace":
        out.pop("spec", None)
    if out.get("kind") == FLEX_CONTROL_PLANE.kind and "restore" in (out.get("spec") or {}):
        # An etcd restore asked for is the live object's record (its status says it ran): without that
        # status, a restored request would run again. A control plane made anew is asked its own.
        out["spec"] = {key: value for key, value in out["spec"].items() if key != "restore"}
    return {**out, "metadata": kept}


# ---------------------------------------------------------------------- taking a backup


def _list(objects: ObjectsApi, kind: Kind, namespace: str, selector: str) -> list[dict[str, Any]]:
    """The kind's objects; none where the management cluster does not serve the kind (not installed)."""
    try:
        return objects.list(kind, namespace, selector)
    except UpstreamFailure as exc:
        if exc.status == 404:  # a platform without Cluster API (no providers): it has no clusters
            return []
        raise


def selected(objects: ObjectsApi, vdc_namespaces: Iterable[str]) -> Iterable[tuple[Kind, dict[str, Any]]]:
    """Every object of every tenant cluster of these VDC namespaces, as the management cluster has them:
    per cluster, the control plane's Namespace and PKI, the cloud controller's key, then its objects.

    What is being deleted is not held, nor what it owns (a cluster being deleted, a Machine scaled away):
    a restore would bring back what its owner had already let go."""
    for namespace in vdc_namespaces:
        vdc = vdc_of_namespace(namespace)
        clusters = [c for c in _list(objects, CLUSTER_KIND, namespace, "") if not _deleting(c)]
        if vdc is None or not clusters:
            continue
        names = {c["metadata"]["name"] for c in clusters}
        for name in sorted(names):
            where = control_plane_namespace(vdc, name)
            control_plane = objects.get(NAMESPACE, None, where)
            if control_plane is not None and not _deleting(control_plane):
                yield NAMESPACE, control_plane
                pki = objects.get(SECRET, where, CONTROL_PLANE_PKI_SECRET)
                if pki is not None:
                    yield SECRET, pki
            key = objects.get(SECRET, namespace, cloud_controller_secret(name))
            if key is not None:
                yield SECRET, key
        found: list[tuple[Kind, dict[str, Any]]] = [
            (CLUSTER_KIND, {**c, "kind": "Cluster"}) for c in clusters
        ]
        for kind in KINDS[1:]:
            for body in _list(objects, kind, namespace, CLUSTER_NAME_LABEL):
                if (body["metadata"].get("labels") or {}).get(CLUSTER_NAME_LABEL) in names:
                    found.append((kind, {**body, "kind": kind.kind}))
        yield from _whole(found)


def _deleting(body: Mapping[str, Any]) -> bool:
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


def _whole(found: list[tuple[Kind, dict[str, Any]]]) -> list[tuple[Kind, dict[str, Any]]]:
    """``found`` without what is being deleted and, again and again, without what an object left out owns."""
    kept = [(kind, body) for kind, body in found if not _deleting(body)]
    while True:
        held = {_item_key(body) for _, body in kept}
        whole = [
            (kind, body)
            for kind, body in kept
            if all(key in held or key[0] not in _CAPI for key in _owner_keys(body))
        ]
        if len(whole) == len(kept):
            return whole
        kept = whole


# ---------------------------------------------------------------------- restoring them


def _cluster_of(item: Mapping[str, Any]) -> str | None:
    labels = (item.get("metadata") or {}).get("labels") or {}
    value = labels.get(CLUSTER_NAME_LABEL)
    return str(value) if value else None


def grouped(items: Iterable[dict[str, Any]]) -> list[ClusterItems]:
    """The backup's cluster objects, by cluster: the VDC namespace's objects by their cluster-name label,
    a control plane's Namespace and PKI by their namespace's name."""
    clusters: dict[tuple[str, str], ClusterItems] = {}
    planes: dict[str, tuple[str, str]] = {}
    for item in items:
        if item.get("kind") == "Cluster":
            meta = item["metadata"]
            vdc = vdc_of_namespace(str(meta.get("namespace", "")))
            if vdc is None:
                raise NotABackup(f"the backup's Cluster {meta.get('name')} is in no VDC's namespace")
            made = ClusterItems(str(meta["namespace"]), str(meta["name"]))
            clusters[(made.namespace, made.name)] = made
            planes[control_plane_namespace(vdc, made.name)] = (made.namespace, made.name)
    for item in items:
        meta = item.get("metadata") or {}
        key: tuple[str, str] | None
        if item.get("kind") == "Namespace":
            key = planes.get(str(meta.get("name")))
        elif str(meta.get("namespace", "")) in planes:
            key = planes[str(meta["namespace"])]
        else:
            key = (str(meta.get("namespace", "")), _cluster_of(item) or "")
        if key is None or key not in clusters:
            raise NotABackup(
                f"the backup's {item.get('kind')} {meta.get('name')} belongs to no Cluster it holds"
            )
        clusters[key].items.append(item)
    return list(clusters.values())


Key = tuple[str, str, str]  # kind, namespace, name


def _key(kind: str, namespace: str, name: str) -> Key:
    return kind, namespace, name


def _item_key(item: Mapping[str, Any]) -> Key:
    meta = item["metadata"]
    return _key(str(item["kind"]), str(meta.get("namespace", "")), str(meta["name"]))


def _owner_keys(item: Mapping[str, Any]) -> list[Key]:
    """The objects that own ``item`` (an ownerReference names an owner of the same namespace)."""
    namespace = str(item["metadata"].get("namespace", ""))
    return [
        _key(str(ref.get("kind")), namespace, str(ref.get("name")))
        for ref in item["metadata"].get("ownerReferences") or ()
    ]


def ordered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Owners before their dependants: Namespaces, Secrets, the Cluster, then each object once every owner
    of it that the backup holds is before it. ``NotABackup`` for objects that own each other."""
    held = {_item_key(item) for item in items}
    done: set[Key] = set()
    out: list[dict[str, Any]] = []

    def rank(item: Mapping[str, Any]) -> tuple[int, str, str]:
        first = {"Namespace": 0, "Secret": 1, "Cluster": 2}.get(str(item["kind"]), 3)
        return first, str(item["kind"]), str(item["metadata"]["name"])

    pending = sorted(items, key=rank)
    while pending:
        ready = [item for item in pending if all(k in done or k not in held for k in _owner_keys(item))]
        if not ready:
            cycle = ", ".join(_what(item) for item in pending)
            raise NotABackup(f"the backup's objects own each other in a cycle: {cycle}")
        out += ready
        done |= {_item_key(item) for item in ready}
        pending = [item for item in pending if _item_key(item) not in done]
    return out


class ClusterRestore:
    """One cluster's objects written back (see the module): paused, owners first, then unpaused."""

    def __init__(self, objects: ObjectsApi, cluster: ClusterItems, request_id: str) -> None:
        self.objects = objects
        self.cluster = cluster
        self.request_id = request_id
        self.items = ordered(cluster.items)
        self.uids: dict[Key, str] = {}
        self.paused: list[dict[str, Any]] = []

    def _current(self, item: Mapping[str, Any]) -> dict[str, Any] | None:
        meta = item["metadata"]
        return self.objects.get(BY_KIND[str(item["kind"])], meta.get("namespace"), str(meta["name"]))

    def run(self) -> list[tuple[str, str]]:
        """Every object's outcome: ``created``, ``updated`` or ``unchanged``."""
        current = {_item_key(item): self._current(item) for item in self.items}
        differs = [
            item
            for item in self.items
            if current[_item_key(item)] is None or stripped(current[_item_key(item)] or {}) != item
        ]
        if not differs:
            return [(_what(item), "unchanged") for item in self.items]
        self._check_owners()  # before anything is written
        outcomes = []
        self._pause_first(current)
        try:
            for item in self.items:
                key = _item_key(item)
                outcome = "unchanged" if item not in differs else self._write(item, current[key])
                if outcome == "unchanged" and current[key] is not None:
                    self.uids[key] = str((current[key] or {}).get("metadata", {}).get("uid", ""))
                outcomes.append((_what(item), outcome))
        except FlexPlaneError as exc:  # never unpaused half-made: a controller would act on half of it
            where = f"{self.cluster.namespace}/{self.cluster.name}"
            raise HalfRestored(
                f"cluster {where} is left paused, half restored: {exc.message}. Run the restore again: it "
                "writes what differs and unpauses the cluster once all of it is written"
            ) from exc
        self._unpause()
        return outcomes

    def _check_owners(self) -> None:
        """``UnknownOwner`` for an object owned by one neither the backup nor the cluster has."""
        held = {_item_key(item) for item in self.items}
        for item in self.items:
            for ref, key in zip(
                item["metadata"].get("ownerReferences") or (), _owner_keys(item), strict=True
            ):
                if key in held:
                    continue
                kind = BY_KIND.get(str(ref.get("kind")))
                if kind is None or self.objects.get(kind, key[1], key[2]) is None:
                    owner = f"{ref.get('kind')} {ref.get('name')}"
                    raise UnknownOwner(
                        f"{_what(item)} is owned by {owner}, which neither the backup nor the management "
                        "cluster has"
                    )

    def _pause_first(self, current: Mapping[Key, Any]) -> None:
        """The Cluster paused before anything of it is written (its PKI's Secret included), where it
        exists; a new one is created paused, before its other objects."""
        for item in self.items:
            if item["kind"] != "Cluster" or current[_item_key(item)] is None:
                continue
            meta = item["metadata"]
            pause = {"metadata": {"annotations": {PAUSED_ANNOTATION: "restore"}}, "spec": {"paused": True}}
            self.objects.patch(CLUSTER_KIND, meta.get("namespace"), str(meta["name"]), pause)
            self.paused.append(item)

    def _owner_references(self, item: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The item's ownerReferences with the uids of the owners as the management cluster has them now."""
        namespace = str(item["metadata"].get("namespace", ""))
        resolved = []
        for ref in item["metadata"].get("ownerReferences") or ():
            key = _key(str(ref.get("kind")), namespace, str(ref.get("name")))
            uid = self.uids.get(key)
            if uid is None and ref.get("kind") in BY_KIND:
                owner = self.objects.get(BY_KIND[str(ref["kind"])], namespace, str(ref.get("name")))
                uid = str((owner or {}).get("metadata", {}).get("uid") or "") or None
            if uid is None:
                raise UnknownOwner(
                    f"{_what(item)} is owned by {ref.get('kind')} {ref.get('name')}, which neither the "
                    "backup nor the management cluster has"
                )
            resolved.append({**ref, "uid": uid})
        return resolved

    def _body(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The item as written while the restore runs: its owners' uids, and paused (a Cluster API object)."""
        meta: dict[str, Any] = {
            key: value for key, value in item["metadata"].items() if key != "ownerReferences"
        }
        owners = self._owner_references(item)
        if owners:
            meta["ownerReferences"] = owners
        body = {**item, "metadata": meta}
        if item["kind"] in _CAPI:
            meta["annotations"] = {**(meta.get("annotations") or {}), PAUSED_ANNOTATION: "restore"}
        if item["kind"] == "Cluster":
            body["spec"] = {**(item.get("spec") or {}), "paused": True}
        return body

    def _made_anew(self, body: dict[str, Any]) -> dict[str, Any]:
        """A FlexControlPlane created by the restore (the management cluster had lost it, and so its
        control plane's namespace and etcd): asked to make its etcd from the cluster's newest snapshot
        before it first starts (``providers.controlplane.restore``). Any other object as it is."""
        if body["kind"] != FLEX_CONTROL_PLANE.kind:
            return body
        request = {"id": self.request_id, "snapshot": "", "newControlPlane": True}
        return {**body, "spec": {**(body.get("spec") or {}), "restore": request}}

    def _write(self, item: dict[str, Any], current: dict[str, Any] | None) -> str:
        kind = BY_KIND[str(item["kind"])]
        body = self._body(item)
        if current is None:
            try:
                written = self.objects.create(kind, self._made_anew(body))
                outcome = "created"
            except Conflict:  # made meanwhile: written over as any that differs
                current = self._current(item)
                assert current is not None
        if current is not None:
            meta = {**body["metadata"], "resourceVersion": current["metadata"].get("resourceVersion")}
            if current["metadata"].get("finalizers"):  # a controller's stay: they guard what it made
                meta["finalizers"] = current["metadata"]["finalizers"]
            asked = (current.get("spec") or {}).get("restore")
            if item["kind"] == FLEX_CONTROL_PLANE.kind and asked:  # the live one's record stays
                body = {**body, "spec": {**(body.get("spec") or {}), "restore": asked}}
            written = self.objects.replace(kind, {**body, "metadata": meta})
            outcome = "updated"
        written = written or self._current(item) or {}
        self.uids[_item_key(item)] = str(written.get("metadata", {}).get("uid", ""))
        if item["kind"] in _CAPI and item not in self.paused:
            self.paused.append(item)
        return outcome

    def _unpause(self) -> None:
        """Each written object's pause taken away, the Cluster's last: its pause as the backup has it."""
        clusters = [item for item in self.paused if item["kind"] == "Cluster"]
        for item in [*(i for i in self.paused if i["kind"] != "Cluster"), *clusters]:
            kind, meta = BY_KIND[str(item["kind"])], item["metadata"]
            kept = (meta.get("annotations") or {}).get(PAUSED_ANNOTATION)  # paused in the backup: it stays
            patch: dict[str, Any] = {"metadata": {"annotations": {PAUSED_ANNOTATION: kept}}}
            if item["kind"] == "Cluster":
                patch["spec"] = {"paused": (item.get("spec") or {}).get("paused")}
            self.objects.patch(kind, meta.get("namespace"), str(meta["name"]), patch)


def _what(item: Mapping[str, Any]) -> str:
    meta = item.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{item.get('kind')} {where}{meta.get('name')}"


def etcd_request_id(created: str) -> str:
    """The id of the etcd restore a FlexControlPlane made anew is asked, from the backup's time
    (``2026-12-07T10:00:00Z``): ``platform-restore-20261207T100000Z``."""
    return "platform-restore-" + "".join(c for c in created if c.isalnum())[:40]


def restore(objects: ObjectsApi, items: Iterable[dict[str, Any]], created: str) -> list[tuple[str, str]]:
    """Write every cluster of the backup (made at ``created``) back (see the module); what each object
    came to."""
    outcomes: list[tuple[str, str]] = []
    for cluster in grouped(list(items)):
        outcomes += ClusterRestore(objects, cluster, etcd_request_id(created)).run()
    return outcomes
