"""The management cluster: the catalog (labelled ConfigMaps), Leases (locks, spent console tickets), Secrets.

The only module that speaks to the Kubernetes API. It uses the official client with a
kubeconfig (``FLEXPLANE_KUBECONFIG``) or, without one, the in-cluster service account.

The catalog's layout is ``kube_objects``' (a ConfigMap per object, labelled with its kind and id, its
spec as JSON), as are the values read and written. Writes are optimistic: a replace names the
``resourceVersion`` it read, and a write that lost a race answers ``Conflict``.

Secrets hold what must not sit in a ConfigMap: the platform CA's key (a ``kubernetes.io/tls``
Secret) and the hashes of host join tokens. Their data is read and written as bytes; the
base64 of the API stays in here.

Every call runs under the source's timeout. Failures are domain errors naming the management
cluster: ``Unavailable`` when it did not answer (or answered that it cannot now),
``UpstreamFailure`` with its own message when it refused. One wrapper makes every call and maps its
failures (:class:`ApiCalls`): this source's, ``sources.clusterapi``'s and the providers' (with errors of
their own), each naming at the call only the statuses that mean something there (404, 409).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, overload

import orjson
from django.conf import settings
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, Unavailable, UpstreamFailure
from orchestrator.sources.kube_objects import (
    ID_LABEL,
    KIND_LABEL,
    SPEC_KEY,
    CatalogEntry,
    EventEntry,
    Lease,
    SecretEntry,
    config_map,
    config_map_name,
    secret_body,
)

logger = logging.getLogger(__name__)

WHERE = "management cluster"
# Large enough that a catalog is one page; a bigger one is read in pages of this size.
LIST_PAGE_SIZE = 500
# Statuses meaning "not now" rather than "no": the cluster is overloaded, restarting or timing out.
_TRANSIENT = frozenset({429, 500, 502, 503, 504})
# What the client raises when the API server did not answer (urllib3's errors, the socket's).
UNANSWERED = (HTTPError, OSError)

T = TypeVar("T")
A = TypeVar("A")


def _event(item: client.EventsV1Event) -> EventEntry:
    meta = item.metadata or client.V1ObjectMeta()
    when = item.event_time or meta.creation_timestamp
    return EventEntry(str(meta.name), when, dict(meta.labels or {}), dict(meta.annotations or {}))


class _BadEntry(Exception):
    """A ConfigMap carrying the catalog labels but no readable spec."""


def _entry(item: client.V1ConfigMap) -> CatalogEntry:
    meta = item.metadata
    assert meta is not None  # the API server always sends metadata
    return _catalog_entry(meta.name, meta.labels, item.data, meta.resource_version)


def _raw_entry(item: Any) -> CatalogEntry:
    """A catalog entry from a ConfigMap as the API server's JSON has it (a list read without the client's
    typed models)."""
    if not isinstance(item, dict):
        raise _BadEntry("an item of the list is not an object")
    meta = item.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return _catalog_entry(meta.get("name"), meta.get("labels"), item.get("data"), meta.get("resourceVersion"))


def _catalog_entry(name: Any, labels: Any, data: Any, version: Any) -> CatalogEntry:
    labels = dict(labels) if isinstance(labels, dict) else {}
    kind, ident = labels.get(KIND_LABEL), labels.get(ID_LABEL)
    raw = data.get(SPEC_KEY) if isinstance(data, dict) else None
    if not kind or not ident or not isinstance(raw, str):
        raise _BadEntry(f"ConfigMap {name} lacks the {KIND_LABEL}/{ID_LABEL} labels or data.spec")
    try:
        spec = json.loads(raw)
    except ValueError as exc:
        raise _BadEntry(f"ConfigMap {name}: data.spec is not JSON ({exc})") from exc
    if not isinstance(spec, dict):
        raise _BadEntry(f"ConfigMap {name}: data.spec is not a JSON object")
    return CatalogEntry(kind, ident, spec, str(version or ""), labels)


def status_message(body: str | bytes | None) -> str | None:
    """The API server's own message, from the Status it answers a refusal with; None without one."""
    try:
        status = json.loads(body or "")
    except (TypeError, ValueError):
        return None
    message = status.get("message") if isinstance(status, dict) else None
    return str(message) if message else None


