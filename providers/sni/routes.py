"""Where each host name goes: the control planes' Services, as the management cluster has them.

The control-plane provider names the hosts of a control plane in the SNI mode on its ``kube-apiserver``
Service (:data:`~providers.controlplane.model.APISERVER_HOST_ANNOTATION` and
:data:`~providers.controlplane.model.KONNECTIVITY_HOST_ANNOTATION`); the router sends a name to that
Service's ClusterIP, on its ``https`` port for the API server's name and its ``konnectivity`` port for
Konnectivity's. The provider is the one place the names are made: the router knows no naming scheme and
no domain, so the two cannot disagree.

Only Services in a control plane's namespace (``fpcp-*``) with the control plane's label count: the
provider writes there and tenants do not. A name two Services claim goes nowhere (logged): routing it to
either would be a guess.

The table is kept by a watch (:class:`ServiceWatch`), not read per connection: a new TLS connection (each
kubectl, each kubelet's reconnect) would otherwise cost a request to the management cluster's API, and
routing would stop whenever that API does. A proxy that follows its routes by a watch is what an ingress
controller is; the table is derived and rebuilt from a listing at every start, so a restart loses nothing
(the stateless rule is the orchestrator's about domain state, and this holds none).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kubernetes import client, watch

from orchestrator.sources.kube_objects import CONTROL_PLANE_LABEL
from providers.controlplane.model import (
    APISERVER_HOST_ANNOTATION,
    KONNECTIVITY_HOST_ANNOTATION,
    NAMESPACE_PREFIX,
)

log = logging.getLogger(__name__)

# (annotation naming the host, the Service's port name it goes to)
ROLES = ((APISERVER_HOST_ANNOTATION, "https"), (KONNECTIVITY_HOST_ANNOTATION, "konnectivity"))
WATCH_SECONDS = 300  # the API server ends a watch after this; the table is listed afresh then
RETRY_SECONDS = 2.0  # after a failed list or watch


@dataclass(frozen=True)
class Backend:
    """Where a name's connections go: an address and port, and whose it is (for the logs)."""

    host: str
    port: int
    service: str  # <namespace>/<name>


Table = Mapping[str, Backend]
Lookup = Callable[[str], Backend | None]  # a name to its backend, None for a name no control plane has


def normal(name: str) -> str:
    """A host name as the table keys it: lowercase, no trailing dot."""
    return name.strip().lower().rstrip(".")


def routes_of(services: Iterable[Mapping[str, Any]]) -> dict[str, Backend]:
    """The table of ``services`` (Service objects as the API gives them): name to backend."""
    claims: dict[str, list[Backend]] = {}
    for service in services:
        for name, backend in _service_routes(service):
            claims.setdefault(name, []).append(backend)
    table = {}
    for name, backends in sorted(claims.items()):
        if len(backends) == 1:
            table[name] = backends[0]
        else:
            log.warning("%s is claimed by %s: not routed", name, ", ".join(b.service for b in backends))
    return table


def _service_routes(service: Mapping[str, Any]) -> list[tuple[str, Backend]]:
    meta = service.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if not namespace.startswith(NAMESPACE_PREFIX) or CONTROL_PLANE_LABEL not in (meta.get("labels") or {}):
        return []
    spec = service.get("spec") or {}
    address = str(spec.get("clusterIP") or "")
    if not address or address == "None":
        return []  # no address (yet), or headless
    ports = {port.get("name"): port.get("port") for port in spec.get("ports") or []}
    annotations = meta.get("annotations") or {}
    found = []
    for annotation, port_name in ROLES:
        name, port = annotations.get(annotation), ports.get(port_name)
        if name and isinstance(port, int):
            found.append((normal(str(name)), Backend(address, port, f"{namespace}/{meta.get('name')}")))
    return found


class ServiceWatch:
    """The table, kept by a thread that lists the control planes' Services and then watches them.

    :attr:`table` is replaced whole at each change (never mutated), so the router's reads need no lock.
    After a failure it lists again (a watch that ended, a 410 Gone, the API away): the last table keeps
    routing meanwhile.
    """

    def __init__(self, api: client.ApiClient, *, timeout: float = 30.0) -> None:
        self.core = client.CoreV1Api(api)
        self.timeout = timeout
        self.table: Table = MappingProxyType({})
        self.listed = threading.Event()  # set once the first listing is in
        self.stopping = threading.Event()
        self._services: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name="sni-routes", daemon=True)

    def start(self) -> ServiceWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._watch is not None:
            self._watch.stop()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def lookup(self, name: str) -> Backend | None:
        return self.table.get(normal(name))

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                version = self._list()
                self._follow(version)
            except Exception as error:  # any failure: list again, the old table routes meanwhile
                if self.stopping.is_set():
                    return
                log.warning("the control planes' Services could not be followed: %s", error)
                self.stopping.wait(RETRY_SECONDS)

    def _list(self) -> str:
        listed = self.core.api_client.sanitize_for_serialization(
            self.core.list_service_for_all_namespaces(
                label_selector=CONTROL_PLANE_LABEL, _request_timeout=self.timeout
            )
        )
        self._services = {_key(s): s for s in listed.get("items") or []}
        self._publish()
        self.listed.set()
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    def _follow(self, version: str) -> None:
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self.core.list_service_for_all_namespaces,
            label_selector=CONTROL_PLANE_LABEL,
            resource_version=version or None,
            timeout_seconds=WATCH_SECONDS,
            _request_timeout=(self.timeout, WATCH_SECONDS + self.timeout),
        )
        for event in stream:
            self._apply(str(event["type"]), event["raw_object"])
            if self.stopping.is_set():
                return

    def _apply(self, kind: str, service: Mapping[str, Any]) -> None:
        if kind == "ERROR":
            raise RuntimeError(f"the watch ended: {service.get('message') or service}")
        if kind == "DELETED":
            self._services.pop(_key(service), None)
        elif kind in ("ADDED", "MODIFIED"):
            self._services[_key(service)] = service
        else:
            return  # BOOKMARK
        self._publish()

    def _publish(self) -> None:
        self.table = MappingProxyType(routes_of(self._services.values()))


def _key(service: Mapping[str, Any]) -> tuple[str, str]:
    meta = service.get("metadata") or {}
    return str(meta.get("namespace")), str(meta.get("name"))
