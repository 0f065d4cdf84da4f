"""A VDC's Kubernetes pages: its clusters, the create form, a cluster's page and its actions. Thin adapters
over the services the GraphQL API's fields and mutations call (``services.clusters``:
``kubernetesClusters``, ``kubernetesCluster``, ``kubeconfig``, and the mutations of
:mod:`portal.clusters.actions`).

A cluster's state is its Cluster API objects in the management cluster, read on every page (a bounded
number of list calls, whatever the clusters). Live progress is htmx polling: the cluster page's status
part (``_status.html``) and the list's table read themselves again every few seconds while a cluster is
on its way somewhere (provisioning, scaling, upgrading, deleting), and stop once it is Ready or Failed;
each read of the status part brings the kubeconfig part along (out of band), so that the download shows
as soon as the cluster has an endpoint. There is no Proxmox task to stream over the websocket: the
providers work towards the objects' spec, and the objects are what says how far they got.

The create form starts inside the VDC's quota and shows what the cluster would take of it, recomputed
over htmx as the fields change (the VM form's figures, ``portal.vms.offer``, counted as a create counts
a cluster: ``services.clusters.quota``).

A cluster of another VDC answers the same 404 page as one that does not exist (the services report it
so). A delete, and a restore of the cluster's etcd from one of its snapshots, ask for a confirmation first;
the other refusals are said in place, next to their field.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from orchestrator.errors import FlexPlaneError, NotFound, Unavailable
from orchestrator.models import Usage, Vdc
from orchestrator.models.clusters import FAILED, READY, KubernetesCluster, version_key
from orchestrator.services import clusters, networks, vdcs
from orchestrator.services.clusters.create import vdc_usage_now
from orchestrator.services.clusters.inputs import MIN_NODES
from orchestrator.services.clusters.quota import CONTROL_PLANE_REPLICA
from orchestrator.services.context import Context
from portal.activity import trail as activity
from portal.clusters import actions
from portal.clusters.forms import ClusterForm, Offer, ScaleForm, UpgradeForm, network_choices
from portal.context import vdc_view
from portal.forms import confirmed, posted, show_error
from portal.htmx import HtmxHttpRequest, redirect, respond, targets
from portal.perform import attempt, confirmation, perform
from portal.vms.offer import Offer as CatalogOffer

# Phases a cluster rests in: its page stops reading itself again.
SETTLED = frozenset({READY, FAILED})
# How often a changing cluster's status is read again (htmx's hx-trigger).
POLL = "every 2s"
# The GraphQL field a kubeconfig download is (a query: the audit record names it).
KUBECONFIG = "kubeconfig"


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _detail_url(vdc: str, name: str) -> str:
    return reverse("cluster-detail", args=[vdc, name])


def _list_url(vdc: str) -> str:
    return reverse("cluster-list", args=[vdc])


def settled(cluster: KubernetesCluster) -> bool:
    """Ready or Failed, and no restore of its etcd under way."""
    return cluster.phase in SETTLED and not (cluster.restore is not None and cluster.restore.under_way)


def nodes(cluster: KubernetesCluster) -> tuple[int, int]:
    """(ready, wanted) worker nodes, over the cluster's pools."""
    return sum(p.ready for p in cluster.node_pools), sum(p.count for p in cluster.node_pools)


def network_label(ctx: Context, ref: str) -> str:
    """A network of the VDC as the create form names it (its name, addresses and zone), from its id."""
    for network in networks.list_networks(ctx):
        if network.named(ref):
            return f"{network.name} ({network.cidr}, zone {network.zone})"
    return ref or "none"


def newer_versions(ctx: Context, cluster: KubernetesCluster) -> list[str]:
    """The catalog's versions newer than the cluster's (its control plane's), oldest first."""
    current = version_key(cluster.version)
    found = {v.version for v in clusters.kubernetes_versions(ctx) if version_key(v.version) > current}
    return sorted(found, key=version_key)


# ------------------------------------------------------------------------------------------ list


def _rows(found: list[KubernetesCluster]) -> list[tuple[KubernetesCluster, tuple[int, int]]]:
    return [(cluster, nodes(cluster)) for cluster in sorted(found, key=lambda c: c.name)]


@vdc_view
def cluster_list(request: HtmxHttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/kubernetes/``: the VDC's clusters (name, version, phase, nodes, endpoint). For htmx (the
    table reading itself again while a cluster changes): the table alone."""
    found = clusters.list_clusters(ctx)
    context = {
        "vdc": _vdc(ctx),
        "rows": _rows(found),
        "changing": any(not settled(c) for c in found),
        "poll": POLL,
    }
    return respond(
        request, "portal/clusters/list.html", context, {"cluster-table": "portal/clusters/_table.html"}
    )


# ------------------------------------------------------------------------------------------ create


def _used(ctx: Context, vdc: Vdc) -> Usage:
    """What the VDC uses now, as a create counts it: its VMs, its clusters' workers not made yet and their
    control planes (one ``/cluster/resources`` per zone, one list of its namespace, five once it has a
    cluster). While a zone does not answer: what the VDC's pages show (the page says which zone)."""
    try:
        return vdc_usage_now(ctx, vdc)
    except Unavailable:
        return vdcs.usage(ctx, vdc.id)


