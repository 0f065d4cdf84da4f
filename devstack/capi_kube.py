"""The Kubernetes calls of the devstack's Cluster API stand-in (:mod:`devstack.capi_core`): test-only.

Objects are plain dicts, as the API answers them; references are v1beta2's ``{apiGroup, kind, name}`` in
the referrer's namespace. The version of a referenced kind is read from its CRD's contract label
(``cluster.x-k8s.io/v1beta2: <version>``), as core does.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from kubernetes import client

from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from orchestrator.sources.kube_objects import BOOTSTRAP_GROUP as BOOTSTRAP_GROUP
from orchestrator.sources.kube_objects import CLUSTER_API_GROUP as CORE_GROUP
from orchestrator.sources.kube_objects import CLUSTER_API_VERSION as CORE_VERSION
from orchestrator.sources.kube_objects import CONTRACT_LABEL

Body = dict[str, Any]

WATCH_FILTER_LABEL = "cluster.x-k8s.io/watch-filter"


def meta(obj: Body) -> Body:
    metadata: Body = obj.setdefault("metadata", {})
    return metadata


def ref_of(obj: Body) -> Body:
    group = obj["apiVersion"].rpartition("/")[0]
    return {"apiGroup": group, "kind": obj["kind"], "name": meta(obj)["name"]}


def owner_reference(owner: Body, *, controller: bool = False) -> Body:
    reference: Body = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta(owner)["name"],
        "uid": meta(owner)["uid"],
    }
    if controller:
        reference.update(controller=True, blockOwnerDeletion=True)
    return reference


def conditions(obj: Body, **states: tuple[bool, str]) -> list[Body]:
    """v1beta2 (metav1) conditions, keeping each one's lastTransitionTime while its status stays."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    previous = {c.get("type"): c for c in obj.get("status", {}).get("conditions") or []}
    result = []
    for kind, (state, reason) in states.items():
        status = "True" if state else "False"
        before = previous.get(kind) or {}
        result.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": "",
                "lastTransitionTime": before.get("lastTransitionTime", now)
                if before.get("status") == status
                else now,
                "observedGeneration": meta(obj).get("generation"),
            }
        )
    return result


