"""A tenant cluster's changes: scaling a node pool, upgrading, deleting, restoring its etcd. USER of its
VDC, or ADMIN.

- Scale: a pool's MachineDeployment's ``replicas``, checked against the quota as a create is (a scale
  down always fits); core makes or removes the Machines, the infrastructure provider their VMs.
- Upgrade: one minor version at a time, never down; the control plane first, then the workers (a
  kubelet is never newer than its API server). The ``FlexControlPlane``'s version is patched (its pods
  roll: a Deployment, seconds), and each pool gets a new ``ProxmoxMachineTemplate`` of the version's
  node image (templates are immutable) recorded as its MachineDeployment's pending upgrade; the
  control-plane provider points the MachineDeployments at it once the control plane runs the version
  (see ``objects.pending_upgrade``), and core rolls the workers, a new one up before an old one goes,
  so a roll needs one worker's room in the quota per pool.
- Delete: the MachineDeployments (their workers go first), the ``Cluster`` (core then deletes the
  control plane and the ProxmoxCluster it owns; the providers' finalizers remove the hosted control
  plane and the VMs), and the templates. A control plane or ProxmoxCluster core never adopted (no owner)
  is deleted directly. The cloud controller's identity goes too (``identity.remove``): its service
  account revoked, the Secret of its key deleted; and so do the public IPs its Services of type
  LoadBalancer held on the VDC's gateways (``balancers.release_all``), which it can no longer release.
- Restore: its etcd back to one of its snapshots. The orchestrator holds no credentials of the backup
  bucket: the control-plane provider lists each cluster's snapshots into its FlexControlPlane's
  ``status.etcdBackup`` (every few minutes) and runs a restore asked for in its ``spec.restore`` (``{id,
  snapshot}``: a new id, a new restore), reporting it in ``status.restore``
  (providers/controlplane/restore.py). So a restore here is that request written, with a fresh id; the
  cluster's ``restore`` then follows it: its control plane stops, each etcd member's data is made anew
  from the snapshot, and it starts again. Its objects go back to the snapshot's time; its nodes and pods
  are not touched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from typing import Any

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, ValidationFailed
from orchestrator.models import ComputeProfile
from orchestrator.models.clusters import (
    CLUSTER,
    DELETING,
    FLEX_CONTROL_PLANE,
    KUBEADM_CONFIG_TEMPLATE,
    MACHINE_DEPLOYMENT,
    NODE_POOL_LABEL,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE_TEMPLATE,
    WRITTEN,
    KubeObject,
    KubernetesCluster,
    namespace_of,
    version_key,
)
from orchestrator.models.vdcs import Vdc
from orchestrator.services import catalog, vdcs
from orchestrator.services.clusters import balancers, identity, inputs, objects
from orchestrator.services.clusters.create import offered_version, vdc_usage_now
from orchestrator.services.clusters.quota import size_of
from orchestrator.services.clusters.reads import VdcObjects, acting_vdc, assemble, read, templates_by_name
from orchestrator.services.context import Context
from orchestrator.services.vms.plan import still_held, vdc_lock


def _objects(
    ctx: Context, vdc: Vdc, cluster: str, kinds: tuple[Any, ...] = WRITTEN
) -> tuple[VdcObjects, KubernetesCluster]:
    """The cluster's objects read now, and the cluster; ``NotFound`` if it has no ``Cluster`` object."""
    if not isinstance(cluster, str) or not inputs.is_label(cluster):
        raise NotFound("Kubernetes cluster", str(cluster)[:63])
    found = read(ctx, [namespace_of(vdc.id)], cluster, kinds)
    made = [c for c in assemble(found) if c.name == cluster]
    if not made:
        raise NotFound("Kubernetes cluster", cluster)
    return found, made[0]


def _changeable(cluster: KubernetesCluster) -> None:
    if cluster.phase == DELETING:
        raise Conflict(f"Kubernetes cluster {cluster.name} is being deleted")


def _reread(ctx: Context, vdc: Vdc, cluster: str) -> KubernetesCluster:
    return _objects(ctx, vdc, cluster)[1]


