"""Tenant Kubernetes clusters: their reads, create, scale, upgrade, delete and kubeconfigs; and the
Kubernetes versions of the catalog (ADMIN-managed, readable by every USER).

A cluster is named within the VDC the FlexPlane-VDC-ID header names: another VDC's cluster is NOT_FOUND
exactly like a missing one. A mutation's expected failures are data, ``errors { field message code }``.
"""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.graphql.catalog import CatalogError
from orchestrator.graphql.core import ADMIN, VDC_MEMBER, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.fields import attr
from orchestrator.graphql.inputs import input_type
from orchestrator.models.clusters import KUBERNETES_VERSION_INPUTS, PHASES
from orchestrator.models.clusters import Kubeconfig as KubeconfigModel
from orchestrator.models.clusters import KubernetesCluster as ClusterModel
from orchestrator.models.clusters import KubernetesVersion as VersionModel
from orchestrator.services import audit, catalog, clusters
from orchestrator.services.clusters import CreateCluster, NodePoolSpec
from orchestrator.services.context import Context

KubernetesClusterErrorCode, KubernetesClusterError = error_types("KubernetesCluster", "QUOTA_EXCEEDED")


# ------------------------------------------------------------------------------------------ types


class KubernetesVersion(graphene.ObjectType):
    """A Kubernetes version clusters may run, and the catalog image its worker nodes boot from."""

    version = graphene.String(required=True, description="e.g. v1.34.2")
    image = graphene.String(required=True, description="The catalog image of its worker nodes.")


class KubernetesClusterCondition(graphene.ObjectType):
    """A condition of one of the cluster's Cluster API objects, as its controller reports it."""

    object = graphene.String(required=True, description="The object's kind: Cluster, FlexControlPlane, ...")
    type = graphene.String(required=True)
    status = graphene.String(required=True, description="True, False or Unknown.")
    reason = graphene.String(required=True)
    message = graphene.String(required=True)
    last_transition_time = graphene.String(required=True)

    @staticmethod
    def resolve_last_transition_time(condition: Any, info: graphene.ResolveInfo) -> str:
        return str(condition.last_transition)


class KubernetesControlPlane(graphene.ObjectType):
    """The hosted control plane (API server, controller manager, scheduler as pods)."""

    replicas = graphene.Int(required=True, description="How many it is asked to run.")
    ready_replicas = graphene.Int(required=True)
    version = graphene.String(required=True, description="The version it runs (while upgrading: the old).")
    desired_version = graphene.String(required=True)
    initialized = graphene.Boolean(required=True, description="Its API server has answered once.")
    exposure = graphene.String(
        required=True,
        description="How its API server and Konnectivity are reached: shared (the installation's one "
        "address for every cluster, told apart by the cluster's host name) or loadBalancer (an address "
        "of its own).",
    )


class KubernetesControlPlaneHealth(graphene.ObjectType):
    """What the platform last saw of the cluster's hosted control plane: checked at each change and every
    minute by the control-plane provider."""

    healthy = graphene.Boolean(
        required=True, description="The API server up, every etcd member ready, every agent connected."
    )
    api_server_up = graphene.Boolean(
        required=True, description="Its API server answered ready (/readyz) through the cluster's endpoint."
    )
    api_server_reason = graphene.String(
        required=True,
        description="Ready, NotReady (it answered, not ready), Unreachable (no answer), NoReadyReplicas.",
    )
    api_server_message = graphene.String(
        required=True, description="The checks that failed, or why it did not answer; empty when up."
    )
    etcd_members = graphene.Int(required=True, description="The members of its etcd.")
    etcd_members_ready = graphene.Int(required=True)
    konnectivity_agents = graphene.Int(
        description="Konnectivity agents in the cluster (one per node); null while its API server does not "
        "answer."
    )
    konnectivity_agents_connected = graphene.Int(
        description="Agents connected to the control plane's Konnectivity server (the API server reaches "
        "nodes and pods through them: logs, exec, webhooks); null while unknown."
    )


class KubernetesNodePool(graphene.ObjectType):
    """A pool of worker nodes of one size (a MachineDeployment)."""

    name = graphene.String(required=True)
    compute_profile = graphene.String(required=True)
    storage_profile = graphene.String(required=True)
    network = graphene.String(required=True, description="The VDC network its nodes are on.")
    count = graphene.Int(required=True, description="How many nodes it is asked to have.")
    ready = graphene.Int(required=True, description="How many of them are ready.")
    version = graphene.String(required=True, description="The Kubernetes version its nodes are made with.")


