"""The Cluster API objects a tenant cluster is made of, as the management cluster takes them (pure).

Per the contract (/work/notes/k8s_contract.md, "the tenant side"): a ``Cluster`` (no ``topology``)
pointing at a ``ProxmoxCluster`` and a ``FlexControlPlane`` of the cluster's name, and per node pool a
``MachineDeployment`` ``<cluster>-<pool>`` whose machines are made from a ``ProxmoxMachineTemplate`` and
a ``KubeadmConfigTemplate`` named ``<cluster>-<pool>-<hash>``, the hash of the template's content:
templates are immutable, so a change (an upgrade's node image) writes a new one and points the
MachineDeployment at it. Every object carries the VDC's and the cluster's labels.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.models.clusters import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    DEFAULT_NETWORK_PLUGIN,
    DEPLOYMENT_NAME_LABEL,
    EXPOSURE_SERVICE_TYPES,
    FLEX_CONTROL_PLANE,
    KUBEADM_CONFIG_TEMPLATE,
    LOAD_BALANCER,
    MACHINE_DEPLOYMENT,
    NODE_POOL_LABEL,
    PENDING_UPGRADE_ANNOTATION,
    POD_CIDR,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE_TEMPLATE,
    SERVICE_CIDR,
    VDC_LABEL,
    WORKERS_PENDING_ANNOTATION,
    Resource,
)

# The kubelet learns its providerID from the metadata the infrastructure provider gives cloud-init.
PROVIDER_ID = "proxmox://{{ ds.meta_data.instance_id }}"


@dataclass(frozen=True)
class PoolPlan:
    """A node pool, checked: what its machines are made of."""

    name: str
    compute_profile: str
    storage_profile: str
    count: int
    disk_gb: int
    vcpus: int
    memory_mib: int
    network: str | None = None
    # The zone of its network: its machines' failure domain (a VM sits in its network's zone).
    zone: str | None = None


@dataclass(frozen=True)
class ClusterPlan:
    """A cluster, checked: everything its objects are made from."""

    vdc: str
    name: str
    version: str
    image: str
    network: str
    control_plane_replicas: int
    pools: tuple[PoolPlan, ...]
    network_plugin: str = DEFAULT_NETWORK_PLUGIN  # what the control-plane provider installs as the CNI
    control_plane_exposure: str = LOAD_BALANCER  # shared (behind the SNI router) or loadBalancer
    # Whether the cluster has flex.plane's cloud controller (its identity was made: ``clusters.identity``),
    # so that its kubelets leave the nodes' initialization to it (``cloud-provider: external``).
    cloud_controller: bool = False
    # The cluster's zone (its network's), and the storage profiles its CSI driver offers as StorageClasses.
    zone: str = ""
    storage_profiles: tuple[str, ...] = ()


def labels(vdc: str, cluster: str, **more: str) -> dict[str, str]:
    return {VDC_LABEL: vdc, CLUSTER_NAME_LABEL: cluster, **more}


def ref(resource: Resource, name: str) -> dict[str, str]:
    """A v1beta2 reference: ``{apiGroup, kind, name}`` (same namespace)."""
    return {"apiGroup": resource.group, "kind": resource.kind, "name": name}


def _body(
    resource: Resource, name: str, labelled: Mapping[str, str], spec: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "labels": dict(labelled)},
        "spec": dict(spec),
    }


def _digest(content: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:8]


def deployment_name(cluster: str, pool: str) -> str:
    return f"{cluster}-{pool}"


def machine_spec(pool: PoolPlan, image: str) -> dict[str, Any]:
    """A worker's ProxmoxMachine spec (the contract's fields; ``providerID`` is the provider's)."""
    spec: dict[str, Any] = {
        "computeProfile": pool.compute_profile,
        "storageProfile": pool.storage_profile,
        "image": image,
        "diskGb": pool.disk_gb,
    }
    if pool.network:
        spec["network"] = pool.network
    return spec