def _message(exc: ApiException) -> str:
    """The API server's own message, else the HTTP reason."""
    return status_message(exc.body) or f"{exc.status} {exc.reason}"


def failure(exc: ApiException, doing: str) -> FlexPlaneError:
    """A domain error for a refused call; 404 and 409 are left to the caller, who knows what they mean.
    (Also for the sources of other management-cluster objects, e.g. ``clusterapi``.)"""
    status = int(exc.status or 0)
    if status in _TRANSIENT or status == 0:
        return Unavailable(WHERE, f"the management cluster could not {doing} now: {_message(exc)}")
    return UpstreamFailure(
        WHERE, f"the management cluster refused to {doing}: {_message(exc)}", status=status
    )


def unreachable(exc: Exception) -> Unavailable:
    """A domain error for a call the management cluster did not answer."""
    return Unavailable(WHERE, f"the management cluster did not answer: {exc}")


@dataclass(frozen=True)
class ApiCalls:
    """Makes a Kubernetes API call and turns its failures into the caller's errors: a refusal
    (``ApiException``) into ``refused(exc, doing)``, no answer (:data:`UNANSWERED`) into
    ``unanswered(exc, doing)``. ``doing`` says what the call was for (``read Secret x``).

    The statuses that mean something to one call are named there: ``answers`` maps a status to the value
    the call answers instead (404 to None: nothing there), ``refusals`` to the error it raises instead
    (409 to ``Conflict``). The original exception is always the cause.
    """

    refused: Callable[[ApiException, str], Exception]
    unanswered: Callable[[Exception, str], Exception]

    @overload
    def __call__(
        self, doing: str, request: Callable[[], T], *, refusals: Mapping[int, Exception] | None = None
    ) -> T: ...

    @overload
    def __call__(
        self,
        doing: str,
        request: Callable[[], T],
        *,
        answers: Mapping[int, A],
        refusals: Mapping[int, Exception] | None = None,
    ) -> T | A: ...

    def __call__(
        self,
        doing: str,
        request: Callable[[], Any],
        *,
        answers: Mapping[int, Any] | None = None,
        refusals: Mapping[int, Exception] | None = None,
    ) -> Any:
        try:
            return request()
        except ApiException as exc:
            status = int(exc.status or 0)
            if answers and status in answers:
                return answers[status]
            refusal = (refusals or {}).get(status)
            raise (refusal if refusal is not None else self.refused(exc, doing)) from exc
        except UNANSWERED as exc:
            raise self.unanswered(exc, doing) from exc

    def read(
        self, doing: str, request: Callable[[], T], *, refusals: Mapping[int, Exception] | None = None
    ) -> T | None:
        """The call's answer, or None when there is nothing there (404)."""
        return self(doing, request, answers={404: None}, refusals=refusals)

    def delete(
        self, doing: str, request: Callable[[], object], *, refusals: Mapping[int, Exception] | None = None
    ) -> bool:
        """Send a delete: True, or False when it was gone already (404)."""

        def sent() -> bool:
            request()
            return True

        return self(doing, sent, answers={404: False}, refusals=refusals)


# The orchestrator's calls: domain errors naming the management cluster.
api_call = ApiCalls(failure, lambda exc, _doing: unreachable(exc))
# A health check's: whatever went wrong, the management cluster is unavailable.
_ping_call = ApiCalls(
    lambda exc, _doing: Unavailable(WHERE, f"the management cluster answered {exc.status} {exc.reason}"),
    lambda exc, _doing: unreachable(exc),
)


def secret_entry(item: client.V1Secret) -> SecretEntry:
    """A Secret as read, its data decoded (``UpstreamFailure`` when a value is not base64)."""
    meta = item.metadata
    assert meta is not None
    data: dict[str, bytes] = {}
    for key, value in (item.data or {}).items():
        try:
            data[key] = base64.b64decode(value or "", validate=True)
        except (binascii.Error, ValueError) as exc:
            raise UpstreamFailure(WHERE, f"Secret {meta.name}: data.{key} is not base64") from exc
    return SecretEntry(
        name=str(meta.name),
        type=str(item.type or "Opaque"),
        data=data,
        labels=dict(meta.labels or {}),
        resource_version=str(meta.resource_version or ""),
        uid=str(meta.uid or ""),
        annotations=dict(meta.annotations or {}),
    )