def _offer(ctx: Context, vdc: Vdc) -> Offer:
    """The versions of the catalog (newest first), the profiles the VDC allows, its networks, its usage."""
    versions = sorted(clusters.kubernetes_versions(ctx), key=lambda v: version_key(v.version), reverse=True)
    return Offer(
        catalog=CatalogOffer.of(ctx, vdc),
        versions=versions,
        networks=network_choices(networks.list_networks(ctx)),
        used=_used(ctx, vdc),
    )


@vdc_view
def cluster_create(request: HtmxHttpRequest, ctx: Context) -> HttpResponseBase:
    """``/vdc/<vdc>/kubernetes/new/``: ``createKubernetesCluster`` as a form; on success, the cluster's page
    (which follows it until it is ready). Shown again with the service's errors next to their fields;
    "Add a node pool" shows it again with one more pool, creating nothing. For htmx (HX-Target ``quota``):
    the quota figures alone, of the choices sent along as parameters."""
    vdc = _vdc(ctx)
    offer = _offer(ctx, vdc)
    data = posted(request)
    if data is None and targets(request, "quota"):
        form = ClusterForm(offer, request.GET)
    elif data is not None and "add_pool" in data:
        form = ClusterForm.with_another_pool(offer, data)
    else:
        form = ClusterForm(offer, data)
        if form.is_bound and form.is_valid():
            made = perform(
                lambda: clusters.create_cluster(ctx, form.spec()), ctx=ctx, operation=actions.CREATE.mutation
            )
            if isinstance(made, FlexPlaneError):
                form.show_error(made)
            else:
                messages.success(request, f"Cluster {made.name} is created.")
                return redirect(request, _detail_url(vdc.id, made.name))
    context = {
        "vdc": vdc,
        "form": form,
        "offer": offer,
        "quota": offer.quota(form.asked()),
        "asking": "This cluster",
        "replica": CONTROL_PLANE_REPLICA,
    }
    return respond(request, "portal/clusters/new.html", context, {"quota": "portal/vms/_quota.html"})


# ------------------------------------------------------------------------------------------ one cluster


def _page(
    request: HttpRequest,
    ctx: Context,
    cluster: KubernetesCluster,
    scale: ScaleForm | None = None,
    upgrade: UpgradeForm | None = None,
) -> HttpResponse:
    upgrades = newer_versions(ctx, cluster)
    pools = [(p.name, p.count) for p in cluster.node_pools]
    context = {
        **_live(ctx, cluster),
        "vdc": _vdc(ctx),
        "scale_form": scale or ScaleForm(pools),
        "upgrade_form": upgrade or UpgradeForm(upgrades),
        "upgrades": upgrades,
        "network": network_label(ctx, cluster.network),
    }
    return render(request, "portal/clusters/detail.html", context)


def _live(ctx: Context, cluster: KubernetesCluster) -> dict[str, object]:
    """What the parts of the cluster's page that follow it are drawn from: its status (with its load
    balancers), its kubeconfig."""
    return {
        "cluster": cluster,
        "balancers": clusters.load_balancers(ctx, cluster.vdc, cluster.name),
        "nodes": nodes(cluster),
        "settled": settled(cluster),
        "poll": POLL,
        "validity_hours": round(clusters.VALIDITY.total_seconds() / 3600),
    }


@vdc_view
def cluster_detail(request: HtmxHttpRequest, ctx: Context, cluster: str) -> HttpResponseBase:
    """``/vdc/<vdc>/kubernetes/<cluster>/``: the cluster, its control plane and its node pools, with the
    forms that scale, upgrade and delete it and its kubeconfig. For htmx (the status part reading itself
    again while the cluster changes): the status part, and the kubeconfig part out of band (its download
    once there is an endpoint); once the cluster is gone (deleted), the list."""
    polled = targets(request, "cluster-status")
    try:
        found = clusters.get_cluster(ctx, cluster)
    except NotFound:
        if not polled:
            raise
        messages.success(request, f"Cluster {cluster} is deleted.")
        return HttpResponseClientRedirect(_list_url(_vdc(ctx).id))
    if polled:
        return render(request, "portal/clusters/_status.html", {**_live(ctx, found), "oob": True})
    return _page(request, ctx, found)


