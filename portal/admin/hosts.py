"""The admin's hosts pages: every host by zone, cordon, uncordon, update now, drain, remove, join tokens,
and the agents' staged rollout: its phase, its canaries, where it halted; halt and resume it.

Each is an ``admin_view`` (anyone but ADMIN gets the 404 page) calling the services the GraphQL
mutations call (``portal.admin.actions`` names which). A drain runs in the background: the hosts
page follows it (:class:`DrainCell`, an htmx poll of its drains while any runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse

from orchestrator.services import catalog, enrollment, hosts, image_cache, mesh, releases, rollouts
from orchestrator.services.context import Context
from orchestrator.services.people import Person, people
from portal.activity import trail as activity
from portal.admin.actions import action
from portal.admin.forms import JoinTokenForm
from portal.admin.pages import admin_page, attempt, confirm, page_status
from portal.context import admin_view
from portal.forms import posted
from portal.htmx import HtmxHttpRequest, targets
from portal.perform import back_to


def _post_only(request: HttpRequest) -> HttpResponseNotAllowed | None:
    return None if request.method == "POST" else HttpResponseNotAllowed(["POST"])


@dataclass(frozen=True)
class DrainCell:
    """A host's drain as the hosts page shows it, and follows it while it runs."""

    zone: str
    node: str
    status: str
    moved: int
    failed: int
    total: int
    message: str

    @property
    def running(self) -> bool:
        return self.status == hosts.RUNNING

    @classmethod
    def of(cls, drain: hosts.HostDrain) -> DrainCell:
        states = [vm.state for vm in drain.vms]
        return cls(
            drain.zone,
            drain.host,
            drain.status,
            states.count(hosts.MOVED),
            states.count(hosts.VM_FAILED),
            len(states),
            drain.message,
        )


def _labelled(images: list[image_cache.HostImage]) -> list[tuple[image_cache.HostImage, str]]:
    """A host's images with their labels: the image's name, and its storage where the zone has several."""
    several = len({i.storage for i in images}) > 1
    return [(i, f"{i.image} ({i.storage})" if several else i.image) for i in images]


# While a drain runs, the hosts page reads its drains again this often (an htmx poll of the fragment
# ``_drains.html``, which stops once none runs).
DRAIN_POLL = "every 2s"


@admin_view
def host_list(request: HtmxHttpRequest, ctx: Context) -> HttpResponse:
    """Every host by zone: online, agent and Proxmox versions, certificate expiry, the images it has
    cached, cordon and drain; above them the agent rollout, if one was started (its phase, and where
    it halted).

    As the ``drains`` fragment (htmx, target ``drains``): only the drains, each swapped into its host's
    cell, and the poll that asks again while any runs."""
    if targets(request, "drains"):
        followed = [DrainCell.of(d) for d in hosts.drains(ctx)]
        context = {"drains": followed, "polling": any(c.running for c in followed), "poll": DRAIN_POLL}
        return render(request, "portal/admin/_drains.html", context)
    details = hosts.host_details(ctx)
    cells = {d.host.key: DrainCell.of(d.drain) for d in details if d.drain is not None}
    cached = image_cache.host_images(ctx)
    by_zone = [
        (
            zone,
            [
                (
                    d,
                    cells.get(d.host.key),
                    mesh.peer_of_host(ctx, d.host.zone, d.host.node),
                    _labelled(cached.get(d.host.key, [])),
                )
                for d in details
                if d.host.zone == zone.id
            ],
        )
        for zone in catalog.list_zones(ctx)
    ]
    tokens = enrollment.list_join_tokens(ctx)
    named = {t.created_by: t.created_by_name for t in tokens if t.created_by_name}
    creators = people(ctx, (t.created_by for t in tokens), named)
    return admin_page(
        request,
        "portal/admin/hosts.html",
        {
            "zones": by_zone,
            "rollout": rollouts.rollout(ctx),
            "tokens": [(t, creators.get(t.created_by) or Person(t.created_by)) for t in tokens],
            "cordon": action("host.cordon"),
            "uncordon": action("host.uncordon"),
            "update_now": action("host.update-now"),
            "rollout_halt": action("host.rollout-halt"),
            "rollout_resume": action("host.rollout-resume"),
            "polling": any(c.running for c in cells.values()),
            "poll": DRAIN_POLL,
        },
        active="host",
    )


def _host_label(zone: str, host: str) -> str:
    return f"{zone}/{host}"


