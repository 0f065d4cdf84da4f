"""The management cluster's objects as flex.plane writes and reads them (``sources.kube`` makes the calls):
the catalog's ConfigMaps (their names, labels and body), Leases, Secrets and Events as typed values; and
the kinds of tenant clusters (Cluster API's and our providers'), their labels and annotations, defined
once here for the orchestrator and the providers alike.

The catalog's layout: every object is a ConfigMap of the platform namespace named ``<kind>-<id>``,
labelled ``flexplane.io/kind=<kind>`` and ``flexplane.io/id=<id>``, whose ``data.spec`` is the object as
JSON.
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

KIND_LABEL = "flexplane.io/kind"
ID_LABEL = "flexplane.io/id"
SPEC_KEY = "spec"


def config_map_name(kind: str, ident: str) -> str:
    """The ConfigMap that holds catalog object ``ident`` of ``kind``."""
    return f"{kind}-{ident}"


def config_map_body(
    kind: str,
    ident: str,
    spec: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None = None,
    resource_version: str | None = None,
) -> dict[str, Any]:
    """The ConfigMap of one catalog object, as the API takes it (the devstack seeds with it too)."""
    metadata: dict[str, Any] = {
        "name": config_map_name(kind, ident),
        "labels": {**(labels or {}), KIND_LABEL: kind, ID_LABEL: ident},
    }
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {SPEC_KEY: json.dumps(dict(spec), sort_keys=True, separators=(",", ":"))},
    }


def config_map(
    kind: str,
    ident: str,
    spec: Mapping[str, Any],
    labels: Mapping[str, str] | None = None,
    resource_version: str | None = None,
) -> client.V1ConfigMap:
    """:func:`config_map_body` as the client's typed object."""
    body = config_map_body(kind, ident, spec, labels=labels, resource_version=resource_version)
    return client.V1ConfigMap(
        api_version="v1",
        kind="ConfigMap",
        metadata=client.V1ObjectMeta(
            name=body["metadata"]["name"],
            labels=body["metadata"]["labels"],
            resource_version=resource_version,
        ),
        data=body["data"],
    )


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog object as stored: its kind, id, spec and the version to write it back at."""

    kind: str
    ident: str
    spec: dict[str, Any]
    resource_version: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Lease:
    """A coordination.k8s.io/v1 Lease: who holds it, since and until when (``holder`` None: free)."""

    name: str
    holder: str | None
    acquire_time: datetime.datetime | None
    renew_time: datetime.datetime | None
    duration_seconds: int | None
    transitions: int
    resource_version: str | None = None


@dataclass(frozen=True)
class SecretEntry:
    """A Secret of the platform namespace: its data decoded to bytes, and what a guarded write needs."""

    name: str
    type: str
    data: dict[str, bytes]
    labels: dict[str, str]
    resource_version: str
    uid: str
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EventEntry:
    """An events.k8s.io/v1 Event of the platform namespace (the audit trail's record, see services.audit)."""

    name: str
    time: datetime.datetime | None
    labels: dict[str, str]
    annotations: dict[str, str]


def secret_body(
    name: str,
    data: Mapping[str, bytes],
    *,
    type_name: str = "Opaque",
    labels: Mapping[str, str] | None = None,
    resource_version: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> client.V1Secret:
    """A Secret as the API takes it, its data base64-encoded (the devstack installs the CA with it too)."""
    return client.V1Secret(
        api_version="v1",
        kind="Secret",
        type=type_name,
        metadata=client.V1ObjectMeta(
            name=name,
            labels=dict(labels or {}) or None,
            annotations=dict(annotations or {}) or None,
            resource_version=resource_version,
        ),
        data={key: base64.b64encode(value).decode("ascii") for key, value in data.items()},
    )


# ------------------------------------------------------------------------- any kind, Cluster API's too


@dataclass(frozen=True)
class Resource:
    """A kind of the management cluster: its group, version, plural and kind (what the client's
    custom-object calls name). The orchestrator's and the providers' one definition."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}"


@dataclass(frozen=True)
class KubeObject:
    """One object of the management cluster as the source reads it: its metadata, spec and status."""

    kind: str
    name: str
    namespace: str
    labels: Mapping[str, str]
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    uid: str = ""
    resource_version: str = ""
    created: datetime.datetime | None = None
    deleting: bool = False
    owners: tuple[tuple[str, str], ...] = ()  # (kind, name) of its ownerReferences
    generation: int = 0  # metadata.generation (0: not known)

    @property
    def cluster(self) -> str:
        return self.labels.get(CLUSTER_NAME_LABEL, "")


# ------------------------------------------------------------------ tenant clusters: the kinds and labels

CLUSTER_API_GROUP = "cluster.x-k8s.io"
BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io"
INFRASTRUCTURE_GROUP = "infrastructure.flexplane.io"
CONTROLPLANE_GROUP = "controlplane.flexplane.io"
CLUSTER_API_VERSION = "v1beta2"
OUR_VERSION = "v1alpha1"
# The label by which Cluster API's contract discovery finds the version of a provider's CRD.
CONTRACT_LABEL = f"{CLUSTER_API_GROUP}/{CLUSTER_API_VERSION}"

CLUSTER = Resource(CLUSTER_API_GROUP, CLUSTER_API_VERSION, "clusters", "Cluster")
MACHINE_DEPLOYMENT = Resource(
    CLUSTER_API_GROUP, CLUSTER_API_VERSION, "machinedeployments", "MachineDeployment"
)
MACHINE_SET = Resource(CLUSTER_API_GROUP, CLUSTER_API_VERSION, "machinesets", "MachineSet")
MACHINE = Resource(CLUSTER_API_GROUP, CLUSTER_API_VERSION, "machines", "Machine")
KUBEADM_CONFIG = Resource(BOOTSTRAP_GROUP, CLUSTER_API_VERSION, "kubeadmconfigs", "KubeadmConfig")
KUBEADM_CONFIG_TEMPLATE = Resource(
    BOOTSTRAP_GROUP, CLUSTER_API_VERSION, "kubeadmconfigtemplates", "KubeadmConfigTemplate"
)
PROXMOX_CLUSTER = Resource(INFRASTRUCTURE_GROUP, OUR_VERSION, "proxmoxclusters", "ProxmoxCluster")
PROXMOX_MACHINE = Resource(INFRASTRUCTURE_GROUP, OUR_VERSION, "proxmoxmachines", "ProxmoxMachine")
PROXMOX_MACHINE_TEMPLATE = Resource(
    INFRASTRUCTURE_GROUP, OUR_VERSION, "proxmoxmachinetemplates", "ProxmoxMachineTemplate"
)
FLEX_CONTROL_PLANE = Resource(CONTROLPLANE_GROUP, OUR_VERSION, "flexcontrolplanes", "FlexControlPlane")
# Our providers' kinds (their CRDs are the providers' chart's).
OURS = (PROXMOX_CLUSTER, PROXMOX_MACHINE, PROXMOX_MACHINE_TEMPLATE, FLEX_CONTROL_PLANE)

# The VDC an object belongs to: every object of a tenant cluster carries it, as do the Namespace
# ``vdc-<vdc>`` they live in, the audit trail's Events and the edge gateways' ConfigMaps.
VDC_LABEL = "flexplane.io/vdc"
# Cluster API's label naming the cluster an object belongs to, and the MachineDeployment of a Machine.
CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
DEPLOYMENT_NAME_LABEL = "cluster.x-k8s.io/deployment-name"
# A worker's node pool (on its MachineDeployment, Machines and Node).
NODE_POOL_LABEL = "flexplane.io/node-pool"
# The objects of a hosted control plane (in its namespace ``fpcp-<vdc>-<cluster>``), naming its cluster.
CONTROL_PLANE_LABEL = "flexplane.io/control-plane"
CONTROL_PLANE_NAMESPACE_PREFIX = "fpcp-"
# The Secret of that namespace holding the control plane's PKI (its CAs' keys: made once, never again).
CONTROL_PLANE_PKI_SECRET = "pki"  # noqa: S105 - a Secret's name
# Cluster API's pause (``clusterctl move``'s, a restore's): on any of a cluster's objects; its Cluster's
# ``spec.paused`` pauses them all.
PAUSED_ANNOTATION = "cluster.x-k8s.io/paused"
# An upgrade's order (the control plane first, then the workers): a pool's upgrade waits on its
# MachineDeployment (JSON: version, infrastructureRef, bootstrapConfigRef) until the control-plane provider,
# flagged on the FlexControlPlane (the version), applies it once the control plane runs that version.
PENDING_UPGRADE_ANNOTATION = "controlplane.flexplane.io/pending-upgrade"
WORKERS_PENDING_ANNOTATION = "controlplane.flexplane.io/workers-pending"

VDC_NAMESPACE_PREFIX = "vdc-"


def namespace_of(vdc: str) -> str:
    """The VDC's namespace of the management cluster, where its clusters' objects live."""
    return f"{VDC_NAMESPACE_PREFIX}{vdc}"


def control_plane_namespace(vdc: str, cluster: str) -> str:
    """The management cluster's namespace where the hosted control plane of ``vdc``'s ``cluster`` runs."""
    return f"{CONTROL_PLANE_NAMESPACE_PREFIX}{vdc}-{cluster}"


def vdc_of_namespace(namespace: str) -> str | None:
    """The VDC whose namespace ``vdc-<vdc>`` this is; None for any other namespace."""
    vdc = namespace.removeprefix(VDC_NAMESPACE_PREFIX)
    return vdc if vdc != namespace and vdc else None


# The description of the firewall rules by which a tenant cluster's cloud controller marks a public IP as
# a LoadBalancer Service's (``providers.cloud``): ``k8s-lb <cluster> <namespace>/<name>``. The API
# labels neither public IPs nor forwards, so the gateway itself says which address is whose.
BALANCER_PREFIX = "k8s-lb"


def balancer_description(cluster: str, namespace: str, name: str) -> str:
    """The description of the rules that mark an address as Service ``namespace/name`` of ``cluster``."""
    return f"{BALANCER_PREFIX} {cluster} {namespace}/{name}"


def balancer_named(description: str) -> tuple[str, str, str] | None:
    """The (cluster, namespace, name) of the Service a rule's description names; None for any other."""
    prefix, _, rest = description.partition(" ")
    cluster, _, service = rest.partition(" ")
    namespace, slash, name = service.partition("/")
    if prefix != BALANCER_PREFIX or not (cluster and slash and namespace and name) or " " in service:
        return None
    return cluster, namespace, name


# A tenant cluster's cloud controller (``providers.cloud``) speaks to flex.plane as a service account of the
# cluster's VDC (``k8s-<cluster>``), which the orchestrator makes with the cluster and revokes with it; its
# key waits for the control-plane provider in this Secret of the VDC's namespace, under this key.
CLOUD_CONTROLLER_ACCOUNT_PREFIX = "k8s-"
CLOUD_CONTROLLER_SECRET_SUFFIX = "-cloud-controller"  # noqa: S105 (a Secret's name, not a password)
CLOUD_CONTROLLER_KEY = "key.json"
# The Secret's annotations (``services.clusters.identity``): when its key expires (RFC 3339); and, after a
# renewal, the id of the key it replaced (deleted in Zitadel once the grace has passed) and since when
# the Secret has carried the new one.
CLOUD_CONTROLLER_EXPIRES_ANNOTATION = "flexplane.io/key-expires"
CLOUD_CONTROLLER_REPLACED_ANNOTATION = "flexplane.io/key-replaced"
CLOUD_CONTROLLER_RENEWED_ANNOTATION = "flexplane.io/key-renewed"


def cloud_controller_account(cluster: str) -> str:
    """The service account of the VDC that cluster ``cluster``'s cloud controller acts as."""
    return f"{CLOUD_CONTROLLER_ACCOUNT_PREFIX}{cluster}"


def cloud_controller_secret(cluster: str) -> str:
    """The Secret of the VDC's namespace that holds cluster ``cluster``'s cloud controller's key."""
    return f"{cluster}{CLOUD_CONTROLLER_SECRET_SUFFIX}"
