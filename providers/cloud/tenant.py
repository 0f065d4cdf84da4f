"""The tenant cluster as the cloud controller reaches it: its API server with the official client.

Objects travel as the dicts the API answers (``sanitize_for_serialization``), patches as JSON merge
patches (a list in a merge patch is replaced whole: that is how a taint is lifted). Every call runs
under a timeout; a failure raises the client's exception, and the pass that made it ends, to be made
again by the next (level-based: nothing is half-remembered).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from providers.cloud.model import Body

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
COMPONENT = "flexplane-cloud-controller"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class TenantCluster:
    """The calls the controller makes to a tenant cluster's API server."""

    def __init__(self, api: client.ApiClient, *, timeout: float = 10.0) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.timeout = timeout

    def _plain(self, answer: Any) -> Any:
        return self.api.sanitize_for_serialization(answer)

    def nodes(self) -> list[Body]:
        return list(self._plain(self.core.list_node(_request_timeout=self.timeout)).get("items") or [])

    def services(self) -> list[Body]:
        listed = self.core.list_service_for_all_namespaces(_request_timeout=self.timeout)
        return list(self._plain(listed).get("items") or [])

    def patch_node(self, name: str, patch: Body) -> None:
        self.core.patch_node(name, patch, _request_timeout=self.timeout, _content_type=MERGE_PATCH)

    def patch_node_status(self, name: str, patch: Body) -> None:
        self.core.patch_node_status(name, patch, _request_timeout=self.timeout, _content_type=MERGE_PATCH)

    def delete_node(self, name: str) -> None:
        try:
            self.core.delete_node(name, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status != 404:  # gone already: what was wanted
                raise

    def patch_service_status(self, namespace: str, name: str, patch: Body) -> None:
        self.core.patch_namespaced_service_status(
            name, namespace, patch, _request_timeout=self.timeout, _content_type=MERGE_PATCH
        )

    def record(self, service: Mapping[str, Any], kind: str, reason: str, message: str) -> None:
        """An Event on the Service, as kubectl describe shows it. One Event per Service and reason,
        its count raised when it happens again (as Kubernetes' recorder aggregates), so a pass that
        meets the same problem each interval does not flood the namespace."""
        meta = service.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        digest = hashlib.sha256(f"{meta.get('uid')}/{reason}".encode()).hexdigest()[:12]
        event_name = f"{name}.{digest}"
        now = _now()
        try:
            current = self._plain(
                self.core.read_namespaced_event(event_name, namespace, _request_timeout=self.timeout)
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            current = None
        if current is not None:
            patch = {"count": int(current.get("count") or 1) + 1, "lastTimestamp": now, "message": message}
            self.core.patch_namespaced_event(
                event_name, namespace, patch, _request_timeout=self.timeout, _content_type=MERGE_PATCH
            )
            return
        event: Body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Service",
                "namespace": namespace,
                "name": name,
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        typed = client.CoreV1Event.from_dict(event)
        if typed is None:  # from_dict answers None for None only
            raise ValueError("no Event to create")
        self.core.create_namespaced_event(namespace, typed, _request_timeout=self.timeout)
        log.info("event %s on Service %s/%s: %s", reason, namespace, name, message)
