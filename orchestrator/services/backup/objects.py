"""The management cluster's objects as plain JSON, for a backup and its restore.

A backup copies objects whole (a Namespace, a RoleBinding, a ConfigMap, a Secret), not as the domain
reads them, so it needs what the domain sources do not offer: a kind-agnostic list, read, create and
replace of raw bodies. This is that surface, over the orchestrator's API client and its call wrapper
(``sources.kube.api_call``: the same timeouts, the same errors naming the management cluster). It is
not a fifth Kubernetes wrapper for the services: only the backup uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import orjson
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from orchestrator.errors import Conflict, UpstreamFailure
from orchestrator.sources.kube import WHERE, api_call


@dataclass(frozen=True)
class Kind:
    """A kind of object a backup holds: where its API is, and whether it lives in a namespace."""

    api_version: str  # "v1", "rbac.authorization.k8s.io/v1"
    plural: str
    kind: str
    namespaced: bool = True

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The API path of the collection (in ``namespace``) or of one object."""
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        scope = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{base}{scope}/{self.plural}" + (f"/{name}" if name else "")


NAMESPACE = Kind("v1", "namespaces", "Namespace", namespaced=False)
CONFIG_MAP = Kind("v1", "configmaps", "ConfigMap")
SECRET = Kind("v1", "secrets", "Secret")
ROLE_BINDING = Kind("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding")


class ObjectsApi(Protocol):
    """Raw objects of the management cluster (the backup's view of it)."""

    def list(self, kind: Kind, namespace: str | None, label_selector: str) -> list[dict[str, Any]]: ...

    def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None: ...

    def create(self, kind: Kind, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace(self, kind: Kind, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def patch(
        self, kind: Kind, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]: ...


class ManagementObjects:
    """:class:`ObjectsApi` over an API client: every call under ``timeout``, its failures domain errors."""

    def __init__(self, api_client: client.ApiClient, timeout: float) -> None:
        self.api_client = api_client
        self.timeout = timeout

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        request = self.api_client.param_serialize(
            method,
            path,
            query_params=query or None,
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
        )
        answer = self.api_client.call_api(*request, _request_timeout=self.timeout)
        data = answer.read() or b""
        if not 200 <= answer.status <= 299:
            raise ApiException.from_response(http_resp=answer, body=data.decode(errors="replace"), data=None)
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise UpstreamFailure(WHERE, f"{method} {path} answered no JSON ({exc})") from exc

    def list(self, kind: Kind, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        """Every object of ``kind`` matching the selector (in ``namespace`` or cluster-wide), by pages."""
        path, items, token = kind.path(namespace), list[dict[str, Any]](), None
        while True:
            query: list[tuple[str, Any]] = [("labelSelector", label_selector), ("limit", 500)]
            if token:
                query.append(("continue", token))
            page = api_call(
                f"list {kind.plural} ({label_selector})", partial(self._call, "GET", path, query=query)
            )
            items.extend(item for item in page.get("items") or () if isinstance(item, dict))
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
        path = kind.path(namespace, name)
        return api_call.read(f"read {kind.kind} {name}", lambda: self._call("GET", path))

    def create(self, kind: Kind, body: Mapping[str, Any]) -> dict[str, Any]:
        meta = body.get("metadata") or {}
        name, path = meta.get("name"), kind.path(meta.get("namespace"))
        return api_call(
            f"create {kind.kind} {name}",
            lambda: self._call("POST", path, body=dict(body)),
            refusals={409: Conflict(f"{kind.kind} {name} already exists")},
        )

    def replace(self, kind: Kind, body: Mapping[str, Any]) -> dict[str, Any]:
        meta = body.get("metadata") or {}
        name, path = meta.get("name"), kind.path(meta.get("namespace"), meta.get("name"))
        return api_call(
            f"replace {kind.kind} {name}",
            lambda: self._call("PUT", path, body=dict(body)),
            refusals={409: Conflict(f"{kind.kind} {name} changed meanwhile, retry")},
        )

    def patch(self, kind: Kind, namespace: str | None, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386: a null takes a key away)."""
        path = kind.path(namespace, name)
        return api_call(
            f"patch {kind.kind} {name}",
            lambda: self._call("PATCH", path, body=dict(patch), content_type="application/merge-patch+json"),
        )
