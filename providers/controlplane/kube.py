"""A small synchronous client over the official one: objects as dicts, made to match a manifest.

The provider writes the same fixed set of kinds into two clusters (the management cluster and a
tenant's); the official client's typed APIs would need one call per kind and turn dicts into models
and back. This module builds the REST paths itself, sends through the official client's
:class:`~kubernetes.client.ApiClient` (its TLS, credentials and timeouts), and keeps objects as dicts.

Idempotency: :meth:`Kube.ensure` reads the object, creates it when it is missing, and sends a JSON
merge patch of the manifest only when the object does not already hold every field of it, so a
reconcile of a world that matches writes nothing. (Server-side apply would do the same in one call;
the devstack's emulator does not speak it.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubernetes import client, config

from orchestrator.sources.kube import UNANSWERED, status_message
from orchestrator.sources.kube_objects import (
    CLUSTER,
    FLEX_CONTROL_PLANE,
    MACHINE_DEPLOYMENT,
    PROXMOX_CLUSTER,
    Resource,
)
from providers.common.kube import MERGE_PATCH as MERGE_PATCH

Body = dict[str, Any]

TIMEOUT = (5.0, 30.0)  # connect, read

# (apiVersion, kind) -> (plural, namespaced) for every kind the provider writes or reads.
RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Service"): ("services", True),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("v1", "ServiceAccount"): ("serviceaccounts", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("apps/v1", "DaemonSet"): ("daemonsets", True),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("batch/v1", "CronJob"): ("cronjobs", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("rbac.authorization.k8s.io/v1", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("rolebindings", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("storage.k8s.io/v1", "CSIDriver"): ("csidrivers", False),
    ("storage.k8s.io/v1", "StorageClass"): ("storageclasses", False),
    # A tenant's network plugin's own kinds (Calico's: providers/controlplane/calico.py).
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    # Kubernetes' snapshot API (its CRDs are the provider's, providers/controlplane/snapshots.py): the CSI
    # driver's VolumeSnapshotClass.
    ("snapshot.storage.k8s.io/v1", "VolumeSnapshotClass"): ("volumesnapshotclasses", False),
    # The Prometheus Operator's, written only while the providers chart's ServiceMonitor is on (monitoring).
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ("servicemonitors", True),
    # Cluster API's and ours, as the management cluster's kinds are defined (kube_objects).
    **{
        (r.api_version, r.kind): (r.plural, True)
        for r in (CLUSTER, MACHINE_DEPLOYMENT, PROXMOX_CLUSTER, FLEX_CONTROL_PLANE)
    },
}


class KubeError(Exception):
    """The API server refused a request (status, reason and its message)."""

    def __init__(self, status: int, method: str, path: str, message: str) -> None:
        super().__init__(f"{method} {path}: {status} {message}")
        self.status = status


def path_of(api_version: str, kind: str, name: str | None = None, namespace: str | None = None) -> str:
    """The REST path of an object (or of its collection when ``name`` is None)."""
    plural, namespaced = RESOURCES[api_version, kind]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespaced:
        if not namespace:
            raise ValueError(f"a {kind} lives in a namespace")
        prefix += f"/namespaces/{namespace}"
    return f"{prefix}/{plural}" + (f"/{name}" if name else "")


def resource_path(resource: Resource, name: str | None = None, namespace: str | None = None) -> str:
    """:func:`path_of` for one of the management cluster's kinds (``kube_objects``')."""
    return path_of(resource.api_version, resource.kind, name, namespace)


def manifest_path(manifest: Mapping[str, Any], *, collection: bool = False) -> str:
    meta = manifest["metadata"]
    name = None if collection else meta["name"]
    return path_of(manifest["apiVersion"], manifest["kind"], name, meta.get("namespace"))


def holds(current: Any, desired: Any) -> bool:
    """Whether ``current`` already has every field of ``desired`` (maps by subset, the rest equal)."""
    if isinstance(desired, Mapping):
        return isinstance(current, Mapping) and all(
            key in current and holds(current[key], value) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(current, list)
            and len(current) == len(desired)
            and all(holds(c, d) for c, d in zip(current, desired, strict=True))
        )
    return bool(current == desired)


class Kube:
    """One cluster, through an official :class:`~kubernetes.client.ApiClient`."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api = api_client

    @classmethod
    def from_kubeconfig_dict(cls, kubeconfig: Mapping[str, Any]) -> Kube:
        """A client for the cluster a kubeconfig names, TLS verified against its CA."""
        configuration = client.Configuration()
        config.load_kube_config_from_dict(dict(kubeconfig), client_configuration=configuration)
        configuration.retries = False  # one try: the reconcile is what retries
        return cls(client.ApiClient(configuration))

    def close(self) -> None:
        self.api.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: list[tuple[str, str]] | None = None,
    ) -> Body | None:
        """Send one request; the decoded answer, None for 404; :class:`KubeError` for any other error."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        status, data = self._send(method, path, headers, body, query)
        if status == 404:
            return None
        if status >= 400:
            raise KubeError(status, method, path, _message(data))
        return json.loads(data) if data else {}

    def _send(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
    ) -> tuple[int, bytes]:
        """One request through the official client (its TLS, credentials, timeouts): status and body."""
        method_, url, headers_, body_, _ = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(
            method_, url, header_params=headers_, body=body_, _request_timeout=TIMEOUT
        )
        return response.status, response.read()

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Body | None:
        return self.request("GET", path_of(api_version, kind, name, namespace))

    def ensure(self, manifest: Mapping[str, Any], current: Body | None = None) -> Body:
        """Make the object hold ``manifest``: create it, patch it, or leave it as it is.

        ``current``: the object as just read, if the caller has it (saves reading it again).
        """
        if current is None:
            current = self.request("GET", manifest_path(manifest))
        if current is None:
            try:
                created = self.request("POST", manifest_path(manifest, collection=True), dict(manifest))
            except KubeError as error:
                if error.status != 409:  # someone made it meanwhile: patch it below
                    raise
            else:
                if created is None:  # 404: the kind is not served (no CRD installed), or no namespace
                    path = manifest_path(manifest, collection=True)
                    raise KubeError(404, "POST", path, "no such kind (its CRD not installed?) or namespace")
                return created
            current = self.request("GET", manifest_path(manifest)) or {}
        if holds(current, manifest):
            return current
        patched = self.request("PATCH", manifest_path(manifest), dict(manifest), content_type=MERGE_PATCH)
        assert patched is not None
        return patched

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        patch: Body,
        *,
        subresource: str = "",
    ) -> Body | None:
        path = path_of(api_version, kind, name, namespace) + (f"/{subresource}" if subresource else "")
        return self.request("PATCH", path, patch, content_type=MERGE_PATCH)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        """Delete an object; False when it was already gone."""
        path = path_of(api_version, kind, name, namespace)
        return self.request("DELETE", path, {"propagationPolicy": "Background"}) is not None

    def version(self) -> Body:
        """``GET /version``: the cheapest proof the API server answers (over TLS: and is who it says)."""
        answer = self.request("GET", "/version")
        if answer is None:
            raise KubeError(404, "GET", "/version", "no /version")
        return answer

    def readyz(self) -> tuple[bool, str]:
        """``GET /readyz``: whether the API server is ready (it answers 200), and what it said (the checks
        that failed when it is not). Raises what an unreachable server raises (:data:`UNREACHABLE`)."""
        status, data = self._send("GET", "/readyz", {"Accept": "text/plain"})
        return status == 200, data[:4096].decode(errors="replace").strip()


def _message(data: bytes) -> str:
    """The Status' message of a refusal, else the start of what the server answered."""
    return status_message(data) or data[:200].decode(errors="replace")


# What a request to an API server that is not there (yet) raises, besides KubeError.
UNREACHABLE = (*UNANSWERED, client.ApiException)
