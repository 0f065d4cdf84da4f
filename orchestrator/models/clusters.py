"""Tenant Kubernetes clusters as the orchestrator shows them, built from their Cluster API objects.

A tenant cluster is nothing but Cluster API objects in its VDC's namespace ``vdc-<vdc>`` of the
management cluster (/work/notes/k8s_contract.md, "the tenant side"): a ``Cluster``, its
``FlexControlPlane`` and ``ProxmoxCluster``, and per node pool a ``MachineDeployment`` with its
``ProxmoxMachineTemplate`` and ``KubeadmConfigTemplate``. :meth:`KubernetesCluster.of` reads what it
shows from those objects' specs, statuses and conditions, and nothing else.

The Kubernetes versions a tenant may choose are a catalog kind (``kubernetesversion``, ADMIN-managed
like images): a version and the catalog image its nodes boot from.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.models.catalog import MAX_CATALOG_NAME_LENGTH
from orchestrator.models.specs import Kind, Spec, field

# The kinds, labels and annotations of tenant clusters are the Kubernetes layer's (shared with the providers),
# re-exported here with the views built from them.
from orchestrator.sources.kube_objects import CLUSTER as CLUSTER
from orchestrator.sources.kube_objects import CLUSTER_NAME_LABEL as CLUSTER_NAME_LABEL
from orchestrator.sources.kube_objects import DEPLOYMENT_NAME_LABEL as DEPLOYMENT_NAME_LABEL
from orchestrator.sources.kube_objects import FLEX_CONTROL_PLANE as FLEX_CONTROL_PLANE
from orchestrator.sources.kube_objects import KUBEADM_CONFIG_TEMPLATE as KUBEADM_CONFIG_TEMPLATE
from orchestrator.sources.kube_objects import MACHINE as MACHINE
from orchestrator.sources.kube_objects import MACHINE_DEPLOYMENT as MACHINE_DEPLOYMENT
from orchestrator.sources.kube_objects import NODE_POOL_LABEL as NODE_POOL_LABEL
from orchestrator.sources.kube_objects import PENDING_UPGRADE_ANNOTATION as PENDING_UPGRADE_ANNOTATION
from orchestrator.sources.kube_objects import PROXMOX_CLUSTER as PROXMOX_CLUSTER
from orchestrator.sources.kube_objects import PROXMOX_MACHINE as PROXMOX_MACHINE
from orchestrator.sources.kube_objects import PROXMOX_MACHINE_TEMPLATE as PROXMOX_MACHINE_TEMPLATE
from orchestrator.sources.kube_objects import VDC_LABEL as VDC_LABEL
from orchestrator.sources.kube_objects import WORKERS_PENDING_ANNOTATION as WORKERS_PENDING_ANNOTATION
from orchestrator.sources.kube_objects import KubeObject as KubeObject
from orchestrator.sources.kube_objects import Resource as Resource
from orchestrator.sources.kube_objects import namespace_of as namespace_of
from orchestrator.sources.kube_objects import vdc_of_namespace as vdc_of

# ----------------------------------------------------------------------------------- Cluster API

# What a listing reads: one list per kind in the VDC's namespace, whatever the number of clusters.
LISTED = (CLUSTER, FLEX_CONTROL_PLANE, PROXMOX_CLUSTER, MACHINE_DEPLOYMENT, PROXMOX_MACHINE_TEMPLATE)
# Every kind a create writes (the listed ones, and each pool's bootstrap template).
WRITTEN = (*LISTED, KUBEADM_CONFIG_TEMPLATE)

POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/12"
API_SERVER_PORT = 6443

# Phases, as the contract names them.
PROVISIONING, READY, UPGRADING, SCALING, DELETING, FAILED = (
    "Provisioning",
    "Ready",
    "Upgrading",
    "Scaling",
    "Deleting",
    "Failed",
)
PHASES = (PROVISIONING, READY, UPGRADING, SCALING, DELETING, FAILED)


# ------------------------------------------------------------------------ Kubernetes versions

KUBERNETES_VERSION = re.compile(r"v(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,3})")


def version_key(version: str) -> tuple[int, ...]:
    """``v1.34.2`` -> (1, 34, 2), for ordering (an unparsable one sorts first)."""
    match = KUBERNETES_VERSION.fullmatch(version)
    return tuple(int(part) for part in match.groups()) if match else (-1,)


class KubernetesVersion(Spec):
    """A Kubernetes version tenants may choose, and the node image of its workers."""

    version: str = field(
        label="Version",
        help="A Kubernetes release, v<major>.<minor>.<patch> (e.g. v1.34.2); it cannot change later.",
        required=True,
        max_length=16,
        key=True,
    )
    image: str = field(
        label="Node image",
        help="The catalog image its worker nodes boot from (with kubeadm and the kubelet of this version).",
        required=True,
        max_length=MAX_CATALOG_NAME_LENGTH,
    )

    def __str__(self) -> str:
        return self.version


KUBERNETES_VERSION_INPUTS = Kind.of(KubernetesVersion, "kubernetesversion", "Kubernetes version")


# ------------------------------------------------------------------------------ the objects


def _get(data: Mapping[str, Any] | None, *path: str) -> Any:
    value: Any = data
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class Condition:
    """A metav1 condition of one of the cluster's objects (``object``: its kind)."""

    object: str
    type: str
    status: str
    reason: str
    message: str
    last_transition: str

    @classmethod
    def all_of(cls, obj: KubeObject | None) -> list[Condition]:
        if obj is None:
            return []
        found = obj.status.get("conditions")
        return [
            cls(
                obj.kind,
                str(c.get("type") or ""),
                str(c.get("status") or "Unknown"),
                str(c.get("reason") or ""),
                str(c.get("message") or ""),
                str(c.get("lastTransitionTime") or ""),
            )
            for c in (found if isinstance(found, list) else [])
            if isinstance(c, Mapping) and c.get("type")
        ]

    @property
    def failed(self) -> bool:
        return self.status == "False" and (self.reason.endswith("Failed") or self.reason == "VdcMismatch")


