"""The management cluster: the platform catalog, kept as labelled ConfigMaps.

The only module that speaks to the Kubernetes API. It uses the official client with a
kubeconfig (``FLEXPLANE_KUBECONFIG``) or, without one, the in-cluster service account.
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from orchestrator.errors import Unavailable, UpstreamFailure

KIND_LABEL = "flexplane.io/kind"
WHERE = "management cluster"


def _entry(item: client.V1ConfigMap) -> dict[str, Any]:
    meta = item.metadata
    assert meta is not None  # the API server always sends metadata
    return {"name": meta.name, "labels": dict(meta.labels or {}), "data": dict(item.data or {})}


class KubeSource:
    """ConfigMaps of the platform namespace, by kind, each call under a timeout."""

    def __init__(self, api_client: client.ApiClient, namespace: str, timeout: float) -> None:
        self.core = client.CoreV1Api(api_client)
        self.namespace = namespace
        self.timeout = timeout

    def catalog(self, kind: str) -> list[dict[str, Any]]:
        """The ConfigMaps labelled ``flexplane.io/kind=<kind>``, as ``{"name", "labels", "data"}``."""
        try:
            result = self.core.list_namespaced_config_map(
                self.namespace, label_selector=f"{KIND_LABEL}={kind}", _request_timeout=self.timeout
            )
        except ApiException as exc:
            raise UpstreamFailure(
                WHERE, f"the management cluster refused to list {kind}s: {exc.reason}"
            ) from exc
        except (HTTPError, OSError) as exc:
            raise Unavailable(WHERE, f"the management cluster did not answer: {exc}") from exc
        return [_entry(item) for item in result.items]

    def ping(self) -> None:
        """Raise ``Unavailable`` unless the platform namespace can be read."""
        try:
            self.core.list_namespaced_config_map(self.namespace, limit=1, _request_timeout=self.timeout)
        except ApiException as exc:
            raise Unavailable(WHERE, f"the management cluster answered {exc.status} {exc.reason}") from exc
        except (HTTPError, OSError) as exc:
            raise Unavailable(WHERE, f"the management cluster did not answer: {exc}") from exc


_source: KubeSource | None = None
_lock = threading.Lock()


def kube() -> KubeSource:
    """The process's kube source (one API client, reused: its connection pool is thread-safe)."""
    global _source
    with _lock:
        if _source is None:
            configuration = client.Configuration()
            if settings.FLEXPLANE_KUBECONFIG:
                config.load_kube_config(settings.FLEXPLANE_KUBECONFIG, client_configuration=configuration)
            else:
                config.load_incluster_config(client_configuration=configuration)
            # One quick retry at most: the caller's deadline, not urllib3's backoff, bounds a call.
            configuration.retries = 1
            api_client = client.ApiClient(configuration)
            _source = KubeSource(api_client, settings.FLEXPLANE_NAMESPACE, settings.FLEXPLANE_KUBE_TIMEOUT)
        return _source
