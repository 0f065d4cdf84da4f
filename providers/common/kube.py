"""The providers' typed layer over the management cluster: our kinds and Cluster API's (custom objects, as
the dicts the API answers), and the Secrets that carry bootstrap data.

It stands on ``orchestrator.sources.kube``: the same client configuration (``load_configuration``) and
the same call wrapper (:class:`~orchestrator.sources.kube.ApiCalls`); the kinds are
``orchestrator.sources.kube_objects``'. One ``ApiClient`` per process, from ``FLEXPLANE_KUBECONFIG`` or,
without one, the in-cluster service account. Every call runs under a timeout. Failures are
:class:`KubeError` rather than the orchestrator's domain errors, since a kopf handler decides on them:
``transient`` when the cluster did not answer or answered "not now" (the handler retries later),
otherwise it refused (its message says why).
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from orchestrator.sources.kube import ApiCalls, load_configuration
from orchestrator.sources.kube_objects import Resource
from providers.common.access import NO_BINDING, SecretsAccess

DEFAULT_TIMEOUT = 10.0
# Statuses a handler retries: "not now", and 409 (someone wrote meanwhile: read again, try again).
TRANSIENT = frozenset({408, 409, 429, 500, 502, 503, 504})
MERGE_PATCH = "application/merge-patch+json"

Body = dict[str, Any]


class KubeError(Exception):
    """A call to the management cluster failed; ``transient`` when trying again later may work."""

    def __init__(self, message: str, *, status: int | None = None, transient: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.transient = transient


def _refused(exc: ApiException, doing: str) -> KubeError:
    status = int(exc.status or 0)
    return KubeError(
        f"{doing}: the management cluster answered {status} {exc.reason or ''}".rstrip(),
        status=status,
        transient=status in TRANSIENT or status == 0,
    )


def _unanswered(exc: Exception, doing: str) -> KubeError:
    return KubeError(f"{doing}: the management cluster did not answer ({exc})")


_call = ApiCalls(_refused, _unanswered)


def _body(answer: object) -> Body:
    """An object as the client decoded it (a dict); anything else is the server's fault."""
    if not isinstance(answer, dict):
        raise KubeError(f"the management cluster answered {type(answer).__name__}, not an object")
    return answer


def _custom_objects(resource: Resource, namespace: str) -> tuple[str, str, str, str]:
    """Where the custom objects API finds ``resource``'s objects of ``namespace``: its first arguments."""
    return resource.group, resource.version, namespace, resource.plural


class Kube:
    """Custom objects and Secrets of the management cluster, each call under ``timeout``; ``secrets``: the
    RoleBinding made in a namespace before its first Secret is read (:mod:`providers.common.access`)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        timeout: float = DEFAULT_TIMEOUT,
        secrets: SecretsAccess = NO_BINDING,
    ) -> None:
        self.api_client = api_client
        self.objects = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.rbac = client.RbacAuthorizationV1Api(api_client)
        self.timeout = timeout
        self.secrets = secrets

    @classmethod
    def from_configuration(
        cls, configuration: client.Configuration, timeout: float = DEFAULT_TIMEOUT
    ) -> Kube:
        """A client of the cluster ``configuration`` names, binding as the environment says."""
        return cls(client.ApiClient(configuration), timeout, SecretsAccess.from_environment())

    def get(self, resource: Resource, namespace: str, name: str) -> Body | None:
        """The object, or None when there is none (or its kind is not served)."""
        found = _call.read(
            f"reading {resource.kind} {namespace}/{name}",
            lambda: self.objects.get_namespaced_custom_object(
                *_custom_objects(resource, namespace), name, _request_timeout=self.timeout
            ),
        )
        return None if found is None else _body(found)

    def list(self, resource: Resource, namespace: str, label_selector: str = "") -> list[Body]:
        page = _call.read(
            f"listing {resource.plural} in {namespace}",
            lambda: self.objects.list_namespaced_custom_object(
                *_custom_objects(resource, namespace),
                label_selector=label_selector,
                _request_timeout=self.timeout,
            ),
        )
        return [] if page is None else list(_body(page).get("items") or [])

    def patch(self, resource: Resource, namespace: str, name: str, body: Mapping[str, Any]) -> Body:
        """A JSON merge patch of the object (not its status)."""
        return self._merge_patch(resource, namespace, name, dict(body))

    def patch_status(self, resource: Resource, namespace: str, name: str, status: Mapping[str, Any]) -> Body:
        """A JSON merge patch of the object's ``status`` (its status subresource)."""
        return self._merge_patch(resource, namespace, name, {"status": dict(status)}, status=True)

    def _merge_patch(
        self, resource: Resource, namespace: str, name: str, body: Body, *, status: bool = False
    ) -> Body:
        if status:
            doing = f"writing the status of {resource.kind} {namespace}/{name}"
            send = self.objects.patch_namespaced_custom_object_status
        else:
            doing = f"patching {resource.kind} {namespace}/{name}"
            send = self.objects.patch_namespaced_custom_object
        patched = _call(
            doing,
            lambda: send(
                *_custom_objects(resource, namespace),
                name,
                body,
                _request_timeout=self.timeout,
                _content_type=MERGE_PATCH,
            ),
        )
        return _body(patched)

    def ensure_secrets_access(self, namespace: str) -> None:
        """The providers' RoleBinding to their Secrets role in ``namespace``: read, made when missing."""
        binding = self.secrets.binding(namespace)
        if binding is None:
            return
        name = binding["metadata"]["name"]
        found = _call.read(
            f"reading RoleBinding {namespace}/{name}",
            lambda: self.rbac.read_namespaced_role_binding(name, namespace, _request_timeout=self.timeout),
        )
        if found is not None:
            return
        ref, (subject,) = binding["roleRef"], binding["subjects"]
        body = client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name=name, namespace=namespace),
            role_ref=client.V1RoleRef(api_group=ref["apiGroup"], kind=ref["kind"], name=ref["name"]),
            subjects=[client.RbacV1Subject(**subject)],
        )
        _call(
            f"binding the providers to ClusterRole {name} in namespace {namespace}",
            lambda: self.rbac.create_namespaced_role_binding(namespace, body, _request_timeout=self.timeout),
            answers={409: None},  # made meanwhile (by the control plane provider, or the last leader)
        )

    def secret_value(self, namespace: str, name: str, key: str) -> bytes | None:
        """The decoded ``key`` of Secret ``name``; None when the Secret or the key is not there.

        It binds first (one more call, a read while the binding is there): its caller, the machine's
        reconcile (``providers.infrastructure.machines``), has no step of its own that binds, and the
        control plane provider's (``providers.controlplane.steps``) binds the VDC's namespace in another
        handler, in no order with the machine's, and only for a cluster whose control plane is ours. The
        read stops once the machine is provisioned, so it costs a few calls per machine, not per resync."""
        self.ensure_secrets_access(namespace)
        secret = _call.read(
            f"reading Secret {namespace}/{name}",
            lambda: self.core.read_namespaced_secret(name, namespace, _request_timeout=self.timeout),
        )
        encoded = None if secret is None else (secret.data or {}).get(key)
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