@admin_view
def host_cordon(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """POST: keep new VMs off the host (its VMs keep running)."""
    if refused := _post_only(request):
        return refused
    with activity.action(ctx):
        hosts.cordon_host(ctx, zone, host)
    messages.success(request, f"Host {_host_label(zone, host)} is cordoned: it takes no new VMs.")
    return redirect("portal-admin:hosts")


@admin_view
def host_uncordon(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """POST: let placement use the host again (refused while a drain of it runs: said in words)."""
    if refused := _post_only(request):
        return refused
    _, failure = attempt(lambda: hosts.uncordon_host(ctx, zone, host))
    said = f"Host {_host_label(zone, host)} takes new VMs again."
    return back_to(request, failure, said, "portal-admin:hosts")


@admin_view
def host_update_now(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """POST: the host's agent checks the release channel now (its own updater, its own rules)."""
    if refused := _post_only(request):
        return refused
    update, failure = attempt(lambda: releases.update_host_now(ctx, zone, host))
    if failure is not None:
        messages.error(request, failure.message)
    elif update.applying:
        messages.success(
            request,
            f"Host {_host_label(zone, host)}: {update.outcome}. Its agent restarts into "
            f"{update.offered_version}, and rolls back if that does not answer.",
        )
    else:
        messages.info(request, f"Host {_host_label(zone, host)}: {update.outcome}.")
    return redirect("portal-admin:hosts")


# A halt's reason goes into the rollout's message.
MAX_HALT_REASON = 200


@admin_view
def rollout_halt(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """POST: stop the agent rollout where it is, with the admin's reason (its message says it)."""
    if refused := _post_only(request):
        return refused
    reason = request.POST.get("reason", "")[:MAX_HALT_REASON]
    _, failure = attempt(lambda: rollouts.halt_rollout(ctx, reason))
    said = "The agent rollout is halted: no further host gets its version."
    return back_to(request, failure, said, "portal-admin:hosts")


@admin_view
def rollout_resume(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """POST: go on with the halted agent rollout (the host that failed is excused)."""
    if refused := _post_only(request):
        return refused
    _, failure = attempt(lambda: rollouts.resume_rollout(ctx))
    return back_to(request, failure, "The agent rollout goes on.", "portal-admin:hosts")


@admin_view
def host_drain(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """GET: what a drain does, and a confirmation; POST: start it (it runs in the background)."""

    def drain() -> str:
        started = hosts.drain_host(ctx, zone, host)
        label = _host_label(zone, host)
        return f"Draining host {label}: {len(started.vms)} VM(s) to move. This page shows how it goes."

    consequence = (
        "The host is cordoned, then its VMs are migrated one after another (live when they run) to other "
        "hosts of the zone that have room. A VM that cannot move stays, with the reason."
    )
    return _host_action(request, ctx, zone, host, "drain", drain, consequence)


@admin_view
def host_remove(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """GET: what removing means, and a confirmation; POST: remove it (refused while VMs are on it)."""

    def remove() -> str:
        hosts.remove_host(ctx, zone, host)
        return f"Host {_host_label(zone, host)} was removed from flex.plane."

    consequence = (
        "flex.plane stops using the host and no longer dials its agent; Proxmox and the node are untouched. "
        "It is refused while VMs are on the host: drain it first."
    )
    return _host_action(request, ctx, zone, host, "remove", remove, consequence)


def _host_action(
    request: HttpRequest,
    ctx: Context,
    zone: str,
    host: str,
    verb: str,
    act: Callable[[], str],
    consequence: str,
) -> HttpResponseBase:
    """A host action asked for on a confirmation page (``verb``: drain, remove): GET says its
    ``consequence``; POST does it (``act``), then the hosts page says what it answered; a refusal is
    said on the same page."""
    hosts.drain_status(ctx, zone, host)  # NotFound: the 404 page
    failure = None
    if request.method == "POST":
        said, failure = attempt(act)
        if failure is None:
            messages.success(request, said)
            return redirect("portal-admin:hosts")
    return confirm(
        request,
        active="host",
        heading=f"{verb.capitalize()} host {_host_label(zone, host)}?",
        consequence=consequence,
        action=action(f"host.{verb}"),
        submit=f"{verb.capitalize()} host",
        cancel=reverse("portal-admin:hosts"),
        failure=failure,
    )


@admin_view
def join_token(request: HttpRequest, ctx: Context) -> HttpResponse:
    """A join token for a new host: shown once, with the command to run on its Proxmox node."""
    form = JoinTokenForm(
        posted(request),
        ctx=ctx,
        initial={"zone": request.GET.get("zone")},
    )
    created, failure = None, None
    if form.is_bound and form.is_valid():
        origin = request.build_absolute_uri("/")
        created, failure = attempt(
            lambda: enrollment.create_join_token(
                ctx, form.cleaned_data["zone"], form.cleaned_data["host"], origin
            ),
            form,
        )
    return admin_page(
        request,
        "portal/admin/join_token.html",
        {"form": form, "created": created, "action": action("host.join-token")},
        active="host",
        status=page_status(failure, form),
    )