# The network plugins a cluster may have (the FlexControlPlane's spec.networkPlugin, which the
# control-plane provider installs: providers/controlplane/network.py), and the one it has unless asked.
NETWORK_PLUGINS = ("cilium", "calico", "none")
DEFAULT_NETWORK_PLUGIN = "cilium"

# How a cluster's control plane is reached (its ``exposure``), by the FlexControlPlane's
# spec.serviceType: the shared address every cluster's control plane is behind, told apart by host name
# (SNI, the providers' SNI router), or a load balancer of the cluster's own.
SHARED, LOAD_BALANCER = "shared", "loadBalancer"
EXPOSURE_SERVICE_TYPES = {SHARED: "SNI", LOAD_BALANCER: "LoadBalancer"}


def exposure_of(service_type: str) -> str:
    """A FlexControlPlane's spec.serviceType as the API names it (NodePort, an operator's, as itself)."""
    for kind, known in EXPOSURE_SERVICE_TYPES.items():
        if known == service_type:
            return kind
    return service_type[:1].lower() + service_type[1:] if service_type else LOAD_BALANCER


@dataclass(frozen=True)
class ControlPlane:
    replicas: int
    ready_replicas: int
    version: str  # what it runs (status), else what it is asked to run
    desired_version: str
    initialized: bool
    exposure: str = LOAD_BALANCER  # shared or loadBalancer: exposure_of(spec.serviceType)


@dataclass(frozen=True)
class ControlPlaneHealth:
    """What the control-plane provider last saw of the control plane (the FlexControlPlane's
    ``status.health``, written each reconcile and every minute: providers/controlplane/health.py)."""

    api_server_up: bool  # its /readyz answered 200 through the endpoint
    api_server_reason: str  # Ready, NotReady, Unreachable or NoReadyReplicas
    api_server_message: str  # the checks that failed, or why it did not answer
    etcd_members: int
    etcd_members_ready: int
    # The tenant's Konnectivity agents (one per node), and those holding a connection to a Konnectivity
    # server; None while the provider could not read them (the API server did not answer).
    konnectivity_agents: int | None
    konnectivity_agents_connected: int | None

    @classmethod
    def of(cls, status: Mapping[str, Any]) -> ControlPlaneHealth | None:
        """From ``status.health``; None before the provider wrote one."""
        health = status.get("health")
        if not isinstance(health, Mapping):
            return None
        api_server = _get(health, "apiServer") or {}
        observed = _get(health, "konnectivity", "observed") is True

        def count(*path: str) -> int:
            return max(0, _int(_get(health, *path)))

        return cls(
            api_server_up=_get(api_server, "ready") is True,
            api_server_reason=str(_get(api_server, "reason") or ""),
            api_server_message=str(_get(api_server, "message") or ""),
            etcd_members=count("etcd", "members"),
            etcd_members_ready=count("etcd", "readyMembers"),
            konnectivity_agents=count("konnectivity", "agents") if observed else None,
            konnectivity_agents_connected=count("konnectivity", "connectedAgents") if observed else None,
        )

    @property
    def healthy(self) -> bool:
        """The API server up, every etcd member ready, every agent known connected."""
        return (
            self.api_server_up
            and self.etcd_members_ready == self.etcd_members
            and self.konnectivity_agents_connected == self.konnectivity_agents
        )


