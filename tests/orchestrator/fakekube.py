"""The management cluster in memory, with the surface of ``sources.protocols.KubeApi``: what the services
run on in-process tests instead of the devstack's Kubernetes emulator.

It keeps what the services count on from the API server: every write gets a new resource version, a
write naming an older one is refused (``Conflict``, as a 409), a create of an existing name too, a
replace of a missing object is ``NotFound``; label selectors select as the devstack's Kubernetes
emulator reads them (``devstack.kube.selectors``). Thread-safe, as the services write from threads
(lock renewals, fan-outs). ``unreachable()`` makes every call fail as a cluster that does not answer would.
"""

from __future__ import annotations

import copy
import datetime
import itertools
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kubernetes import client

from devstack import seed
from devstack.images import ImageServer
from devstack.kube.selectors import parse_label_selector
from orchestrator.auth import Principal
from orchestrator.errors import Conflict, FlexPlaneError, NotFound, Unavailable
from orchestrator.services.context import Context, Sources
from orchestrator.sources.kube_objects import (
    ID_LABEL,
    KIND_LABEL,
    CatalogEntry,
    EventEntry,
    KubeObject,
    Lease,
    Resource,
    SecretEntry,
    config_map_name,
)
from orchestrator.sources.protocols import ClusterApi, KubeApi

WHERE = "management cluster"