class Kube:
    """The management cluster's API, as the stand-in uses it (dicts in, dicts out)."""

    def __init__(self, api: client.ApiClient, watch_filter: str | None = None) -> None:
        self.api = api
        # As core's --watch-filter: only objects with this label value are read, and new ones carry it.
        self.filter_labels = {WATCH_FILTER_LABEL: watch_filter} if watch_filter else {}
        self._selector = f"{WATCH_FILTER_LABEL}={watch_filter}" if watch_filter else ""
        # Typed as Any: the stand-in speaks plain dicts, which the client accepts as bodies and answers
        # for custom objects (its stubs name its model classes).
        self.custom: Any = client.CustomObjectsApi(api)
        self.core: Any = client.CoreV1Api(api)
        self.extensions: Any = client.ApiextensionsV1Api(api)
        self._versions: dict[tuple[str, str], str] = {}

    def install_core_crds(self) -> None:
        """Cluster API core's and CABPK's CRDs, as ``clusterctl init`` would have installed them."""
        for crd in CLUSTER_API_CORE_CRDS:
            try:
                self.extensions.create_custom_resource_definition(crd)
            except client.ApiException as error:
                if error.status != 409:
                    raise

    # ------------------------------------------------------------------ kinds

    @staticmethod
    def plural(group: str, kind: str) -> str:
        del group
        return f"{kind.lower()}s"

    def version(self, group: str, kind: str) -> str:
        """The served version of a kind: core's v1beta2, or what its CRD's contract label names."""
        if group in (CORE_GROUP, BOOTSTRAP_GROUP):
            return CORE_VERSION
        key = (group, kind)
        if key not in self._versions:
            crd = self.extensions.read_custom_resource_definition(f"{self.plural(group, kind)}.{group}")
            labels = crd.metadata.labels or {}
            if CONTRACT_LABEL not in labels:
                raise LookupError(f"the CRD of {kind}.{group} has no {CONTRACT_LABEL} label")
            self._versions[key] = labels[CONTRACT_LABEL].split("_")[-1]
        return self._versions[key]

    # ------------------------------------------------------------------ reads

    def list_objects(self, group: str, plural: str, namespace: str) -> list[Body]:
        kind = plural.removesuffix("s")
        try:
            version = (
                self.version(group, kind) if group not in (CORE_GROUP, BOOTSTRAP_GROUP) else CORE_VERSION
            )
        except client.ApiException as error:
            if error.status == 404:
                return []  # the kind is not installed (yet)
            raise
        except LookupError:
            return []
        items: list[Body] = self.custom.list_namespaced_custom_object(group, version, namespace, plural)[
            "items"
        ]
        return items

    def list_secrets(self, namespace: str) -> list[Body]:
        answer = self.core.list_namespaced_secret(
            namespace, label_selector=self._selector, _preload_content=False
        )
        items: list[Body] = json.loads(answer.data)["items"]
        for item in items:
            item.setdefault("apiVersion", "v1")
            item.setdefault("kind", "Secret")
        return items

    def get_secret(self, namespace: str, name: str) -> Body | None:
        try:
            answer = self.core.read_namespaced_secret(name, namespace, _preload_content=False)
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        secret: Body = json.loads(answer.data)
        return secret

    def get(self, group: str, kind: str, namespace: str, name: str) -> Body | None:
        try:
            obj: Body = self.custom.get_namespaced_custom_object(
                group, self.version(group, kind), namespace, self.plural(group, kind), name
            )
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return obj

    def get_ref(self, namespace: str, ref: Body | None) -> Body | None:
        if not ref or not ref.get("name"):
            return None
        return self.get(ref["apiGroup"], ref["kind"], namespace, ref["name"])

    def owner_exists(self, namespace: str, owner: Body) -> bool:
        group = owner["apiVersion"].rpartition("/")[0]
        if not group:
            return True  # a core-group owner: not the stand-in's to judge
        try:
            obj = self.get(group, owner["kind"], namespace, owner["name"])
        except LookupError:
            return True
        return obj is not None and meta(obj).get("uid") == owner.get("uid")

    # ------------------------------------------------------------------ writes

    def create(self, group: str, plural: str, namespace: str, body: Body, *, exist_ok: bool = False) -> Body:
        version = body["apiVersion"].rpartition("/")[2]
        try:
            obj: Body = self.custom.create_namespaced_custom_object(group, version, namespace, plural, body)
        except client.ApiException as error:
            if error.status == 409 and exist_ok:
                return body
            raise
        return obj

    def patch(self, group: str, plural: str, namespace: str, name: str, patch: Body) -> Body:
        version = CORE_VERSION if group in (CORE_GROUP, BOOTSTRAP_GROUP) else self.version(group, plural[:-1])
        obj: Body = self.custom.patch_namespaced_custom_object(group, version, namespace, plural, name, patch)
        return obj

    def patch_status(self, obj: Body, status: Body) -> None:
        """Patch an object's status, unless it already says so (a write that changes nothing is skipped)."""
        current = obj.get("status", {})
        if all(current.get(key) == value for key, value in status.items()):
            return
        group, _, version = obj["apiVersion"].rpartition("/")
        try:
            self.custom.patch_namespaced_custom_object_status(
                group,
                version,
                meta(obj)["namespace"],
                self.plural(group, obj["kind"]),
                meta(obj)["name"],
                {"status": status},
            )
        except client.ApiException as error:
            if error.status != 404:  # gone meanwhile: nothing to report on
                raise

    def ensure_owner(self, obj: Body, ref: Body | None, owner: Body) -> None:
        """Add ``owner`` to the object's ownerReferences (not as controller), unless it is there."""
        del ref
        owners = meta(obj).get("ownerReferences") or []
        if any(o.get("uid") == meta(owner)["uid"] for o in owners):
            return
        group, _, version = obj["apiVersion"].rpartition("/")
        patch = {"metadata": {"ownerReferences": [*owners, owner_reference(owner)]}}
        self.custom.patch_namespaced_custom_object(
            group, version, meta(obj)["namespace"], self.plural(group, obj["kind"]), meta(obj)["name"], patch
        )
        meta(obj)["ownerReferences"] = patch["metadata"]["ownerReferences"]

    def delete_object(self, obj: Body) -> None:
        """Delete an object (background propagation); one already gone or going is fine."""
        if meta(obj).get("deletionTimestamp"):
            return
        group, _, version = obj["apiVersion"].rpartition("/")
        namespace, name = meta(obj)["namespace"], meta(obj)["name"]
        try:
            if not group and obj["kind"] == "Secret":
                self.core.delete_namespaced_secret(name, namespace)
            else:
                self.custom.delete_namespaced_custom_object(
                    group, version, namespace, self.plural(group, obj["kind"]), name
                )
        except client.ApiException as error:
            if error.status != 404:
                raise