@vdc_view
def cluster_scale(request: HtmxHttpRequest, ctx: Context, cluster: str) -> HttpResponseBase:
    """``scaleNodePool`` as a form (the cluster page's): on success, the cluster's page following the
    change; otherwise that page with the error next to its field. Fewer nodes than the pool has are asked
    about first, on a confirmation naming how many go (their VMs, with what is on their disks)."""
    found = clusters.get_cluster(ctx, cluster)  # NotFound: the 404 page
    form = ScaleForm([(p.name, p.count) for p in found.node_pools], posted(request))
    if not form.is_bound:
        return HttpResponseRedirect(_detail_url(_vdc(ctx).id, found.name), status=303)
    if form.is_valid():
        pool, count = form.cleaned_data["pool"], form.cleaned_data["count"]
        now = next(p.count for p in found.node_pools if p.name == pool)
        if MIN_NODES <= count < now and not confirmed(request):  # nodes go, with what is on them: ask first
            context = {"vdc": _vdc(ctx), "cluster": found, "pool": pool, "now": now, "count": count}
            return render(request, "portal/clusters/scale_down.html", {**context, "going": now - count})
        failure = attempt(
            lambda: clusters.scale_node_pool(ctx, found.name, pool, count),
            ctx=ctx,
            operation=actions.SCALE.mutation,
            cluster=found.name,
            pool=pool,
        )
        if failure is not None:
            show_error(form, failure, quota=["count"])  # over quota: the count is what to ask less of
        else:
            messages.success(request, f"Node pool {pool} of cluster {found.name} is being scaled to {count}.")
            return redirect(request, _detail_url(_vdc(ctx).id, found.name))
    return _page(request, ctx, found, scale=form)


@vdc_view
def cluster_upgrade(request: HtmxHttpRequest, ctx: Context, cluster: str) -> HttpResponseBase:
    """``upgradeKubernetesCluster`` as a form (the cluster page's): the control plane, then each pool's
    nodes, one at a time."""
    found = clusters.get_cluster(ctx, cluster)
    form = UpgradeForm(newer_versions(ctx, found), posted(request))
    if not form.is_bound:
        return HttpResponseRedirect(_detail_url(_vdc(ctx).id, found.name), status=303)
    if form.is_valid():
        version = form.cleaned_data["version"]
        failure = attempt(
            lambda: clusters.upgrade_cluster(ctx, found.name, version),
            ctx=ctx,
            operation=actions.UPGRADE.mutation,
            cluster=found.name,
            version=version,
        )
        if failure is not None:
            show_error(form, failure, lambda _: "version")  # the form's one field
        else:
            messages.success(request, f"Cluster {found.name} is being upgraded to {version}.")
            return redirect(request, _detail_url(_vdc(ctx).id, found.name))
    return _page(request, ctx, found, upgrade=form)


@vdc_view
def cluster_delete(request: HttpRequest, ctx: Context, cluster: str) -> HttpResponseBase:
    """GET: what deleting means, and a confirmation; POST (confirmed): ``deleteKubernetesCluster``, then the
    list, where the cluster shows as deleting until it is gone. A refusal is said on the same page."""
    vdc = _vdc(ctx)
    found = clusters.get_cluster(ctx, cluster)  # NotFound: the 404 page
    return confirmation(
        request,
        ctx,
        actions.DELETE,
        lambda: clusters.delete_cluster(ctx, found.name),
        page="portal/clusters/delete.html",
        context={"vdc": vdc, "cluster": found, "nodes": nodes(found)},
        said=f"Cluster {found.name} is being deleted: its nodes, then its control plane.",
        then=_list_url(vdc.id),
        cluster=found.name,
    )


@vdc_view
def cluster_restore(request: HttpRequest, ctx: Context, cluster: str) -> HttpResponseBase:
    """GET (``?snapshot=<name>``): what restoring the cluster's etcd from that snapshot does, and a
    confirmation; POST (confirmed): ``restoreKubernetesCluster``, then the cluster's page, which follows the
    restore. A refusal (a restore under way, a snapshot no longer listed) is said on the same page."""
    vdc = _vdc(ctx)
    found = clusters.get_cluster(ctx, cluster)  # NotFound: the 404 page
    source = request.POST if request.method == "POST" else request.GET
    snapshot = str(source.get("snapshot") or "")[:253]
    taken = next((s for s in found.snapshots if s.name == snapshot), None)
    return confirmation(
        request,
        ctx,
        actions.RESTORE,
        lambda: clusters.restore_cluster(ctx, found.name, snapshot),
        page="portal/clusters/restore.html",
        context={"vdc": vdc, "cluster": found, "snapshot": snapshot, "taken": taken},
        said=f"Cluster {found.name}'s etcd is being restored: its control plane stops, then starts again.",
        then=_detail_url(vdc.id, found.name),
        cluster=found.name,
        snapshot=snapshot,
    )


@vdc_view
def cluster_kubeconfig(request: HttpRequest, ctx: Context, cluster: str) -> HttpResponse:
    """``/vdc/<vdc>/kubernetes/<cluster>/kubeconfig/``: the ``kubeconfig`` query's answer as a file,
    ``<cluster>.kubeconfig``: the cluster's endpoint and CA, and a short-lived client certificate of the
    caller (the file's first line says until when). Each download is an issuance, recorded as the
    GraphQL field records it. A cluster without an endpoint yet: the page saying so (409)."""
    with activity.action(ctx, KUBECONFIG, cluster=cluster):
        issued = clusters.kubeconfig(ctx, cluster)
    expires = issued.expires_at.strftime("%Y-%m-%d %H:%M UTC")
    header = (
        f"# Kubernetes cluster {issued.cluster} of VDC {ctx.vdc}: these credentials expire at {expires}.\n"
    )
    response = HttpResponse(header + issued.text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{issued.cluster}.kubeconfig"'
    response["Cache-Control"] = "no-store"
    return response