def matches(selector: str, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy a label selector, as the devstack's Kubernetes emulator reads it."""
    return all(requirement.matches(labels) for requirement in parse_label_selector(selector))


class FakeKube:
    """The platform namespace's ConfigMaps (the catalog), Leases, Secrets and Events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions = itertools.count(1)
        self.catalog: dict[str, CatalogEntry] = {}  # by ConfigMap name
        self.leases: dict[str, tuple[Lease, dict[str, str]]] = {}
        self.secrets: dict[str, SecretEntry] = {}
        self.events: list[tuple[EventEntry, client.EventsV1Event]] = []
        self.calls = 0
        self._down: str | None = None

    def unreachable(self, why: str = "connection refused") -> None:
        """Every call from now on fails as if the cluster did not answer (``reachable`` undoes it)."""
        self._down = why

    def reachable(self) -> None:
        self._down = None

    def _call(self) -> None:
        self.calls += 1
        if self._down is not None:
            raise Unavailable(WHERE, f"the management cluster did not answer: {self._down}")

    def _version(self) -> str:
        return str(next(self._versions))

    # ------------------------------------------------------------------ catalog

    def list_catalog(self, kinds: Iterable[str]) -> list[CatalogEntry]:
        wanted = set(kinds)
        with self._lock:
            self._call()
            return [copy.deepcopy(e) for e in self.catalog.values() if e.kind in wanted]

    def get_catalog(self, kind: str, ident: str) -> CatalogEntry | None:
        with self._lock:
            self._call()
            return copy.deepcopy(self.catalog.get(config_map_name(kind, ident)))

    def create_catalog(
        self, kind: str, ident: str, spec: Mapping[str, Any], *, labels: Mapping[str, str] | None = None
    ) -> CatalogEntry:
        name = config_map_name(kind, ident)
        with self._lock:
            self._call()
            if name in self.catalog:
                raise Conflict(f"{kind} {ident!r} already exists")
            return self._store(name, kind, ident, spec, labels)

    def replace_catalog(
        self,
        kind: str,
        ident: str,
        spec: Mapping[str, Any],
        resource_version: str,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> CatalogEntry:
        name = config_map_name(kind, ident)
        with self._lock:
            self._call()
            current = self.catalog.get(name)
            if current is None:
                raise NotFound(kind, ident)
            if current.resource_version != resource_version:
                raise Conflict(f"{kind} {ident!r} changed meanwhile, retry")
            return self._store(name, kind, ident, spec, labels)

    def _store(
        self, name: str, kind: str, ident: str, spec: Mapping[str, Any], labels: Mapping[str, str] | None
    ) -> CatalogEntry:
        entry = CatalogEntry(
            kind=kind,
            ident=ident,
            spec=copy.deepcopy(dict(spec)),
            resource_version=self._version(),
            labels={**(labels or {}), KIND_LABEL: kind, ID_LABEL: ident},
        )
        self.catalog[name] = entry
        return copy.deepcopy(entry)

    def delete_catalog(self, kind: str, ident: str, resource_version: str | None = None) -> bool:
        name = config_map_name(kind, ident)
        with self._lock:
            self._call()
            current = self.catalog.get(name)
            if current is None:
                return False
            if resource_version and current.resource_version != resource_version:
                raise Conflict(f"{kind} {ident!r} changed meanwhile, retry")
            del self.catalog[name]
            return True

    # ------------------------------------------------------------------ leases

    def get_lease(self, name: str) -> Lease | None:
        with self._lock:
            self._call()
            held = self.leases.get(name)
            return None if held is None else held[0]

    def list_leases(self, label_selector: str) -> list[Lease]:
        with self._lock:
            self._call()
            return [lease for lease, labels in self.leases.values() if matches(label_selector, labels)]

    def write_lease(
        self, lease: Lease, resource_version: str | None, *, labels: Mapping[str, str] | None = None
    ) -> Lease:
        with self._lock:
            self._call()
            current = self.leases.get(lease.name)
            if (current is None) != (resource_version is None) or (
                current is not None and current[0].resource_version != resource_version
            ):
                raise Conflict(f"lease {lease.name} was taken meanwhile")
            stored = replace(lease, resource_version=self._version())
            self.leases[lease.name] = (stored, dict(labels or (current[1] if current else {})))
            return stored

    def delete_lease(self, name: str, resource_version: str) -> None:
        with self._lock:
            self._call()
            current = self.leases.get(name)
            if current is None:
                return
            if current[0].resource_version != resource_version:
                raise Conflict(f"lease {name} was taken meanwhile")
            del self.leases[name]

    # ------------------------------------------------------------------ secrets

    def get_secret(self, name: str) -> SecretEntry | None:
        with self._lock:
            self._call()
            return copy.deepcopy(self.secrets.get(name))

    def list_secrets(self, label_selector: str) -> list[SecretEntry]:
        with self._lock:
            self._call()
            return [copy.deepcopy(s) for s in self.secrets.values() if matches(label_selector, s.labels)]

    def create_secret(
        self,
        name: str,
        data: Mapping[str, bytes],
        *,
        type_name: str = "Opaque",
        labels: Mapping[str, str] | None = None,
    ) -> SecretEntry:
        with self._lock:
            self._call()
            if name in self.secrets:
                raise Conflict(f"Secret {name} already exists")
            entry = SecretEntry(
                name, type_name, dict(data), dict(labels or {}), self._version(), str(uuid.uuid4())
            )
            self.secrets[name] = entry
            return copy.deepcopy(entry)

    def replace_secret(self, entry: SecretEntry, data: Mapping[str, bytes]) -> SecretEntry:
        with self._lock:
            self._call()
            current = self.secrets.get(entry.name)
            if current is None:
                raise NotFound("Secret", entry.name)
            if current.resource_version != entry.resource_version:
                raise Conflict(f"Secret {entry.name} changed meanwhile")
            stored = replace(current, data=dict(data), resource_version=self._version())
            self.secrets[entry.name] = stored
            return copy.deepcopy(stored)

    def delete_secret(self, entry: SecretEntry) -> bool:
        with self._lock:
            self._call()
            current = self.secrets.get(entry.name)
            if current is None:
                return False
            if (current.uid, current.resource_version) != (entry.uid or current.uid, entry.resource_version):
                raise Conflict(f"Secret {entry.name} changed meanwhile")
            del self.secrets[entry.name]
            return True

    # ------------------------------------------------------------------ events

    def create_event(self, event: client.EventsV1Event) -> None:
        meta = event.metadata or client.V1ObjectMeta()
        when = event.event_time or datetime.datetime.now(datetime.UTC)
        entry = EventEntry(
            name=str(meta.name or meta.generate_name or f"event-{len(self.events)}"),
            time=when,
            labels=dict(meta.labels or {}),
            annotations=dict(meta.annotations or {}),
        )
        with self._lock:
            self._call()
            self.events.append((entry, event))

    def list_events(self, label_selector: str, limit: int) -> list[EventEntry]:
        with self._lock:
            self._call()
            return [e for e, _ in self.events if matches(label_selector, e.labels)][:limit]

    def ping(self) -> None:
        with self._lock:
            self._call()


class FakeClusterApi:
    """The management cluster's custom objects (Cluster API's kinds, our providers') by kind, namespace and
    name, with the surface of ``sources.protocols.ClusterApi``: creates conflict, patches merge (RFC 7386)
    and need the object, label selectors select; ``secrets`` holds the namespaces' Secrets. A test makes a
    kind's creates fail by putting the error in ``refusals`` under the kind (``"Cluster"``), as a management
    cluster that stops answering half-way would."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions = itertools.count(1)
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.secrets: dict[tuple[str, str], SecretEntry] = {}
        self.refusals: dict[str, FlexPlaneError] = {}

    def _object(self, resource: Resource, body: Mapping[str, Any]) -> KubeObject:
        meta = body.get("metadata") or {}
        return KubeObject(
            kind=resource.kind,
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            labels=dict(meta.get("labels") or {}),
            spec=copy.deepcopy(body.get("spec") or {}),
            status=copy.deepcopy(body.get("status") or {}),
            uid=str(meta.get("uid", "")),
            resource_version=str(meta.get("resourceVersion", "")),
            deleting=bool(meta.get("deletionTimestamp")),
            owners=tuple((str(o.get("kind")), str(o.get("name"))) for o in meta.get("ownerReferences") or ()),
            generation=int(meta.get("generation") or 0),
        )

    def list(self, resource: Resource, namespace: str | None, label_selector: str) -> list[KubeObject]:
        with self._lock:
            return [
                self._object(resource, body)
                for (plural, ns, _name), body in sorted(self.objects.items())
                if plural == resource.plural
                and namespace in (None, ns)
                and matches(label_selector, (body.get("metadata") or {}).get("labels") or {})
            ]

    def create(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> KubeObject:
        stored = copy.deepcopy(dict(body))
        meta = stored.setdefault("metadata", {})
        key = (resource.plural, namespace, str(meta.get("name")))
        with self._lock:
            refusal = self.refusals.get(resource.kind)
            if refusal is not None:
                raise refusal
            if key in self.objects:
                raise Conflict(f"{resource.kind} {key[2]} already exists in namespace {namespace}")
            meta.update(namespace=namespace, uid=str(uuid.uuid4()), resourceVersion=str(next(self._versions)))
            meta.setdefault("generation", 1)
            self.objects[key] = stored
            return self._object(resource, stored)

    def patch(self, resource: Resource, namespace: str, name: str, patch: Mapping[str, Any]) -> KubeObject:
        with self._lock:
            body = self.objects.get((resource.plural, namespace, name))
            if body is None:
                raise NotFound(resource.kind, name)
            _merge(body, patch)
            body["metadata"]["resourceVersion"] = str(next(self._versions))
            return self._object(resource, body)

    def delete(self, resource: Resource, namespace: str, name: str) -> bool:
        with self._lock:
            return self.objects.pop((resource.plural, namespace, name), None) is not None

    def ensure_namespace(self, namespace: str, labels: Mapping[str, str]) -> None:
        with self._lock:
            self.namespaces.setdefault(namespace, dict(labels))

    def secret(self, namespace: str, name: str) -> SecretEntry | None:
        with self._lock:
            return copy.deepcopy(self.secrets.get((namespace, name)))

    def write_secret(
        self,
        namespace: str,
        name: str,
        data: Mapping[str, bytes],
        labels: Mapping[str, str],
        annotations: Mapping[str, str] | None = None,
        *,
        resource_version: str | None = None,
    ) -> None:
        with self._lock:
            current = self.secrets.get((namespace, name))
            if resource_version is not None and (
                current is None or current.resource_version != resource_version
            ):
                raise Conflict(f"Secret {name} changed meanwhile in namespace {namespace}, retry")
            self.secrets[(namespace, name)] = SecretEntry(
                name=name,
                type="Opaque",
                data=dict(data),
                labels=dict(labels),
                resource_version=str(next(self._versions)),
                uid=current.uid if current is not None else str(uuid.uuid4()),
                annotations=dict(annotations or {}),
            )

    def delete_secret(self, namespace: str, name: str) -> bool:
        with self._lock:
            return self.secrets.pop((namespace, name), None) is not None


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """A JSON merge patch (RFC 7386): null removes, objects merge, anything else replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def seeded(zones: Sequence[str] = ("zone-a", "zone-b"), *, kubernetes: bool = False) -> FakeKube:
    """A management cluster holding the devstack's catalog (``devstack.seed``), as a world's starts; its
    images' addresses are those of an image server that is never started."""
    kube = FakeKube()
    for kind, ident, spec, labels in seed.catalog(zones, ImageServer(), kubernetes=kubernetes):
        kube.create_catalog(kind, ident, spec, labels=labels)
    return kube


def context_on(
    kube: KubeApi,
    *roles: str,
    subject: str = "tester",
    vdc: str | None = None,
    clusterapi: ClusterApi | None = None,
) -> Context:
    """A fresh request of a caller of ``roles`` whose management cluster is ``kube`` (and ``clusterapi``,
    an empty one of its own unless given)."""
    principal = Principal(subject=subject, name=subject, email="", roles=frozenset(roles))
    sources = Sources(kube=kube, clusterapi=clusterapi or FakeClusterApi())
    return Context(principal=principal, vdc=vdc, sources=sources)
