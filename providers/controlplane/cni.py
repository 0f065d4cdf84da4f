"""What the network plugins' manifests share (:mod:`.network`'s Cilium, :mod:`.calico`): pure helpers.

Each plugin runs in ``kube-system`` under the provider's ``managed-by`` label, reaches the API server at
the cluster's endpoint, writes the node's CNI configuration into :data:`CNI_CONF_DIR` and its binaries
into :data:`CNI_BIN_DIR`, and is pinned to a release per Kubernetes minor version (:func:`pinned`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.controlplane.model import ControlPlane, Manifest

NAMESPACE = "kube-system"
CNI_CONF_DIR = "/etc/cni/net.d"  # where the kubelet's runtime looks for the CNI configuration
CNI_BIN_DIR = "/opt/cni/bin"
RBAC = "rbac.authorization.k8s.io"
MANAGED_BY = {"app.kubernetes.io/managed-by": "flexplane-control-plane"}
READ = ["get", "list", "watch"]


def minor(version: str) -> tuple[int, int]:
    """``v1.34.2`` -> (1, 34)."""
    major, minor_, *_ = version.removeprefix("v").split(".")
    return int(major), int(minor_)


def pinned(releases: Mapping[tuple[int, int], str], version: str) -> str:
    """The release pinned for a Kubernetes version's minor; for a minor without a pin, the nearest one
    pinned below it, or else the oldest."""
    wanted = minor(version)
    if wanted in releases:
        return releases[wanted]
    below = [pin for pin in releases if pin < wanted]
    return releases[max(below) if below else min(releases)]


def meta(name: str, namespace: str | None = None, extra: dict[str, str] | None = None) -> dict[str, Any]:
    """An object's metadata: its name, the provider's label (and ``extra`` labels), its namespace if any."""
    body: dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, **(extra or {})}}
    if namespace is not None:
        body["namespace"] = namespace
    return body


def api_server_env(cp: ControlPlane) -> list[dict[str, Any]]:
    """Where a plugin's clients reach the API server: the cluster's endpoint, not the ``kubernetes`` Service
    (nothing routes a Service's address before kube-proxy and the CNI run; behind the SNI router the endpoint
    is the cluster's own host name)."""
    return [
        {"name": "KUBERNETES_SERVICE_HOST", "value": cp.endpoint_host},
        {"name": "KUBERNETES_SERVICE_PORT", "value": str(cp.endpoint_port)},
    ]


def field_env(name: str, path: str) -> dict[str, Any]:
    """An environment variable set from the pod's own fields (``spec.nodeName``, ...)."""
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def config_env(name: str, config_map: str, key: str) -> dict[str, Any]:
    """An environment variable set from a key of a ConfigMap."""
    return {"name": name, "valueFrom": {"configMapKeyRef": {"name": config_map, "key": key}}}


def host_path(name: str, path: str, kind: str = "DirectoryOrCreate") -> dict[str, Any]:
    """A volume of the node's own filesystem."""
    return {"name": name, "hostPath": {"path": path, "type": kind}}


def rule(
    group: str, resources: list[str], verbs: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    """One RBAC rule (on the objects ``names`` only, when given)."""
    granted: dict[str, Any] = {"apiGroups": [group], "resources": resources, "verbs": verbs}
    if names:
        granted["resourceNames"] = names
    return granted


def service_account(name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, NAMESPACE)}


def cluster_role(name: str, rules: list[dict[str, Any]], account: str) -> list[Manifest]:
    """A ClusterRole and its binding to a ServiceAccount of :data:`NAMESPACE`, both named ``name``."""
    return [
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": meta(name), "rules": rules},
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta(name),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}],
        },
    ]
