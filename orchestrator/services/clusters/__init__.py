"""Tenant Kubernetes clusters: listing and reading them, creating them, their changes, kubeconfigs.

Stateless: a cluster is its Cluster API objects in its VDC's namespace ``vdc-<vdc>`` of the management
cluster (``orchestrator.sources.clusterapi``); the providers and Cluster API core make them real.
Authorization: USER of the cluster's VDC, or ADMIN; a cluster is named within the VDC the request names
(``FlexPlane-VDC-ID``), so another VDC's cluster is reported exactly like one that does not exist.

- ``reads``: ``list_clusters`` (five lists per VDC namespace, whatever the number of clusters),
  ``get_cluster``, ``kubernetes_versions``;
- ``inputs``: what a create is given, and the limits (read them there);
- ``objects``: the objects a cluster is made of (pure);
- ``quota``: workers counted as the VMs they become, before they are made;
- ``create``: ``create_cluster``; ``reach``: its workers' way to the control plane, made sure of first;
- ``balancers``: ``load_balancers``, its Services of type LoadBalancer as the VDC's gateways hold them;
- ``changes``: ``scale_node_pool``, ``upgrade_cluster``, ``delete_cluster``, ``restore_cluster`` (its etcd
  back to one of its snapshots, which the control-plane provider runs);
- ``kubeconfig``: a short-lived client certificate of the caller (why: see that module).
"""

from __future__ import annotations

from orchestrator.services.clusters.balancers import LoadBalancer, load_balancers
from orchestrator.services.clusters.changes import (
    delete_cluster,
    restore_cluster,
    scale_node_pool,
    upgrade_cluster,
)
from orchestrator.services.clusters.create import create_cluster
from orchestrator.services.clusters.inputs import CreateCluster, NodePoolSpec
from orchestrator.services.clusters.kubeconfig import VALIDITY, kubeconfig
from orchestrator.services.clusters.reads import get_cluster, kubernetes_versions, list_clusters

__all__ = [
    "VALIDITY",
    "CreateCluster",
    "LoadBalancer",
    "NodePoolSpec",
    "create_cluster",
    "delete_cluster",
    "get_cluster",
    "kubeconfig",
    "kubernetes_versions",
    "list_clusters",
    "load_balancers",
    "restore_cluster",
    "scale_node_pool",
    "upgrade_cluster",
]
