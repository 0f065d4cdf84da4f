"""The management cluster's Cluster API objects in the VDCs' namespaces (tenant Kubernetes clusters).

A typed surface over the official client's ``CustomObjectsApi``, beside ``sources.kube`` (whose client,
timeout and call wrapper, :class:`~orchestrator.sources.kube.ApiCalls`, it shares): list (by label, in
one namespace or across all), create, merge patch and delete of one kind's objects, and the Secrets of a
VDC's namespace: reading one (a cluster's CA), writing and deleting one (a cluster's cloud controller's
key). Objects come back as
:class:`~orchestrator.sources.kube_objects.KubeObject`; the kinds are ``kube_objects``' too. Failures are
domain errors naming the management cluster, as ``sources.kube``'s are.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from django.conf import settings
from kubernetes import client

from orchestrator.errors import Conflict, NotFound
from orchestrator.sources import kube as kube_source
from orchestrator.sources.kube import LIST_PAGE_SIZE, api_call, secret_entry
from orchestrator.sources.kube_objects import KubeObject, Resource, SecretEntry, secret_body


def _time(value: Any) -> datetime.datetime | None:
    if isinstance(value, datetime.datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _dict(answer: object) -> dict[str, Any]:
    """A custom object answer (the client types it ``object``: it is the JSON, a dict)."""
    return answer if isinstance(answer, dict) else {}


def _object(resource: Resource, item: Mapping[str, Any]) -> KubeObject:
    meta = item.get("metadata") or {}
    spec, status = item.get("spec"), item.get("status")
    owners = tuple(
        (str(o.get("kind") or ""), str(o.get("name") or ""))
        for o in meta.get("ownerReferences") or []
        if isinstance(o, Mapping)
    )
    return KubeObject(
        kind=str(item.get("kind") or resource.kind),
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        labels=dict(meta.get("labels") or {}),
        spec=spec if isinstance(spec, dict) else {},
        status=status if isinstance(status, dict) else {},
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        created=_time(meta.get("creationTimestamp")),
        deleting=bool(meta.get("deletionTimestamp")),
        owners=owners,
        generation=int(meta.get("generation") or 0),
    )


class ClusterApiSource:
    """Custom objects of the management cluster, each call under the kube source's timeout."""

    def __init__(self, api_client: client.ApiClient, timeout: float) -> None:
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.timeout = timeout

    def list(self, resource: Resource, namespace: str | None, label_selector: str) -> list[KubeObject]:
        """The objects of one kind that match the selector, in ``namespace`` (None: every namespace),
        in pages of ``LIST_PAGE_SIZE``: one call for any realistic VDC."""
        out: list[KubeObject] = []
        token: str | None = None
        doing = f"list {resource.plural} ({label_selector})"
        while True:
            # 404: the kind is not installed, so nothing of it exists.
            page = api_call.read(doing, partial(self._page, resource, namespace, label_selector, token))
            body = _dict(page)
            out.extend(_object(resource, item) for item in body.get("items") or [])
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                return out

    def _page(
        self, resource: Resource, namespace: str | None, label_selector: str, token: str | None
    ) -> object:
        if namespace is None:
            return self.custom.list_cluster_custom_object(
                resource.group,
                resource.version,
                resource.plural,
                label_selector=label_selector,
                limit=LIST_PAGE_SIZE,
                _continue=token,
                _request_timeout=self.timeout,
            )
        return self._namespaced(
            self.custom.list_namespaced_custom_object,
            resource,
            namespace,
            label_selector=label_selector,
            limit=LIST_PAGE_SIZE,
            _continue=token,
        )()

    def _namespaced(
        self, call: Callable[..., object], resource: Resource, namespace: str, *args: object, **params: object
    ) -> Callable[[], object]:
        """``call`` of the custom objects API on ``resource`` in ``namespace`` (its group, version,
        namespace and plural, then ``args``), under the deadline: made, not yet sent."""
        return lambda: call(
            resource.group,
            resource.version,
            namespace,
            resource.plural,
            *args,
            **params,
            _request_timeout=self.timeout,
        )

    def create(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> KubeObject:
        """Create one object; ``Conflict`` if one of that name exists."""
        name = str((body.get("metadata") or {}).get("name"))
        item = api_call(
            f"create {resource.kind} {name}",
            self._namespaced(self.custom.create_namespaced_custom_object, resource, namespace, dict(body)),
            refusals={409: Conflict(f"{resource.kind} {name} already exists in namespace {namespace}")},
        )
        return _object(resource, _dict(item))

    def patch(self, resource: Resource, namespace: str, name: str, patch: Mapping[str, Any]) -> KubeObject:
        """A JSON merge patch of one object's spec or metadata; ``NotFound`` if it is gone."""
        send = self._namespaced(
            self.custom.patch_namespaced_custom_object, resource, namespace, name, dict(patch)
        )
        item = api_call(
            f"update {resource.kind} {name}",
            send,
            refusals={
                404: NotFound(resource.kind, name),
                409: Conflict(f"{resource.kind} {name} changed meanwhile, retry"),
            },
        )
        return _object(resource, _dict(item))

    def delete(self, resource: Resource, namespace: str, name: str) -> bool:
        """Delete one object (its finalizers may keep it a while); False when it was already gone."""
        return api_call.delete(
            f"delete {resource.kind} {name}",
            self._namespaced(self.custom.delete_namespaced_custom_object, resource, namespace, name),
        )

    def ensure_namespace(self, namespace: str, labels: Mapping[str, str]) -> None:
        """The namespace exists, labelled (a VDC's is made with its first cluster); where the deployment
        names a ClusterRole for it (``FLEXPLANE_VDC_ROLE``), the orchestrator's service account
        (``FLEXPLANE_SERVICE_ACCOUNT``, ``<namespace>/<name>``) is bound to it there: it reads its
        clusters' Secrets in the VDCs' namespaces (and writes their cloud controllers'), and no other
        namespace's."""
        timeout = self.timeout
        meta = client.V1ObjectMeta(name=namespace, labels=dict(labels))
        # 409: an existing object of that name is as good as a new one.
        api_call(
            f"create Namespace {namespace}",
            lambda: self.core.create_namespace(client.V1Namespace(metadata=meta), _request_timeout=timeout),
            answers={409: None},
        )
        role, account = settings.FLEXPLANE_VDC_ROLE, settings.FLEXPLANE_SERVICE_ACCOUNT
        if not role or "/" not in account:
            return
        account_namespace, account_name = account.split("/", 1)
        binding = client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name=role, namespace=namespace, labels=dict(labels)),
            role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role),
            subjects=[
                client.RbacV1Subject(kind="ServiceAccount", name=account_name, namespace=account_namespace)
            ],
        )
        rbac = client.RbacAuthorizationV1Api(self.core.api_client)
        api_call(
            f"create RoleBinding {namespace}/{role}",
            lambda: rbac.create_namespaced_role_binding(namespace, binding, _request_timeout=timeout),
            answers={409: None},
        )

    def secret(self, namespace: str, name: str) -> SecretEntry | None:
        """One Secret of a VDC's namespace (its data decoded), or None when there is none."""
        item = api_call.read(
            f"read Secret {namespace}/{name}",
            lambda: self.core.read_namespaced_secret(name, namespace, _request_timeout=self.timeout),
        )
        return None if item is None else secret_entry(item)

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
        """A Secret of a VDC's namespace holding ``data``, ``labels`` and ``annotations``: made, or replaced
        whole if one of that name is there (what flex.plane writes there is its own: the last write is the
        one meant). With ``resource_version``, only the Secret of that version read before is replaced:
        ``Conflict`` if it changed or went meanwhile."""
        timeout = self.timeout
        if resource_version is not None:
            guarded = secret_body(
                name, data, labels=labels, annotations=annotations, resource_version=resource_version
            )
            changed = Conflict(f"Secret {name} changed meanwhile in namespace {namespace}, retry")
            api_call(
                f"update Secret {namespace}/{name}",
                lambda: self.core.replace_namespaced_secret(
                    name, namespace, guarded, _request_timeout=timeout
                ),
                refusals={404: changed, 409: changed},
            )
            return
        body = secret_body(name, data, labels=labels, annotations=annotations)
        made = api_call(
            f"create Secret {namespace}/{name}",
            lambda: self.core.create_namespaced_secret(namespace, body, _request_timeout=timeout),
            answers={409: None},
        )
        if made is not None:
            return
        # A replace without a resourceVersion is unconditional; 404: deleted between the two calls.
        api_call(
            f"update Secret {namespace}/{name}",
            lambda: self.core.replace_namespaced_secret(name, namespace, body, _request_timeout=timeout),
            refusals={404: Conflict(f"Secret {name} was deleted meanwhile in namespace {namespace}, retry")},
        )

    def delete_secret(self, namespace: str, name: str) -> bool:
        """Delete a Secret of a VDC's namespace; False when it was already gone."""
        return api_call.delete(
            f"delete Secret {namespace}/{name}",
            lambda: self.core.delete_namespaced_secret(name, namespace, _request_timeout=self.timeout),
        )


def clusterapi() -> ClusterApiSource:
    """The Cluster API source over the process's kube source's client (built per call: it is cheap,
    and follows the kube source wherever tests point it)."""
    source = kube_source.kube()
    return ClusterApiSource(source.core.api_client, source.timeout)