def _lease(item: client.V1Lease) -> Lease:
    meta = item.metadata
    assert meta is not None
    spec = item.spec or client.V1LeaseSpec()
    return Lease(
        name=str(meta.name),
        holder=spec.holder_identity or None,
        acquire_time=spec.acquire_time,
        renew_time=spec.renew_time,
        duration_seconds=spec.lease_duration_seconds,
        transitions=int(spec.lease_transitions or 0),
        resource_version=meta.resource_version,
    )


class KubeSource:
    """The platform namespace's catalog ConfigMaps and Leases, each call under a timeout."""

    def __init__(self, api_client: client.ApiClient, namespace: str, timeout: float) -> None:
        self.core = client.CoreV1Api(api_client)
        self.coordination = client.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.timeout = timeout

    # ------------------------------------------------------------------ catalog

    def list_catalog(self, kinds: Iterable[str]) -> list[CatalogEntry]:
        """Every catalog object of these kinds: one list call (``flexplane.io/kind in (...)``).

        A ConfigMap that carries the labels but no readable spec is skipped and logged: one bad
        object must not take the whole catalog down. Every request reads the catalog before anything
        else, so the answer is parsed as JSON, not into the client's typed models (ten times the time,
        mostly timestamps and managedFields this read never looks at).
        """
        wanted = sorted(set(kinds))
        if not wanted:
            return []
        selector = f"{KIND_LABEL} in ({','.join(wanted)})"
        entries: list[CatalogEntry] = []
        token: str | None = None
        while True:
            try:
                page = api_call(
                    f"list the catalog ({', '.join(wanted)})", partial(self._page, selector, token)
                )
            except ValueError as exc:
                raise UpstreamFailure(WHERE, f"the catalog's list is not JSON ({exc})") from exc
            if not isinstance(page, dict):
                raise UpstreamFailure(WHERE, "the catalog's list is not a list of ConfigMaps")
            for item in page.get("items") or ():
                try:
                    entries.append(_raw_entry(item))
                except _BadEntry as exc:
                    logger.warning("catalog: skipping an unreadable object: %s", exc)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return entries

    def _page(self, selector: str, token: str | None) -> Any:
        """One page of the catalog's ConfigMaps, as JSON."""
        # Without preloading, the client answers urllib3's response (its typing says the list).
        answer: Any = self.core.list_namespaced_config_map(
            self.namespace,
            label_selector=selector,
            limit=LIST_PAGE_SIZE,
            _continue=token,
            _request_timeout=self.timeout,
            _preload_content=False,
        )
        return orjson.loads(answer.data)

    def get_catalog(self, kind: str, ident: str) -> CatalogEntry | None:
        """One catalog object, or None when there is none."""
        name = config_map_name(kind, ident)
        item = api_call.read(
            f"read {kind} {ident!r}",
            lambda: self.core.read_namespaced_config_map(name, self.namespace, _request_timeout=self.timeout),
        )
        if item is None:
            return None
        try:
            return _entry(item)
        except _BadEntry as exc:
            raise UpstreamFailure(WHERE, str(exc)) from exc

    def create_catalog(
        self, kind: str, ident: str, spec: Mapping[str, Any], *, labels: Mapping[str, str] | None = None
    ) -> CatalogEntry:
        """Store a new catalog object; ``Conflict`` if one of that kind and id exists."""
        body = config_map(kind, ident, spec, labels)
        item = api_call(
            f"create {kind} {ident!r}",
            lambda: self.core.create_namespaced_config_map(
                self.namespace, body, _request_timeout=self.timeout
            ),
            refusals={409: Conflict(f"{_noun(kind)} {ident!r} already exists")},
        )
        return _entry(item)

    def replace_catalog(
        self,
        kind: str,
        ident: str,
        spec: Mapping[str, Any],
        resource_version: str,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> CatalogEntry:
        """Write an object back at the version it was read at; ``Conflict`` if it changed meanwhile."""
        name = config_map_name(kind, ident)
        body = config_map(kind, ident, spec, labels, resource_version)
        item = api_call(
            f"update {kind} {ident!r}",
            lambda: self.core.replace_namespaced_config_map(
                name, self.namespace, body, _request_timeout=self.timeout
            ),
            refusals={
                409: Conflict(f"{_noun(kind)} {ident!r} changed meanwhile, retry"),
                404: NotFound(_noun(kind), ident),
            },
        )
        return _entry(item)

    def delete_catalog(self, kind: str, ident: str, resource_version: str | None = None) -> bool:
        """Delete an object (only at that version, if given); False when it was already gone."""
        name = config_map_name(kind, ident)
        options = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version=resource_version)
            if resource_version
            else None
        )
        return api_call.delete(
            f"delete {kind} {ident!r}",
            lambda: self.core.delete_namespaced_config_map(
                name, self.namespace, body=options, _request_timeout=self.timeout
            ),
            refusals={409: Conflict(f"{_noun(kind)} {ident!r} changed meanwhile, retry")},
        )

    # ------------------------------------------------------------------ leases

    def get_lease(self, name: str) -> Lease | None:
        item = api_call.read(
            f"read lease {name}",
            lambda: self.coordination.read_namespaced_lease(
                name, self.namespace, _request_timeout=self.timeout
            ),
        )
        return None if item is None else _lease(item)

    def list_leases(self, label_selector: str) -> list[Lease]:
        """The Leases that match a label selector (one page: these are few, e.g. spent console tickets)."""
        page = api_call(
            f"list leases ({label_selector})",
            lambda: self.coordination.list_namespaced_lease(
                self.namespace, label_selector=label_selector, _request_timeout=self.timeout
            ),
        )
        return [_lease(item) for item in page.items]

    def write_lease(
        self, lease: Lease, resource_version: str | None, *, labels: Mapping[str, str] | None = None
    ) -> Lease:
        """Create the lease (``resource_version`` None) or replace it at that version.

        ``Conflict`` when another writer got there first: the lease exists already, or it
        changed since it was read.
        """
        body = client.V1Lease(
            api_version="coordination.k8s.io/v1",
            kind="Lease",
            metadata=client.V1ObjectMeta(
                name=lease.name, resource_version=resource_version, labels=dict(labels) if labels else None
            ),
            spec=client.V1LeaseSpec(
                holder_identity=lease.holder,
                lease_duration_seconds=lease.duration_seconds,
                acquire_time=lease.acquire_time,
                renew_time=lease.renew_time,
                lease_transitions=lease.transitions,
            ),
        )

        def write() -> client.V1Lease:
            if resource_version is None:
                return self.coordination.create_namespaced_lease(
                    self.namespace, body, _request_timeout=self.timeout
                )
            return self.coordination.replace_namespaced_lease(
                lease.name, self.namespace, body, _request_timeout=self.timeout
            )

        taken = Conflict(f"lease {lease.name} was taken meanwhile")
        # 404: deleted since it was read; someone else's move too.
        return _lease(api_call(f"write lease {lease.name}", write, refusals={404: taken, 409: taken}))

    def delete_lease(self, name: str, resource_version: str) -> None:
        """Delete a lease only at the version read (``Conflict`` if it changed); a gone one is fine."""
        options = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version=resource_version)
        )
        api_call.delete(
            f"delete lease {name}",
            lambda: self.coordination.delete_namespaced_lease(
                name, self.namespace, body=options, _request_timeout=self.timeout
            ),
            refusals={409: Conflict(f"lease {name} was taken meanwhile")},
        )

    # ------------------------------------------------------------------ secrets

    def get_secret(self, name: str) -> SecretEntry | None:
        """One Secret, or None when there is none."""
        item = api_call.read(
            f"read Secret {name}",
            lambda: self.core.read_namespaced_secret(name, self.namespace, _request_timeout=self.timeout),
        )
        return None if item is None else secret_entry(item)

    def list_secrets(self, label_selector: str) -> list[SecretEntry]:
        """The Secrets that match a label selector (one page: these are few, e.g. pending join tokens)."""
        page = api_call(
            f"list Secrets ({label_selector})",
            lambda: self.core.list_namespaced_secret(
                self.namespace, label_selector=label_selector, _request_timeout=self.timeout
            ),
        )
        return [secret_entry(item) for item in page.items]

    def create_secret(
        self,
        name: str,
        data: Mapping[str, bytes],
        *,
        type_name: str = "Opaque",
        labels: Mapping[str, str] | None = None,
    ) -> SecretEntry:
        """Store a new Secret; ``Conflict`` if one of that name exists."""
        body = secret_body(name, data, type_name=type_name, labels=labels)
        item = api_call(
            f"create Secret {name}",
            lambda: self.core.create_namespaced_secret(self.namespace, body, _request_timeout=self.timeout),
            refusals={409: Conflict(f"Secret {name} already exists")},
        )
        return secret_entry(item)

    def replace_secret(self, entry: SecretEntry, data: Mapping[str, bytes]) -> SecretEntry:
        """Write a Secret's data back at the version it was read at; ``Conflict`` if it changed meanwhile.

        Two writers that read the same version cannot both succeed: this is how a join token is
        used once only, across threads and replicas.
        """
        body = secret_body(
            entry.name,
            data,
            type_name=entry.type,
            labels=entry.labels,
            resource_version=entry.resource_version,
        )
        changed = Conflict(f"Secret {entry.name} changed meanwhile")
        item = api_call(
            f"update Secret {entry.name}",
            lambda: self.core.replace_namespaced_secret(
                entry.name, self.namespace, body, _request_timeout=self.timeout
            ),
            # 404: deleted since it was read, another writer's move too.
            refusals={404: changed, 409: changed},
        )
        return secret_entry(item)

    def delete_secret(self, entry: SecretEntry) -> bool:
        """Delete a Secret only at the version read (``Conflict`` if it changed); False when already gone."""
        options = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(
                uid=entry.uid or None, resource_version=entry.resource_version
            )
        )
        return api_call.delete(
            f"delete Secret {entry.name}",
            lambda: self.core.delete_namespaced_secret(
                entry.name, self.namespace, body=options, _request_timeout=self.timeout
            ),
            refusals={409: Conflict(f"Secret {entry.name} changed meanwhile")},
        )

    # ------------------------------------------------------------------ events

    def create_event(self, event: client.EventsV1Event) -> None:
        """Store an Event (a name of its own each time: never a 409 in practice, and none retried)."""
        api_call(
            "record an Event",
            lambda: client.EventsV1Api(self.core.api_client).create_namespaced_event(
                self.namespace, event, _request_timeout=self.timeout
            ),
        )

    def list_events(self, label_selector: str, limit: int) -> list[EventEntry]:
        """The Events that match a label selector, at most ``limit`` (the API server's order)."""
        page = api_call(
            f"list Events ({label_selector})",
            lambda: client.EventsV1Api(self.core.api_client).list_namespaced_event(
                self.namespace, label_selector=label_selector, limit=limit, _request_timeout=self.timeout
            ),
        )
        return [_event(item) for item in page.items]

    # ------------------------------------------------------------------ health

    def ping(self) -> None:
        """Raise ``Unavailable`` unless the platform namespace can be read."""
        _ping_call(
            "read the platform namespace",
            lambda: self.core.list_namespaced_config_map(
                self.namespace, limit=1, _request_timeout=self.timeout
            ),
        )


def _noun(kind: str) -> str:
    """``compute-profile`` -> ``compute profile``; ``vdc`` -> ``VDC``."""
    return "VDC" if kind == "vdc" else kind.replace("-", " ")


def load_configuration(kubeconfig: str | None) -> client.Configuration:
    """The client configuration of a kubeconfig file, or (None) of the in-cluster service account; the
    orchestrator's and the providers' alike."""
    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(kubeconfig, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    # One quick retry at most: the caller's deadline, not urllib3's backoff, bounds a call.
    configuration.retries = 1
    return configuration


_source: KubeSource | None = None
_lock = threading.Lock()


def kube() -> KubeSource:
    """The process's kube source (one API client, reused: its connection pool is thread-safe)."""
    global _source
    with _lock:
        if _source is None:
            api_client = client.ApiClient(load_configuration(settings.FLEXPLANE_KUBECONFIG or None))
            _source = KubeSource(api_client, settings.FLEXPLANE_NAMESPACE, settings.FLEXPLANE_KUBE_TIMEOUT)
        return _source
