"""Test-only stand-in for the kubelets of a tenant cluster's workers: the Nodes they register, and whether
each is Ready, as a real kubelet and the node lifecycle controller would report them.

Never shipped. A worker whose Machine is provisioned (its VM made and booted with ``kubeadm join``) is a
Node in the tenant's API server, named as the Machine (kubeadm names a node after its host name, the
VM's, the Machine's), with the Machine's provider ID. Its ``Ready`` condition is what a kubelet reports:

- False, ``KubeletNotReady``, with the kubelet's own message ("container runtime network not ready:
  NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not
  initialized") while no CNI configuration is on the node; and the node lifecycle controller's
  ``node.kubernetes.io/not-ready`` taints;
- True, ``KubeletReady``, once a network plugin's pod would run there: a DaemonSet of the tenant cluster
  that writes the node's CNI configuration (a hostPath volume at ``/etc/cni/net.d`` or under it, where a
  plugin's agent puts it and the runtime reads it) and whose pods the node would take (its nodeSelector
  matching the node's labels, its tolerations covering the node's NoSchedule and NoExecute taints: the
  NotReady node's taints first of all).

What it does NOT do: run the plugin (no pod starts, no pod gets an address), check the plugin's
configuration, images or RBAC, or report anything else of the node (capacity, addresses, images).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Body = dict[str, Any]

CNI_CONF_DIR = "/etc/cni/net.d"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
NETWORK_NOT_READY = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)
READY_MESSAGE = "kubelet is posting ready status"
JOINED_PHASES = ("Provisioned", "Running")


def joined(machine: Mapping[str, Any]) -> bool:
    """Whether a Machine's worker has joined: provisioned, with its provider ID, not being deleted."""
    metadata = machine.get("metadata") or {}
    status = machine.get("status") or {}
    return (
        not metadata.get("deletionTimestamp")
        and status.get("phase") in JOINED_PHASES
        and bool((machine.get("spec") or {}).get("providerID"))
    )


def writes_cni_config(daemonset: Mapping[str, Any]) -> bool:
    """Whether a DaemonSet's pods mount the node's CNI configuration directory (or a path under it)."""
    volumes = ((daemonset.get("spec") or {}).get("template") or {}).get("spec", {}).get("volumes") or []
    for volume in volumes:
        path = str((volume.get("hostPath") or {}).get("path") or "").rstrip("/")
        if path == CNI_CONF_DIR or path.startswith(CNI_CONF_DIR + "/"):
            return True
    return False


def tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether a pod's tolerations tolerate a taint, as the scheduler matches them."""
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        key = toleration.get("key")
        if operator == "Exists" and (not key or key == taint.get("key")):
            return True
        if operator == "Equal" and key == taint.get("key") and toleration.get("value") == taint.get("value"):
            return True
    return False


def would_run_on(daemonset: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the DaemonSet's pod would run on the node: its nodeSelector, and its tolerations of the
    node's NoSchedule and NoExecute taints."""
    pod = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(key) != value for key, value in (pod.get("nodeSelector") or {}).items()):
        return False
    tolerations = pod.get("tolerations") or []
    taints = (node.get("spec") or {}).get("taints") or []
    return all(
        tolerates(tolerations, taint)
        for taint in taints
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def network_ready(node: Mapping[str, Any], daemonsets: list[Mapping[str, Any]]) -> bool:
    """Whether a network plugin's agent would be on the node: its CNI configuration written there."""
    return any(writes_cni_config(ds) and would_run_on(ds, node) for ds in daemonsets)


def not_ready_taints() -> list[Body]:
    """The node lifecycle controller's taints of a NotReady node."""
    return [
        {"key": NOT_READY_TAINT, "effect": "NoSchedule"},
        {"key": NOT_READY_TAINT, "effect": "NoExecute"},
    ]


def node(machine: Mapping[str, Any]) -> Body:
    """The Node a joined worker's kubelet registers (NotReady, tainted so, until its network is there)."""
    name = machine["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        "spec": {"providerID": machine["spec"]["providerID"], "taints": not_ready_taints()},
    }


def ready_condition(ready: bool, now: str) -> Body:
    """The kubelet's Ready condition."""
    return {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": READY_MESSAGE if ready else NETWORK_NOT_READY,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def is_ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def without_not_ready(taints: list[Mapping[str, Any]]) -> list[Body]:
    return [dict(taint) for taint in taints if taint.get("key") != NOT_READY_TAINT]