@dataclass(frozen=True)
class EtcdSnapshot:
    """A snapshot of the cluster's etcd in the backup bucket, as the control-plane provider last listed it
    (the FlexControlPlane's ``status.etcdBackup.snapshots``: providers/controlplane/restore.py)."""

    name: str  # its name in the cluster's folder of the bucket: what a restore names
    taken_at: datetime.datetime | None
    size: int  # bytes, sealed

    @classmethod
    def all_of(cls, status: Mapping[str, Any]) -> tuple[EtcdSnapshot, ...]:
        """Newest first, as listed; none before the provider listed any."""
        found = _get(status, "etcdBackup", "snapshots")
        listed = found if isinstance(found, list) else []
        return tuple(
            cls(str(s["name"]), _time(s.get("time")), max(0, _int(s.get("size"))))
            for s in listed
            if isinstance(s, Mapping) and s.get("name")
        )


# A restore's phases (the FlexControlPlane's status.restore.phase); the first three: under way.
RESTORE_STOPPING, RESTORE_RESTORING, RESTORE_STARTING = "Stopping", "Restoring", "Starting"
RESTORE_SUCCEEDED, RESTORE_FAILED = "Succeeded", "Failed"
RESTORE_UNDER_WAY = (RESTORE_STOPPING, RESTORE_RESTORING, RESTORE_STARTING)
# Before the provider took a request up (spec.restore written, status.restore not yet its).
RESTORE_REQUESTED = "Requested"


@dataclass(frozen=True)
class EtcdRestore:
    """The cluster's last etcd restore: asked for in the FlexControlPlane's ``spec.restore``, run by the
    control-plane provider, which reports it in ``status.restore``."""

    id: str
    snapshot: str  # "": the newest
    phase: str  # Requested (not taken up yet), Stopping, Restoring, Starting, Succeeded, Failed
    message: str
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None

    @property
    def under_way(self) -> bool:
        return self.phase in (RESTORE_REQUESTED, *RESTORE_UNDER_WAY)

    @classmethod
    def of(cls, spec: Mapping[str, Any], status: Mapping[str, Any]) -> EtcdRestore | None:
        """The one asked for and not taken up yet, else the last one the provider reports; None: none."""
        asked = _get(spec, "restore") or {}
        done = _get(status, "restore") or {}
        if not isinstance(asked, Mapping) or not isinstance(done, Mapping):
            return None
        if asked.get("id") and asked.get("id") != done.get("id"):
            return cls(str(asked["id"]), str(asked.get("snapshot") or ""), RESTORE_REQUESTED, "", None, None)
        if not done.get("id"):
            return None
        return cls(
            id=str(done["id"]),
            snapshot=str(done.get("snapshot") or ""),
            phase=str(done.get("phase") or ""),
            message=str(done.get("message") or ""),
            started_at=_time(done.get("startedAt")),
            finished_at=_time(done.get("finishedAt")),
        )


def _time(value: Any) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class NodePool:
    name: str
    compute_profile: str
    storage_profile: str
    network: str
    count: int  # asked for
    ready: int
    version: str
    up_to_date: int
    replicas: int  # there now
    # Its controller (core) has seen its spec as it is now (status.observedGeneration); a change just
    # written (an upgrade's new version) is not reflected in its counts yet.
    observed: bool = True


def endpoint_of(*objects: KubeObject | None) -> str | None:
    """``https://host:port`` from the first object whose spec has a ``controlPlaneEndpoint``."""
    for obj in objects:
        host = _get(obj.spec if obj else None, "controlPlaneEndpoint", "host")
        if host:
            port = _int(_get(obj.spec if obj else None, "controlPlaneEndpoint", "port")) or API_SERVER_PORT
            return f"https://{host}:{port}"
    return None


