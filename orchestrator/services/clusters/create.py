"""Creating a tenant cluster: every value checked first, then its objects written under the VDC's lock.

Checked before anything is written: the name, the version (offered in the catalog, its node image
allowed in the VDC), the network (the VDC's own: another VDC's is reported as one that does not
exist), each pool's profiles (allowed in the VDC, the storage profile with storage in the network's
zone), counts, replicas and the network plugin. Then, under the VDC's lock (the one VM creates take):
the name must be free, and the workers must fit the quota with everything the VDC uses and has planned
(``clusters.quota``). Between the two, each network's way to the control planes is made sure of
(``reach``). Then, where the platform has an identity provider, the cluster's cloud controller gets its
identity (``identity``: a service account of the VDC, its key in a Secret), and the workers' kubelets
leave their nodes to it. The objects are written in ``objects.all_objects``' order, the ``Cluster``
last; a write that fails takes back what was written before it and the identity, so nothing half-made
is left (the error says if that could not be done).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from orchestrator.errors import FlexPlaneError, NotFound, Unavailable, ValidationFailed
from orchestrator.models import Usage
from orchestrator.models.clusters import (
    CLUSTER,
    VDC_LABEL,
    KubeObject,
    KubernetesCluster,
    KubernetesVersion,
    Resource,
    namespace_of,
)
from orchestrator.models.networks import Network
from orchestrator.models.vdcs import Vdc
from orchestrator.services import catalog, networks, vdcs
from orchestrator.services.clusters import identity, inputs, objects, reach
from orchestrator.services.clusters.inputs import CreateCluster
from orchestrator.services.clusters.quota import control_plane, reserved_for_clusters, worker
from orchestrator.services.clusters.reads import VdcObjects, acting_vdc, assemble, selector
from orchestrator.services.context import Context
from orchestrator.services.vms.plan import (
    allowed_compute_profile,
    allowed_storage_profile,
    everything_now,
    still_held,
    usage,
    vdc_lock,
)
from orchestrator.sources.protocols import ClusterApi

logger = logging.getLogger(__name__)


def offered_version(ctx: Context, vdc: Vdc, version: str, field: str = "version") -> KubernetesVersion:
    """A version of the catalog whose node image the VDC allows, or ``ValidationFailed`` on ``field``."""
    offered = {v.version: v for v in catalog.list_kubernetes_versions(ctx)}
    found = offered.get(version)
    if found is None:
        choices = ", ".join(offered) or "none"
        raise ValidationFailed(
            field, f"Kubernetes version {str(version)[:20]!r} is not offered (offered: {choices})"
        )
    if not vdc.allows_image(found.image):
        raise ValidationFailed(
            field, f"Kubernetes {version}'s node image {found.image!r} is not allowed in VDC {vdc.id}"
        )
    try:
        catalog.image(ctx, found.image)
    except NotFound:
        raise ValidationFailed(field, f"Kubernetes {version}'s node image {found.image!r} is gone") from None
    return found


def _network(ctx: Context, vdc: Vdc, ref: str, field: str) -> Network:
    """A network of the VDC by id (or ``<zone>/<name>``); any other is as one that does not exist."""
    if not isinstance(ref, str) or not ref:
        raise ValidationFailed(field, "name one of the VDC's networks")
    for network in networks.vdc_networks(ctx, vdc):
        if network.named(ref) or (len(vdc.zones) == 1 and network.named(ref, vdc.zones[0])):
            return network
    if ctx.unavailable:
        failure = ctx.unavailable[0]
        raise Unavailable(
            failure.where, f"the networks of VDC {vdc.id} cannot be read now: {failure.message}"
        )
    raise ValidationFailed(field, f"VDC {vdc.id} has no network {ref[:80]!r}")


def _pool(
    ctx: Context, vdc: Vdc, index: int, pool: inputs.NodePoolSpec, network: Network, image_min: int
) -> objects.PoolPlan:
    at = f"node_pools[{index}]"
    compute = allowed_compute_profile(ctx, vdc, pool.compute_profile, f"{at}.compute_profile")
    storage = allowed_storage_profile(ctx, vdc, pool.storage_profile, f"{at}.storage_profile")
    if storage.storage_in(network.zone) is None:
        raise ValidationFailed(
            f"{at}.storage_profile",
            f"storage profile {storage.name!r} offers no storage in zone {network.zone} (the network's)",
        )
    return objects.PoolPlan(
        name=pool.name,
        compute_profile=compute.name,
        storage_profile=storage.name,
        count=pool.count,
        disk_gb=max(storage.default_gb, image_min),
        vcpus=compute.vcpus,
        memory_mib=compute.memory_mib,
        network=network.id if pool.network else None,
        zone=network.zone,
    )


@dataclass(frozen=True)
class Planned:
    """A create checked: the VDC, the objects' plan, and each network the workers are on with the input
    field that named it (the cluster's first)."""

    vdc: Vdc
    plan: objects.ClusterPlan
    networks: tuple[tuple[str, Network], ...]


def plan(ctx: Context, spec: CreateCluster) -> Planned:
    """The create checked, every value, before anything is written."""
    vdc = acting_vdc(ctx)
    name = inputs.validate_name(spec.name)
    replicas = inputs.validate_control_plane(spec.control_plane_replicas)
    network_plugin = inputs.validate_network_plugin(spec.network_plugin)
    exposure = inputs.validate_exposure(spec.control_plane_exposure)
    inputs.validate_pools(tuple(spec.node_pools))
    version = offered_version(ctx, vdc, spec.version)
    image = catalog.image(ctx, version.image)
    network = _network(ctx, vdc, spec.network, "network")
    networks = {network.id: ("network", network)}
    pools = []
    for index, pool in enumerate(spec.node_pools):
        field = f"node_pools[{index}].network"
        on = _network(ctx, vdc, pool.network, field) if pool.network else network
        networks.setdefault(on.id, (field, on))
        pools.append(_pool(ctx, vdc, index, pool, on, image.min_disk_gb))
    return Planned(
        vdc,
        objects.ClusterPlan(
            vdc=vdc.id,
            name=name,
            version=version.version,
            image=version.image,
            network=network.id,
            control_plane_replicas=replicas,
            pools=tuple(pools),
            network_plugin=network_plugin,
            control_plane_exposure=exposure,
            zone=network.zone,
            storage_profiles=_storage_profiles(ctx, vdc, network.zone),
        ),
        tuple(networks.values()),
    )


def _storage_profiles(ctx: Context, vdc: Vdc, zone: str) -> tuple[str, ...]:
    """The VDC's storage profiles with storage in the cluster's zone: its StorageClasses (the CSI driver's),
    in the VDC's order (the first is the cluster's default class)."""
    offered = []
    for name in vdc.storage_profiles:
        try:
            if catalog.storage_profile(ctx, name).storage_in(zone) is not None:
                offered.append(name)
        except NotFound:
            continue  # allowed but gone from the catalog since: no class for it
    return tuple(offered)


def vdc_usage_now(ctx: Context, vdc: Vdc) -> Usage:
    """What the VDC uses now for a decision (call under its lock): its VMs, its planned workers and its
    control planes."""
    zones = everything_now(ctx, vdc)
    return usage(zones.values(), vdc) + reserved_for_clusters(ctx, vdc, zones)


def asked(pools: Sequence[objects.PoolPlan]) -> Usage:
    total = Usage()
    for pool in pools:
        total = total + worker(pool.vcpus, pool.memory_mib, pool.disk_gb, pool.count)
    return total


def take_back(
    source: ClusterApi, namespace: str, written: Sequence[tuple[Resource, str]], error: FlexPlaneError
) -> None:
    """Delete what a failed write made (newest first), and say in ``error`` whether that worked."""
    if not written:
        return
    try:
        for resource, name in reversed(written):
            source.delete(resource, namespace, name)
        note = "nothing was left behind"
    except FlexPlaneError as cleanup:
        names = ", ".join(f"{r.kind} {n}" for r, n in written)
        note = (
            f"the objects written ({names}) could not all be removed ({cleanup.message}): delete the cluster"
        )
        logger.warning("cluster create in %s: %s", namespace, note)
    error.message = f"{error.message}; {note}"
    error.args = (error.message,)


def create_cluster(ctx: Context, spec: CreateCluster) -> KubernetesCluster:
    """Create a cluster in the request's VDC (USER of it, or ADMIN), its workers and its control plane
    within its quota (``quota.CONTROL_PLANE_REPLICA`` per replica), its workers' way to the control plane
    made sure of first (``reach``: an edge gateway made for it is taken back when the create fails), and
    its cloud controller's identity made (``identity``: taken back too)."""
    checked = plan(ctx, spec)
    vdc, planned = checked.vdc, checked.plan
    way = reach.ensure(ctx, vdc, checked.networks, reach.ports_of(planned.control_plane_exposure))
    try:
        return _write(ctx, vdc, planned)
    except FlexPlaneError:
        reach.take_back(ctx, way)
        raise


def _write(ctx: Context, vdc: Vdc, planned: objects.ClusterPlan) -> KubernetesCluster:
    """The cluster's objects written under the VDC's lock, its name free and its quota checked then (so
    that the identity made for it is never made for a name another cluster holds)."""
    namespace = namespace_of(vdc.id)
    source = ctx.clusterapi
    with vdc_lock(ctx, vdc) as held:
        taken = source.list(CLUSTER, namespace, selector(planned.name))
        if taken:
            raise ValidationFailed(
                "name", f"VDC {vdc.id} already has a Kubernetes cluster named {planned.name!r}"
            )
        wanted = asked(planned.pools) + control_plane(planned.control_plane_replicas)
        vdcs.check_quota(ctx, vdc, wanted, current=vdc_usage_now(ctx, vdc))
        source.ensure_namespace(namespace, {VDC_LABEL: vdc.id})
        made_for = identity.make(ctx, vdc, planned.name)
        planned = replace(planned, cloud_controller=made_for is not None)
        written: list[tuple[Resource, str]] = []
        made: list[KubeObject] = []
        try:
            for resource, body in objects.all_objects(planned):
                still_held(held, vdc)
                made.append(source.create(resource, namespace, body))
                written.append((resource, body["metadata"]["name"]))
        except FlexPlaneError as exc:
            take_back(source, namespace, written, exc)
            identity.take_back(ctx, made_for, exc)
            raise
    return assemble(VdcObjects.holding(made))[0]