def scale_node_pool(ctx: Context, cluster: str, pool: str, count: int) -> KubernetesCluster:
    """Set a node pool's node count (1 to 100); growing it must fit the VDC's quota."""
    vdc = acting_vdc(ctx)
    inputs.validate_count(count, "count")
    with vdc_lock(ctx, vdc) as held:
        found, current = _objects(ctx, vdc, cluster)
        _changeable(current)
        deployment = next(
            (md for md in found.of(MACHINE_DEPLOYMENT) if md.labels.get(NODE_POOL_LABEL) == pool), None
        )
        if deployment is None:
            raise ValidationFailed(
                "pool", f"Kubernetes cluster {cluster} has no node pool {str(pool)[:40]!r}"
            )
        before = deployment.spec.get("replicas")
        grow = count - (before if isinstance(before, int) else 0)
        if grow > 0:
            template = templates_by_name(found).get(_infrastructure_ref(deployment))
            profiles = {
                p.name: p for p in catalog.objects(ctx, catalog.COMPUTE_PROFILE, ComputeProfile.from_spec)
            }
            size = size_of(template, profiles)
            add = dataclasses.replace(
                size,
                vcpus=size.vcpus * grow,
                memory_mib=size.memory_mib * grow,
                disk_gb=size.disk_gb * grow,
                vms=grow,
            )
            vdcs.check_quota(ctx, vdc, add, current=vdc_usage_now(ctx, vdc))
        still_held(held, vdc)
        ctx.clusterapi.patch(
            MACHINE_DEPLOYMENT, namespace_of(vdc.id), deployment.name, {"spec": {"replicas": count}}
        )
    return _reread(ctx, vdc, cluster)


def _infrastructure_ref(md: KubeObject) -> str:
    spec = (md.spec.get("template") or {}).get("spec") or {}
    return str((spec.get("infrastructureRef") or {}).get("name") or "")


def _check_step(current: str, target: str) -> None:
    now, then = version_key(current), version_key(target)
    if then < now:
        raise ValidationFailed("version", f"a cluster is never downgraded: it runs {current}, not {target}")
    if len(now) == 3 and (then[0] != now[0] or then[1] > now[1] + 1):
        raise ValidationFailed(
            "version",
            f"upgrade one minor version at a time: from {current}, to v{now[0]}.{now[1] + 1}.x at most",
        )


def _bootstrap_ref(md: KubeObject) -> dict[str, str] | None:
    spec = (md.spec.get("template") or {}).get("spec") or {}
    found = (spec.get("bootstrap") or {}).get("configRef")
    return dict(found) if isinstance(found, dict) and found.get("name") else None


def upgrade_cluster(ctx: Context, cluster: str, version: str) -> KubernetesCluster:
    """Upgrade the control plane, then every node pool, to ``version`` (offered, one minor step).

    The workers never run ahead of their API server (Kubernetes' version-skew policy): each pool's new
    template is written and its upgrade recorded on its MachineDeployment (``PENDING_UPGRADE``), and
    only the control plane's version is patched, flagged (``WORKERS_PENDING``); the control-plane
    provider applies the pools' upgrades once its rollout is complete, and core rolls the workers. A
    control plane that already runs the version gets its pools moved at once."""
    vdc = acting_vdc(ctx)
    target = offered_version(ctx, vdc, version)
    namespace = namespace_of(vdc.id)
    source = ctx.clusterapi
    with vdc_lock(ctx, vdc) as held:
        found, current = _objects(ctx, vdc, cluster)
        _changeable(current)
        # Never below what it is asked to run; one minor step above what its control plane runs now (an
        # upgrade under way finishes before the next minor one).
        _check_step(current.version, target.version)
        _check_step(current.control_plane.version, target.version)
        templates = templates_by_name(found)
        # Already there: status.version is set once the rollout to the spec's version is complete.
        there = current.control_plane.version == target.version == current.control_plane.desired_version
        still_held(held, vdc)
        for md in found.of(MACHINE_DEPLOYMENT):
            old = templates.get(_infrastructure_ref(md))
            spec = dict(((old.spec.get("template") or {}).get("spec") or {}) if old else {})
            spec["image"] = target.image
            pool = md.labels.get(NODE_POOL_LABEL, md.name)
            body = objects.machine_template(vdc.id, cluster, pool, spec)
            name = body["metadata"]["name"]
            if name not in templates:
                with contextlib.suppress(Conflict):  # the same content, written by an earlier attempt
                    source.create(PROXMOX_MACHINE_TEMPLATE, namespace, body)
            pending = objects.pending_upgrade(target.version, name, _bootstrap_ref(md))
            source.patch(MACHINE_DEPLOYMENT, namespace, md.name, objects.pending_patch(pending, apply=there))
        source.patch(
            FLEX_CONTROL_PLANE, namespace, cluster, objects.control_plane_upgrade(target.version, there)
        )
    return _reread(ctx, vdc, cluster)