class KubernetesLoadBalancerPort(graphene.ObjectType):
    """A port of a LoadBalancer Service on its public address, forwarded to its NodePort on a ready node."""

    protocol = graphene.String(required=True, description="tcp or udp.")
    port = graphene.Int(required=True)
    node_port = graphene.Int(required=True)


class KubernetesLoadBalancer(graphene.ObjectType):
    """A Service of type LoadBalancer of the cluster, on a public IP of the VDC's edge gateway (its
    cloud controller put it there)."""

    namespace = graphene.String(required=True)
    name = graphene.String(required=True)
    zone = graphene.String(required=True, description="The zone of the edge gateway that holds its address.")
    address = graphene.String(required=True, description="Its public IP: the Service's external address.")
    ports = graphene.List(graphene.NonNull(KubernetesLoadBalancerPort), required=True)
    nodes = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="The node addresses its ports go to."
    )
    source_ranges = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="Who may connect (0.0.0.0/0: anyone), from the Service's loadBalancerSourceRanges.",
    )


class KubernetesEtcdSnapshot(graphene.ObjectType):
    """A snapshot of the cluster's etcd (all its objects) in the platform's backup bucket."""

    name = graphene.String(required=True, description="What restoreKubernetesCluster names it by.")
    taken_at = graphene.DateTime(description="When it was taken.")
    size = graphene.Float(required=True, description="Its size in the bucket (sealed), in bytes.")


class KubernetesClusterRestore(graphene.ObjectType):
    """A restore of the cluster's etcd from a snapshot (restoreKubernetesCluster), as the platform runs it."""

    id = graphene.String(required=True)
    snapshot = graphene.String(required=True, description="The snapshot's name; empty for the newest.")
    phase = graphene.String(
        required=True,
        description="Requested (not taken up yet), Stopping (the control plane), Restoring (etcd's data), "
        "Starting (the control plane again), Succeeded or Failed.",
    )
    message = graphene.String(required=True, description="What it is doing, or how it ended.")
    under_way = graphene.Boolean(required=True, description="Not ended yet.")
    started_at = graphene.DateTime()
    finished_at = graphene.DateTime()


class KubernetesCluster(graphene.ObjectType):
    """A tenant Kubernetes cluster of a VDC: a hosted control plane and pools of worker VMs."""

    name = graphene.String(required=True, description="Unique in its VDC.")
    vdc = graphene.String(required=True)
    version = graphene.String(required=True, description="The Kubernetes version it is asked to run.")
    phase = graphene.String(required=True, description=f"One of {', '.join(PHASES)}.")
    endpoint = graphene.String(description="Its API server's URL, once it has one.")
    network = graphene.String(required=True, description="The VDC network its nodes join by default.")
    network_plugin = graphene.String(
        required=True, description="The network plugin installed in the cluster: cilium, calico, or none."
    )
    control_plane = graphene.Field(KubernetesControlPlane, required=True)
    health = graphene.Field(
        KubernetesControlPlaneHealth,
        description="Its control plane's health (API server, etcd, Konnectivity); null until first checked.",
    )
    node_pools = graphene.List(graphene.NonNull(KubernetesNodePool), required=True)
    created_at = graphene.DateTime()
    conditions = graphene.List(graphene.NonNull(KubernetesClusterCondition), required=True)
    load_balancers = graphene.List(
        graphene.NonNull(KubernetesLoadBalancer),
        required=True,
        description="Its Services of type LoadBalancer that have their address, by namespace and name.",
    )
    snapshots = graphene.List(
        graphene.NonNull(KubernetesEtcdSnapshot),
        required=True,
        description="Its etcd's snapshots in the backup bucket, newest first, as last listed (every few "
        "minutes); empty where the platform keeps none.",
    )
    restore = graphene.Field(
        KubernetesClusterRestore, description="The last restore of its etcd; null if there was none."
    )

    @staticmethod
    def resolve_load_balancers(root: ClusterModel, info: graphene.ResolveInfo) -> list[clusters.LoadBalancer]:
        return clusters.load_balancers(flexplane(info), root.vdc, root.name)


class Kubeconfig(graphene.ObjectType):
    """A kubeconfig of the caller for a cluster: a client certificate of theirs, signed by the cluster's
    CA, in the group of the VDC's members (cluster-admin there), valid 8 hours."""

    cluster = graphene.String(required=True)
    endpoint = graphene.String(required=True)
    kubeconfig = graphene.String(required=True, description="The file, YAML.")
    expires_at = graphene.DateTime(required=True)

    resolve_kubeconfig = attr("text")


# ------------------------------------------------------------------------------------------ reads