@dataclass(frozen=True)
class KubernetesCluster:
    """A tenant cluster: what its Cluster API objects say of it."""

    name: str
    vdc: str
    version: str
    phase: str
    endpoint: str | None
    control_plane: ControlPlane
    node_pools: tuple[NodePool, ...]
    network: str
    created_at: datetime.datetime | None
    conditions: tuple[Condition, ...]
    health: ControlPlaneHealth | None = None  # None until the provider has looked
    network_plugin: str = DEFAULT_NETWORK_PLUGIN  # the FlexControlPlane's spec.networkPlugin
    snapshots: tuple[EtcdSnapshot, ...] = ()  # its etcd's, in the backup bucket, newest first
    restore: EtcdRestore | None = None  # its etcd's last restore

    @property
    def id(self) -> str:
        return self.name

    @classmethod
    def of(
        cls,
        cluster: KubeObject,
        control_plane: KubeObject | None,
        infrastructure: KubeObject | None,
        deployments: Sequence[KubeObject],
        templates: Mapping[str, KubeObject],
    ) -> KubernetesCluster:
        """Built from the Cluster, its FlexControlPlane and ProxmoxCluster (None while missing), its
        MachineDeployments and the ProxmoxMachineTemplates by name."""
        cp_spec = control_plane.spec if control_plane else {}
        cp_status = control_plane.status if control_plane else {}
        desired = str(cp_spec.get("version") or "")
        plane = ControlPlane(
            replicas=_int(cp_spec.get("replicas")),
            ready_replicas=_int(cp_status.get("readyReplicas")),
            version=str(cp_status.get("version") or desired),
            desired_version=desired,
            initialized=bool(_get(cp_status, "initialization", "controlPlaneInitialized")),
            exposure=exposure_of(str(cp_spec.get("serviceType") or "")),
        )
        network = str((infrastructure.spec if infrastructure else {}).get("network") or "")
        pools = tuple(sorted((_pool(md, templates, network) for md in deployments), key=lambda p: p.name))
        conditions = tuple(
            c for obj in (cluster, control_plane, infrastructure) for c in Condition.all_of(obj)
        )
        vdc = vdc_of(cluster.namespace) or ""
        return cls(
            name=cluster.name,
            vdc=vdc,
            version=desired,
            phase=_phase(cluster, plane, pools, conditions),
            endpoint=endpoint_of(cluster, infrastructure, control_plane),
            control_plane=plane,
            node_pools=pools,
            network=network,
            created_at=cluster.created,
            conditions=conditions,
            health=ControlPlaneHealth.of(cp_status),
            network_plugin=str(cp_spec.get("networkPlugin") or DEFAULT_NETWORK_PLUGIN),
            snapshots=EtcdSnapshot.all_of(cp_status),
            restore=EtcdRestore.of(cp_spec, cp_status),
        )


def _pool(md: KubeObject, templates: Mapping[str, KubeObject], default_network: str) -> NodePool:
    template_spec = _get(md.spec, "template", "spec") or {}
    infra = templates.get(str(_get(template_spec, "infrastructureRef", "name") or ""))
    machine = _get(infra.spec if infra else None, "template", "spec") or {}
    return NodePool(
        name=md.labels.get(NODE_POOL_LABEL, md.name),
        compute_profile=str(machine.get("computeProfile") or ""),
        storage_profile=str(machine.get("storageProfile") or ""),
        network=str(machine.get("network") or default_network),
        count=_int(md.spec.get("replicas")),
        ready=_int(md.status.get("readyReplicas")),
        version=str(template_spec.get("version") or ""),
        up_to_date=_int(md.status.get("upToDateReplicas")),
        replicas=_int(md.status.get("replicas")),
        observed=_observed(md),
    )


def _observed(md: KubeObject) -> bool:
    """Whether core has seen the MachineDeployment's spec as it is (unknown generations count as seen)."""
    seen = md.status.get("observedGeneration")
    return not md.generation or not isinstance(seen, int) or seen >= md.generation


def _phase(
    cluster: KubeObject, plane: ControlPlane, pools: Iterable[NodePool], conditions: Iterable[Condition]
) -> str:
    """Deleting, Failed, Provisioning (no control plane yet, or no worker ready yet), Upgrading (a
    version not reached everywhere, or a pool's new spec not yet seen by core), Scaling (a pool's
    replicas not as asked), else Ready."""
    if cluster.deleting:
        return DELETING
    if str(cluster.status.get("phase") or "") == FAILED or any(c.failed for c in conditions):
        return FAILED
    pools = list(pools)
    if not plane.initialized or plane.ready_replicas == 0:
        return PROVISIONING
    if any(p.count > 0 and p.ready == 0 and p.up_to_date == 0 for p in pools):
        return PROVISIONING
    if plane.version != plane.desired_version or any(
        p.version != plane.desired_version
        or p.up_to_date < min(p.replicas, p.count)
        or (not p.observed and p.replicas == p.count)  # a roll written, not seen yet (a scale shows below)
        for p in pools
    ):
        return UPGRADING
    if plane.ready_replicas != plane.replicas or any(
        p.replicas != p.count or p.ready != p.count for p in pools
    ):
        return SCALING
    return READY


@dataclass(frozen=True)
class Kubeconfig:
    """A kubeconfig for one user of a tenant cluster, and when its credentials expire."""

    text: str
    expires_at: datetime.datetime
    cluster: str
    endpoint: str
