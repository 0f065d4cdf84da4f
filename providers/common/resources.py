"""The kinds the providers read and write: ours (``infrastructure.flexplane.io``,
``controlplane.flexplane.io``, ``v1alpha1``) and Cluster API core's (``v1beta2``)."""

from __future__ import annotations

from orchestrator.sources.kube_objects import CLUSTER_NAME_LABEL as CLUSTER_NAME_LABEL
from orchestrator.sources.kube_objects import Resource as Resource

VERSION = "v1alpha1"
INFRASTRUCTURE_GROUP = "infrastructure.flexplane.io"
CONTROLPLANE_GROUP = "controlplane.flexplane.io"
CLUSTER_API_GROUP = "cluster.x-k8s.io"
BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io"
CLUSTER_API_VERSION = "v1beta2"
# The label by which Cluster API's contract discovery finds the version of a provider's CRD.
CONTRACT_LABEL = f"{CLUSTER_API_GROUP}/{CLUSTER_API_VERSION}"
VDC_LABEL = "flexplane.io/vdc"
VDC_NAMESPACE_PREFIX = "vdc-"


PROXMOX_CLUSTER = Resource(INFRASTRUCTURE_GROUP, VERSION, "proxmoxclusters", "ProxmoxCluster")
PROXMOX_MACHINE = Resource(INFRASTRUCTURE_GROUP, VERSION, "proxmoxmachines", "ProxmoxMachine")
PROXMOX_MACHINE_TEMPLATE = Resource(
    INFRASTRUCTURE_GROUP, VERSION, "proxmoxmachinetemplates", "ProxmoxMachineTemplate"
)
FLEX_CONTROL_PLANE = Resource(CONTROLPLANE_GROUP, VERSION, "flexcontrolplanes", "FlexControlPlane")
CLUSTER = Resource(CLUSTER_API_GROUP, CLUSTER_API_VERSION, "clusters", "Cluster")
MACHINE = Resource(CLUSTER_API_GROUP, CLUSTER_API_VERSION, "machines", "Machine")

OURS = (PROXMOX_CLUSTER, PROXMOX_MACHINE, PROXMOX_MACHINE_TEMPLATE, FLEX_CONTROL_PLANE)


def vdc_of_namespace(namespace: str) -> str | None:
    """The VDC whose namespace ``vdc-<vdc>`` this is; None for any other namespace."""
    vdc = namespace.removeprefix(VDC_NAMESPACE_PREFIX)
    return vdc if vdc != namespace and vdc else None