def machine_template(vdc: str, cluster: str, pool: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A pool's ProxmoxMachineTemplate of a machine spec, named after its content."""
    template = {"template": {"spec": dict(spec)}}
    name = f"{deployment_name(cluster, pool)}-{_digest(template)}"
    return _body(PROXMOX_MACHINE_TEMPLATE, name, labels(vdc, cluster, **{NODE_POOL_LABEL: pool}), template)


def bootstrap_template(vdc: str, cluster: str, pool: PoolPlan, *, external: bool = False) -> dict[str, Any]:
    """The kubeadm join settings of the pool's nodes: the kubelet's providerID, the pool as a label, and
    (``external``: the cluster has a cloud controller) ``cloud-provider: external``, with which a node
    registers tainted uninitialized until the controller has set its addresses and labels. Never without
    a controller: the taint would stay, and no pod would ever be scheduled there."""
    kubelet = [{"name": "provider-id", "value": PROVIDER_ID}]
    if external:
        kubelet.append({"name": "cloud-provider", "value": "external"})
    kubelet.append({"name": "node-labels", "value": f"{NODE_POOL_LABEL}={pool.name}"})
    template = {
        "template": {"spec": {"joinConfiguration": {"nodeRegistration": {"kubeletExtraArgs": kubelet}}}}
    }
    name = f"{deployment_name(cluster, pool.name)}-{_digest(template)}"
    return _body(
        KUBEADM_CONFIG_TEMPLATE, name, labels(vdc, cluster, **{NODE_POOL_LABEL: pool.name}), template
    )


def machine_deployment(
    vdc: str, cluster: str, pool: PoolPlan, version: str, infrastructure: str, bootstrap: str
) -> dict[str, Any]:
    name = deployment_name(cluster, pool.name)
    selector = {CLUSTER_NAME_LABEL: cluster, DEPLOYMENT_NAME_LABEL: name}
    machine: dict[str, Any] = {
        "clusterName": cluster,
        "version": version,
        "bootstrap": {"configRef": ref(KUBEADM_CONFIG_TEMPLATE, bootstrap)},
        "infrastructureRef": ref(PROXMOX_MACHINE_TEMPLATE, infrastructure),
    }
    if pool.zone:
        machine["failureDomain"] = pool.zone
    spec = {
        "clusterName": cluster,
        "replicas": pool.count,
        # Scaling down removes the newest workers (core's default picks at random).
        "deletion": {"order": "Newest"},
        "selector": {"matchLabels": selector},
        "template": {
            "metadata": {"labels": {**selector, VDC_LABEL: vdc, NODE_POOL_LABEL: pool.name}},
            "spec": machine,
        },
    }
    return _body(MACHINE_DEPLOYMENT, name, labels(vdc, cluster, **{NODE_POOL_LABEL: pool.name}), spec)


def proxmox_cluster(plan: ClusterPlan) -> dict[str, Any]:
    return _body(
        PROXMOX_CLUSTER, plan.name, labels(plan.vdc, plan.name), {"vdc": plan.vdc, "network": plan.network}
    )


def control_plane(plan: ClusterPlan) -> dict[str, Any]:
    spec = {
        "replicas": plan.control_plane_replicas,
        "version": plan.version,
        "serviceType": EXPOSURE_SERVICE_TYPES[plan.control_plane_exposure],
        "networkPlugin": plan.network_plugin,
    }
    if plan.zone:
        spec["storage"] = {"zone": plan.zone, "storageProfiles": list(plan.storage_profiles)}
    return _body(FLEX_CONTROL_PLANE, plan.name, labels(plan.vdc, plan.name), spec)


def cluster(plan: ClusterPlan) -> dict[str, Any]:
    spec = {
        "clusterNetwork": {
            "pods": {"cidrBlocks": [POD_CIDR]},
            "services": {"cidrBlocks": [SERVICE_CIDR]},
        },
        "infrastructureRef": ref(PROXMOX_CLUSTER, plan.name),
        "controlPlaneRef": ref(FLEX_CONTROL_PLANE, plan.name),
    }
    return _body(CLUSTER, plan.name, labels(plan.vdc, plan.name), spec)


def pool_objects(plan: ClusterPlan, pool: PoolPlan) -> list[tuple[Resource, dict[str, Any]]]:
    """A pool's templates, then its MachineDeployment (which names them)."""
    infrastructure = machine_template(plan.vdc, plan.name, pool.name, machine_spec(pool, plan.image))
    bootstrap = bootstrap_template(plan.vdc, plan.name, pool, external=plan.cloud_controller)
    deployment = machine_deployment(
        plan.vdc,
        plan.name,
        pool,
        plan.version,
        infrastructure["metadata"]["name"],
        bootstrap["metadata"]["name"],
    )
    return [
        (PROXMOX_MACHINE_TEMPLATE, infrastructure),
        (KUBEADM_CONFIG_TEMPLATE, bootstrap),
        (MACHINE_DEPLOYMENT, deployment),
    ]


def all_objects(plan: ClusterPlan) -> list[tuple[Resource, dict[str, Any]]]:
    """Every object of a new cluster, in the order they are written: what others refer to first, the
    ``Cluster`` last (the providers and core act on a cluster only once it exists, so a create that
    fails half-way leaves nothing anyone acted on)."""
    out: list[tuple[Resource, dict[str, Any]]] = []
    for pool in plan.pools:
        out += pool_objects(plan, pool)
    out += [(PROXMOX_CLUSTER, proxmox_cluster(plan)), (FLEX_CONTROL_PLANE, control_plane(plan))]
    out.append((CLUSTER, cluster(plan)))
    return out


# ------------------------------------------------------------------------------------ upgrades


@dataclass(frozen=True)
class PendingUpgrade:
    """A pool's upgrade: the version and the templates its MachineDeployment will point at."""

    version: str
    infrastructure: str  # ProxmoxMachineTemplate
    bootstrap_ref: Mapping[str, str] | None  # the KubeadmConfigTemplate's reference (None: unchanged)


def pending_upgrade(
    version: str, infrastructure: str, bootstrap_ref: Mapping[str, str] | None
) -> PendingUpgrade:
    return PendingUpgrade(version, infrastructure, bootstrap_ref)


def pending_patch(pending: PendingUpgrade, *, apply: bool) -> dict[str, Any]:
    """A MachineDeployment's merge patch: its pending upgrade recorded (the control-plane provider applies
    it once the control plane runs the version), or, ``apply``, applied now (the control plane runs it)."""
    if not apply:
        value: dict[str, Any] = {
            "version": pending.version,
            "infrastructureRef": ref(PROXMOX_MACHINE_TEMPLATE, pending.infrastructure),
        }
        if pending.bootstrap_ref:
            value["bootstrapConfigRef"] = dict(pending.bootstrap_ref)
        return {"metadata": {"annotations": {PENDING_UPGRADE_ANNOTATION: json.dumps(value, sort_keys=True)}}}
    template: dict[str, Any] = {
        "version": pending.version,
        "infrastructureRef": ref(PROXMOX_MACHINE_TEMPLATE, pending.infrastructure),
    }
    if pending.bootstrap_ref:
        template["bootstrap"] = {"configRef": dict(pending.bootstrap_ref)}
    return {
        "metadata": {"annotations": {PENDING_UPGRADE_ANNOTATION: None}},
        "spec": {"template": {"spec": template}},
    }


def control_plane_upgrade(version: str, there: bool = False) -> dict[str, Any]:
    """The FlexControlPlane's merge patch of an upgrade: its version, flagged so that its provider moves
    the pools once it runs it (``there``: it already does, and the pools were moved directly)."""
    if there:
        return {"spec": {"version": version}}
    return {"metadata": {"annotations": {WORKERS_PENDING_ANNOTATION: version}}, "spec": {"version": version}}
