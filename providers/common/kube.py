"""The providers' typed layer over the official Kubernetes client: our kinds and Cluster API's (custom
objects), and the Secrets that carry bootstrap data.

One ``ApiClient`` per process, from ``FLEXPLANE_KUBECONFIG`` or, without one, the in-cluster service
account (as ``orchestrator.sources.kube`` does). Every call runs under a timeout. Failures are
:class:`KubeError`: ``transient`` when the cluster did not answer or answered "not now" (the handler
retries later), otherwise it refused (its message says why).
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Mapping
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from providers.common.resources import Resource

DEFAULT_TIMEOUT = 10.0
_TRANSIENT = frozenset({408, 409, 429, 500, 502, 503, 504})
MERGE_PATCH = "application/merge-patch+json"

Body = dict[str, Any]


class KubeError(Exception):
    """A call to the management cluster failed; ``transient`` when trying again later may work."""

    def __init__(self, message: str, *, status: int | None = None, transient: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.transient = transient


def _failure(exc: Exception, doing: str) -> KubeError:
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        return KubeError(
            f"{doing}: the management cluster answered {status} {exc.reason or ''}".rstrip(),
            status=status,
            transient=status in _TRANSIENT or status == 0,
        )
    return KubeError(f"{doing}: the management cluster did not answer ({exc})")


def _body(answer: object) -> Body:
    """An object as the client decoded it (a dict); anything else is the server's fault."""
    if not isinstance(answer, dict):
        raise KubeError(f"the management cluster answered {type(answer).__name__}, not an object")
    return answer


def load_configuration(kubeconfig: str | None) -> client.Configuration:
    """The client configuration of a kubeconfig file, or of the in-cluster service account."""
    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(kubeconfig, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    configuration.retries = 1
    return configuration


class Kube:
    """Custom objects and Secrets of the management cluster, each call under ``timeout``."""

    def __init__(self, api_client: client.ApiClient, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.api_client = api_client
        self.objects = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.timeout = timeout

    @classmethod
    def from_configuration(
        cls, configuration: client.Configuration, timeout: float = DEFAULT_TIMEOUT
    ) -> Kube:
        return cls(client.ApiClient(configuration), timeout)

    def get(self, resource: Resource, namespace: str, name: str) -> Body | None:
        """The object, or None when there is none (or its kind is not served)."""
        try:
            found = self.objects.get_namespaced_custom_object(
                resource.group,
                resource.version,
                namespace,
                resource.plural,
                name,
                _request_timeout=self.timeout,
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _failure(exc, f"reading {resource.kind} {namespace}/{name}") from exc
        except HTTPError as exc:
            raise _failure(exc, f"reading {resource.kind} {namespace}/{name}") from exc
        return _body(found)

    def list(self, resource: Resource, namespace: str, label_selector: str = "") -> list[Body]:
        try:
            page = self.objects.list_namespaced_custom_object(
                resource.group,
                resource.version,
                namespace,
                resource.plural,
                label_selector=label_selector,
                _request_timeout=self.timeout,
            )
        except ApiException as exc:
            if exc.status == 404:
                return []
            raise _failure(exc, f"listing {resource.plural} in {namespace}") from exc
        except HTTPError as exc:
            raise _failure(exc, f"listing {resource.plural} in {namespace}") from exc
        return list(_body(page).get("items") or [])

    def patch(self, resource: Resource, namespace: str, name: str, body: Mapping[str, Any]) -> Body:
        """A JSON merge patch of the object (not its status)."""
        try:
            patched = self.objects.patch_namespaced_custom_object(
                resource.group,
                resource.version,
                namespace,
                resource.plural,
                name,
                dict(body),
                _request_timeout=self.timeout,
                _content_type=MERGE_PATCH,
            )
        except (ApiException, HTTPError) as exc:
            raise _failure(exc, f"patching {resource.kind} {namespace}/{name}") from exc
        return _body(patched)

    def patch_status(self, resource: Resource, namespace: str, name: str, status: Mapping[str, Any]) -> Body:
        """A JSON merge patch of the object's ``status`` (its status subresource)."""
        try:
            patched = self.objects.patch_namespaced_custom_object_status(
                resource.group,
                resource.version,
                namespace,
                resource.plural,
                name,
                {"status": dict(status)},
                _request_timeout=self.timeout,
                _content_type=MERGE_PATCH,
            )
        except (ApiException, HTTPError) as exc:
            raise _failure(exc, f"writing the status of {resource.kind} {namespace}/{name}") from exc
        return _body(patched)

    def secret_value(self, namespace: str, name: str, key: str) -> bytes | None:
        """The decoded ``key`` of Secret ``name``; None when the Secret or the key is not there."""
        try:
            secret = self.core.read_namespaced_secret(name, namespace, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _failure(exc, f"reading Secret {namespace}/{name}") from exc
        except HTTPError as exc:
            raise _failure(exc, f"reading Secret {namespace}/{name}") from exc
        encoded = (secret.data or {}).get(key)
        if encoded is None:
            return None
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise KubeError(f"Secret {namespace}/{name}: key {key} is not base64", transient=False) from None


_kube: Kube | None = None
_lock = threading.Lock()


def configure(kube: Kube) -> None:
    """Make ``kube`` the process's (the entry point does, once it has loaded its configuration)."""
    global _kube
    with _lock:
        _kube = kube


def kube() -> Kube:
    """The process's ``Kube`` (configured by the entry point; else from ``FLEXPLANE_KUBECONFIG``)."""
    global _kube
    with _lock:
        if _kube is None:
            from django.conf import settings

            _kube = Kube.from_configuration(load_configuration(settings.FLEXPLANE_KUBECONFIG or None))
        return _kube