def delete_cluster(ctx: Context, cluster: str) -> KubernetesCluster:
    """Delete a cluster and everything of it (see the module's docstring); answers it as it was."""
    vdc = acting_vdc(ctx)
    namespace = namespace_of(vdc.id)
    source = ctx.clusterapi
    found, current = _objects(ctx, vdc, cluster)
    failures: list[str] = []

    def delete(obj: KubeObject, resource: Any) -> None:
        try:
            source.delete(resource, namespace, obj.name)
        except FlexPlaneError as exc:
            failures.append(f"{resource.kind} {obj.name}: {exc.message}")

    for md in found.of(MACHINE_DEPLOYMENT):
        delete(md, MACHINE_DEPLOYMENT)
    for obj in found.of(CLUSTER):
        delete(obj, CLUSTER)
    for resource in (FLEX_CONTROL_PLANE, PROXMOX_CLUSTER):
        for obj in found.of(resource):
            if not any(kind == CLUSTER.kind for kind, _ in obj.owners):
                delete(obj, resource)
    for resource in (PROXMOX_MACHINE_TEMPLATE, KUBEADM_CONFIG_TEMPLATE):
        for obj in found.of(resource):
            delete(obj, resource)
    failures += identity.remove(ctx, vdc.id, cluster)
    # After the controller's account: revoked, it takes no new address for the Services going.
    failures += balancers.release_all(ctx, vdc.id, cluster)
    if failures:
        raise Conflict(f"Kubernetes cluster {cluster} was not wholly deleted, retry: {'; '.join(failures)}")
    return dataclasses.replace(current, phase=DELETING)


def restore_cluster(ctx: Context, cluster: str, snapshot: str | None = None) -> KubernetesCluster:
    """Restore the cluster's etcd from ``snapshot`` (one of its listed snapshots' names; None or "": the
    newest). CONFLICT while it is being deleted or a restore of it is under way; INVALID naming
    ``snapshot`` when it is not one of the cluster's snapshots (or it has none)."""
    vdc = acting_vdc(ctx)
    with vdc_lock(ctx, vdc) as held:  # two restores asked at once: the second sees the first under way
        found, current = _objects(ctx, vdc, cluster)
        _changeable(current)
        control_plane = next((o for o in found.of(FLEX_CONTROL_PLANE) if o.name == current.name), None)
        if control_plane is None:
            raise Conflict(f"Kubernetes cluster {current.name} has no control plane yet")
        if current.restore is not None and current.restore.under_way:
            phase = current.restore.phase
            raise Conflict(f"a restore of Kubernetes cluster {current.name}'s etcd is under way ({phase})")
        chosen = _snapshot(current, snapshot)
        still_held(held, vdc)
        ctx.clusterapi.patch(
            FLEX_CONTROL_PLANE,
            namespace_of(vdc.id),
            control_plane.name,
            {"spec": {"restore": {"id": str(uuid.uuid4()), "snapshot": chosen}}},
        )
    return _reread(ctx, vdc, current.name)


def _snapshot(cluster: KubernetesCluster, snapshot: str | None) -> str:
    """The snapshot asked for, checked against the cluster's ("": the newest, of which there must be one)."""
    names = [s.name for s in cluster.snapshots]
    if not names:
        raise ValidationFailed(
            "snapshot",
            f"Kubernetes cluster {cluster.name} has no etcd snapshot to restore (none taken yet, or the "
            "platform keeps none)",
        )
    if snapshot and snapshot not in names:
        raise ValidationFailed(
            "snapshot",
            f"Kubernetes cluster {cluster.name} has no snapshot {str(snapshot)[:253]!r}: name one of its "
            "snapshots",
        )
    return snapshot or ""
