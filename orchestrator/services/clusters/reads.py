"""Reading tenant clusters: one list per kind, never one read per cluster or per field.

A listing of the VDC the request names costs five reads of the management cluster, whatever the
number of clusters: the ``Cluster``, ``FlexControlPlane``, ``ProxmoxCluster``, ``MachineDeployment``
and ``ProxmoxMachineTemplate`` objects of its namespace labelled with the VDC (``LISTED``). A request
naming no VDC reads each of the caller's VDCs' namespaces so (ADMIN: five cluster-wide lists). The
VDC an object belongs to is its namespace's, never only its label's: a label cannot put an object in
another VDC's view.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models.clusters import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    LISTED,
    MACHINE_DEPLOYMENT,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE_TEMPLATE,
    VDC_LABEL,
    KubeObject,
    KubernetesCluster,
    KubernetesVersion,
    Resource,
    namespace_of,
    vdc_of,
)
from orchestrator.models.vdcs import Vdc
from orchestrator.services import access, catalog, vdcs
from orchestrator.services.clusters.inputs import is_label
from orchestrator.services.context import Context


@dataclass
class VdcObjects:
    """The cluster objects of one or more VDCs' namespaces, by kind, as read now."""

    by_kind: dict[str, list[KubeObject]] = field(default_factory=dict)

    def of(
        self, resource: Resource, cluster: str | None = None, namespace: str | None = None
    ) -> list[KubeObject]:
        return [
            o
            for o in self.by_kind.get(resource.plural, [])
            if (cluster is None or o.cluster == cluster) and (namespace is None or o.namespace == namespace)
        ]

    @classmethod
    def holding(cls, objects: Iterable[KubeObject]) -> VdcObjects:
        """The objects given (a create's, as the management cluster answered them), by kind."""
        given = list(objects)
        return cls({r.plural: [o for o in given if o.kind == r.kind] for r in LISTED})


def selector(cluster: str | None) -> str:
    """The label selector of a VDC's objects (of one cluster, if named)."""
    return VDC_LABEL if cluster is None else f"{VDC_LABEL},{CLUSTER_NAME_LABEL}={cluster}"


def _belongs(obj: KubeObject) -> bool:
    """An object counts for the VDC of its namespace only, and only when its label says the same."""
    vdc = vdc_of(obj.namespace)
    return vdc is not None and obj.labels.get(VDC_LABEL) == vdc


def read(
    ctx: Context,
    namespaces: Iterable[str] | None,
    cluster: str | None = None,
    kinds: Sequence[Resource] = LISTED,
) -> VdcObjects:
    """The objects of ``kinds`` in ``namespaces`` (None: every namespace), of one cluster if named."""
    source = ctx.clusterapi
    found = VdcObjects()
    for resource in kinds:
        objects: list[KubeObject] = []
        if namespaces is None:
            objects = source.list(resource, None, selector(cluster))
        else:
            for namespace in namespaces:
                objects += source.list(resource, namespace, selector(cluster))
        found.by_kind[resource.plural] = [o for o in objects if _belongs(o)]
    return found


def assemble(found: VdcObjects) -> list[KubernetesCluster]:
    """The clusters the objects describe, one per ``Cluster`` object, by VDC then name."""
    keyed: dict[tuple[str, str, str], KubeObject] = {}
    for resource in (FLEX_CONTROL_PLANE, PROXMOX_CLUSTER):
        for obj in found.of(resource):
            keyed[(resource.plural, obj.namespace, obj.name)] = obj
    deployments: dict[tuple[str, str], list[KubeObject]] = defaultdict(list)
    for md in found.of(MACHINE_DEPLOYMENT):
        deployments[(md.namespace, md.cluster)].append(md)
    templates: dict[str, dict[str, KubeObject]] = defaultdict(dict)
    for template in found.of(PROXMOX_MACHINE_TEMPLATE):
        templates[template.namespace][template.name] = template
    out = [
        KubernetesCluster.of(
            c,
            keyed.get((FLEX_CONTROL_PLANE.plural, c.namespace, c.name)),
            keyed.get((PROXMOX_CLUSTER.plural, c.namespace, c.name)),
            deployments.get((c.namespace, c.name), []),
            templates.get(c.namespace, {}),
        )
        for c in found.of(CLUSTER)
        if c.cluster == c.name
    ]
    return sorted(out, key=lambda k: (k.vdc, k.name))


def _scope(ctx: Context) -> list[str] | None:
    """The namespaces the request may read (None: every one, for ADMIN naming no VDC)."""
    visible = access.visible_vdcs(ctx)
    return None if visible is None else [namespace_of(v) for v in sorted(visible)]


def list_clusters(ctx: Context) -> list[KubernetesCluster]:
    """The clusters of the VDC the request names, else of all the caller's VDCs (ADMIN: every VDC).

    USER or ADMIN; naming a VDC one is not a member of is FORBIDDEN. Five reads per VDC namespace
    (ADMIN naming none: five in all)."""
    return ctx.memoize(("clusters", ctx.vdc), lambda: assemble(read(ctx, _scope(ctx))))


def acting_vdc(ctx: Context) -> Vdc:
    """The VDC the request names, of which the caller is a member (or ADMIN): where a cluster is."""
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)
    return vdcs.get_vdc(ctx, ctx.vdc)


def get_cluster(ctx: Context, name: str) -> KubernetesCluster:
    """One cluster of the VDC the request names; another VDC's is ``NotFound``, as a missing one is.

    Five reads (the lists of its objects, by its name's label)."""
    vdc = acting_vdc(ctx)
    if not is_label(name):
        raise NotFound("Kubernetes cluster", str(name)[:63])
    found = [c for c in assemble(read(ctx, [namespace_of(vdc.id)], name)) if c.name == name]
    if not found:
        raise NotFound("Kubernetes cluster", name)
    return found[0]


def kubernetes_versions(ctx: Context) -> list[KubernetesVersion]:
    """The Kubernetes versions a cluster may run (USER or ADMIN), newest first."""
    return catalog.list_kubernetes_versions(ctx)


def templates_by_name(found: VdcObjects) -> Mapping[str, KubeObject]:
    return {t.name: t for t in found.of(PROXMOX_MACHINE_TEMPLATE)}