class Query(graphene.ObjectType):
    kubernetes_clusters = graphene.List(
        graphene.NonNull(KubernetesCluster),
        required=True,
        description="The Kubernetes clusters of the VDC the FlexPlane-VDC-ID header names, else of all the "
        "caller's VDCs (ADMIN: all). Five reads of the management cluster per VDC, whatever the number of "
        "clusters. Needs USER (a member of the VDC named) or ADMIN.",
    )
    kubernetes_cluster = graphene.Field(
        KubernetesCluster,
        name=graphene.String(required=True),
        description="One cluster of the VDC the FlexPlane-VDC-ID header names (another VDC's is NOT_FOUND).",
    )
    kubeconfig = graphene.Field(
        Kubeconfig,
        cluster=graphene.String(required=True),
        description="A kubeconfig of the caller for a cluster of the VDC the header names, valid 8 hours (a "
        "client certificate signed by the cluster's CA; each issuance is audited). CONFLICT while the "
        "cluster has no endpoint or CA yet.",
    )
    kubernetes_versions = graphene.List(
        graphene.NonNull(KubernetesVersion),
        required=True,
        description="The Kubernetes versions clusters may run, newest first. Needs USER or ADMIN.",
    )

    @staticmethod
    @domain_errors
    def resolve_kubernetes_clusters(root: Any, info: graphene.ResolveInfo) -> list[ClusterModel]:
        return clusters.list_clusters(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_kubernetes_cluster(root: Any, info: graphene.ResolveInfo, name: str) -> ClusterModel:
        return clusters.get_cluster(flexplane(info), name)

    @staticmethod
    @domain_errors
    def resolve_kubeconfig(root: Any, info: graphene.ResolveInfo, cluster: str) -> KubeconfigModel:
        ctx = flexplane(info)
        request = getattr(info.context, "request", None)
        with audit.audited(
            ctx,
            "kubeconfig",
            via=audit.API,
            client=audit.client_of(request),
            targets={"cluster": cluster[:200]},
        ):
            return clusters.kubeconfig(ctx, cluster)

    @staticmethod
    @domain_errors
    def resolve_kubernetes_versions(root: Any, info: graphene.ResolveInfo) -> list[VersionModel]:
        return clusters.kubernetes_versions(flexplane(info))


# ----------------------------------------------------------------------------------------- inputs


class KubernetesControlPlaneInput(graphene.InputObjectType):
    replicas = graphene.Int(description="1 to 5 API server replicas. Default 2.")
    exposure = graphene.String(
        description="shared (behind the installation's one address for every cluster's control plane, "
        "where it has one: the default there) or loadBalancer (an address of its own: the default "
        "elsewhere). Kept for the cluster's life."
    )


class KubernetesNodePoolInput(graphene.InputObjectType):
    name = graphene.String(required=True, description="A DNS label of at most 12 characters.")
    compute_profile = graphene.String(required=True, description="A compute profile the VDC allows.")
    storage_profile = graphene.String(required=True, description="A storage profile the VDC allows.")
    count = graphene.Int(required=True, description="1 to 100 nodes.")
    network = graphene.String(description="A network of the VDC; default: the cluster's.")


class CreateKubernetesClusterInput(graphene.InputObjectType):
    name = graphene.String(
        required=True, description="A DNS label of at most 40 characters, unique in the VDC."
    )
    version = graphene.String(required=True, description="One of kubernetesVersions.")
    network = graphene.String(required=True, description="A network of the VDC (its id, or <zone>/<name>).")
    control_plane = graphene.Field(KubernetesControlPlaneInput)
    network_plugin = graphene.String(
        description="The network plugin (CNI) installed with the cluster, pinned to its Kubernetes version: "
        "cilium (the default: Cilium, VXLAN between the nodes), calico (Calico with its Kubernetes "
        "datastore, VXLAN between the nodes), or none (the nodes stay NotReady until you apply a plugin of "
        "your own)."
    )
    node_pools = graphene.List(
        graphene.NonNull(KubernetesNodePoolInput), required=True, description="1 to 10 pools."
    )


def _create(ctx: Context, input: dict[str, Any]) -> ClusterModel:
    pools = tuple(
        NodePoolSpec(
            name=p["name"],
            compute_profile=p["compute_profile"],
            storage_profile=p["storage_profile"],
            count=p["count"],
            network=p.get("network"),
        )
        for p in input.get("node_pools") or ()
    )
    plane = input.get("control_plane") or {}
    spec = CreateCluster(
        name=input["name"],
        version=input["version"],
        network=input["network"],
        node_pools=pools,
        control_plane_replicas=plane.get("replicas"),
        control_plane_exposure=plane.get("exposure"),
        network_plugin=input.get("network_plugin"),
    )
    return clusters.create_cluster(ctx, spec)


KubernetesVersionInput = input_type("KubernetesVersionInput", KUBERNETES_VERSION_INPUTS)
KubernetesVersionUpdateInput = input_type(
    "KubernetesVersionUpdateInput", KUBERNETES_VERSION_INPUTS, update=True
)


# -------------------------------------------------------------------------------------- mutations


class KubernetesClusterMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(VDC_MEMBER, KubernetesClusterError, "kubernetes_cluster")
    kubernetes_cluster = graphene.Field(KubernetesCluster)


class CreateKubernetesCluster(KubernetesClusterMutation):
    class Meta:
        service = _create
        description = (
            "Create a Kubernetes cluster in the VDC: its Cluster API objects, which the providers make real "
            "(follow its phase). Its workers count against the VDC's quota as the VMs they become, checked "
            "before anything is written. Errors: INVALID (naming the field), QUOTA_EXCEEDED, UNAVAILABLE."
        )

    class Arguments:
        input = CreateKubernetesClusterInput(required=True)


class ScaleNodePool(KubernetesClusterMutation):
    class Meta:
        service = clusters.scale_node_pool
        description = "Set a node pool's node count (1 to 100); growing it must fit the VDC's quota."

    class Arguments:
        cluster = graphene.String(required=True)
        pool = graphene.String(required=True)
        count = graphene.Int(required=True)


class UpgradeKubernetesCluster(KubernetesClusterMutation):
    class Meta:
        service = clusters.upgrade_cluster
        description = (
            "Upgrade the control plane and every node pool to an offered version, one minor version at a "
            "time, never down; the workers are replaced one by one with nodes of the version's image."
        )

    class Arguments:
        cluster = graphene.String(required=True)
        version = graphene.String(required=True)


class DeleteKubernetesCluster(KubernetesClusterMutation):
    class Meta:
        service = clusters.delete_cluster
        description = "Delete a cluster: its workers' VMs, its control plane, everything of it."

    class Arguments:
        cluster = graphene.String(required=True)

    kubernetes_cluster = graphene.Field(KubernetesCluster, description="The cluster, being deleted.")


class RestoreKubernetesCluster(KubernetesClusterMutation):
    class Meta:
        service = clusters.restore_cluster
        description = (
            "Restore the cluster's etcd from one of its snapshots (the newest when none is named): its "
            "control plane stops, every object of the cluster goes back to the snapshot's time (what "
            "changed since is lost), and it starts again; nodes and pods are not touched. Follow its "
            "restore. Errors: INVALID (snapshot), CONFLICT (being deleted, or a restore under way)."
        )

    class Arguments:
        cluster = graphene.String(required=True)
        snapshot = graphene.String(description="A name of kubernetesCluster.snapshots; default: the newest.")


class KubernetesVersionMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(ADMIN, CatalogError, "kubernetes_version")
    kubernetes_version = graphene.Field(KubernetesVersion)


class CreateKubernetesVersion(KubernetesVersionMutation):
    class Meta:
        service = catalog.create_kubernetes_version
        description = "Offer a Kubernetes version, with the catalog image its worker nodes boot from."

    class Arguments:
        input = KubernetesVersionInput(required=True)


class UpdateKubernetesVersion(KubernetesVersionMutation):
    class Meta:
        service = catalog.update_kubernetes_version
        description = "Change a version's node image (nodes made from now on boot from it)."

    class Arguments:
        version = graphene.String(required=True)
        input = KubernetesVersionUpdateInput(required=True)


class DeleteKubernetesVersion(KubernetesVersionMutation):
    class Meta:
        service = catalog.delete_kubernetes_version
        description = "Stop offering a version; clusters running it keep running."

    class Arguments:
        version = graphene.String(required=True)

    kubernetes_version = graphene.Field(KubernetesVersion, description="The version as it was.")


class Mutation(graphene.ObjectType):
    create_kubernetes_cluster = CreateKubernetesCluster.Field()
    scale_node_pool = ScaleNodePool.Field()
    upgrade_kubernetes_cluster = UpgradeKubernetesCluster.Field()
    delete_kubernetes_cluster = DeleteKubernetesCluster.Field()
    restore_kubernetes_cluster = RestoreKubernetesCluster.Field()
    create_kubernetes_version = CreateKubernetesVersion.Field()
    update_kubernetes_version = UpdateKubernetesVersion.Field()
    delete_kubernetes_version = DeleteKubernetesVersion.Field()
