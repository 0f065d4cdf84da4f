"""The admin pages: the catalog (compute and storage profiles, images, zones), hosts and VDCs.

Every view is an ``admin_view``: anyone but ADMIN gets the 404 page, whatever the method, so the
area is hidden and refused server-side. The views call the same services as the GraphQL
mutations (``portal.admin.actions`` names which), in-process, and show what went wrong in words,
in place: a field's error next to the field, anything else at the top of the form or of the
confirmation. Destructive actions (delete, remove, drain) ask for a confirmation first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound, PermissionDenied, Unauthenticated, ValidationFailed
from orchestrator.models import StorageProfile
from orchestrator.services import catalog, enrollment, hosts, mesh, releases, vdcs
from orchestrator.services.context import Context
from portal.activity import trail as activity
from portal.admin.actions import action
from portal.admin.forms import (
    AdminForm,
    ComputeProfileForm,
    ImageForm,
    JoinTokenForm,
    StorageProfileForm,
    VdcForm,
    ZoneForm,
)
from portal.context import admin_view
from portal.errors import status_of
from portal.templatetags.sizes import size

# --------------------------------------------------------------------------------- the sections


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Any], object]


@dataclass(frozen=True)
class Section:
    """One kind of thing the admin lists, adds, edits and deletes, and the services that do it."""

    kind: str  # names its URLs and its actions: "compute-profile" -> compute-profile.create, ...
    slug: str  # its URL segment under admin/
    title: str
    noun: str
    form: type[AdminForm]
    read: Callable[[Context], Sequence[Any]]
    get: Callable[[Context, str], Any]
    create: Callable[[Context, Mapping[str, Any]], Any]
    update: Callable[[Context, str, Mapping[str, Any]], Any]
    delete: Callable[[Context, str], Any]
    ident: Callable[[Any], str]  # the id of a listed object
    columns: tuple[Column, ...]
    # What deleting one means, said on the confirmation page.
    on_delete: str
    # An offering VDCs allow (a profile, an image): its deletion removes it from them, and says so.
    offering: bool = False

    def url(self, what: str, *args: str) -> str:
        return reverse(f"portal-admin:{self.kind}-{what}", args=args)

    def action(self, what: str) -> str:
        return action(f"{self.kind}.{what}")


def _limits(p: StorageProfile) -> str:
    parts = [
        f"{label} {value}"
        for label, value in (
            ("read MiB/s", p.read_mbps),
            ("write MiB/s", p.write_mbps),
            ("read IOPS", p.read_iops),
            ("write IOPS", p.write_iops),
        )
        if value is not None
    ]
    return ", ".join(parts) or "none"


def _of(used: int, allowed: int, unit: str = "") -> str:
    """Used of allowed: sizes (``unit`` MiB or GiB) in binary units, counts as they are."""
    if unit:
        return f"{size(used, unit)} of {size(allowed, unit)}"
    return f"{used} of {allowed}"


SECTIONS: dict[str, Section] = {
    s.kind: s
    for s in (
        Section(
            kind="compute-profile",
            slug="compute-profiles",
            title="Compute profiles",
            noun="compute profile",
            form=ComputeProfileForm,
            read=catalog.list_compute_profiles,
            get=catalog.compute_profile,
            create=catalog.create_compute_profile,
            update=catalog.update_compute_profile,
            delete=catalog.delete_compute_profile,
            ident=lambda p: p.name,
            columns=(
                Column("Name", lambda p: p.name),
                Column("vCPUs", lambda p: p.vcpus),
                Column("Memory", lambda p: size(p.memory_mib, "MiB")),
                Column("CPU type", lambda p: p.cpu_type),
                Column("Description", lambda p: p.description),
            ),
            on_delete="It leaves the catalog: no new VM can use it. VMs made from it keep running, "
            "with their size.",
            offering=True,
        ),
        Section(
            kind="storage-profile",
            slug="storage-profiles",
            title="Storage profiles",
            noun="storage profile",
            form=StorageProfileForm,
            read=catalog.list_storage_profiles,
            get=catalog.storage_profile,
            create=catalog.create_storage_profile,
            update=catalog.update_storage_profile,
            delete=catalog.delete_storage_profile,
            ident=lambda p: p.name,
            columns=(
                Column("Name", lambda p: p.name),
                Column("Storages", lambda p: ", ".join(f"{z}: {s}" for z, s in p.storages.items())),
                Column(
                    "Disk sizes",
                    lambda p: (
                        f"{size(p.min_gb, 'GiB')} to {size(p.max_gb, 'GiB')} "
                        f"(default {size(p.default_gb, 'GiB')})"
                    ),
                ),
                Column("Bus / format", lambda p: f"{p.bus} / {p.format}"),
                Column("I/O limits", _limits),
            ),
            on_delete="It leaves the catalog: no new disk can use it. Existing disks are untouched.",
            offering=True,
        ),
        Section(
            kind="image",
            slug="images",
            title="Images",
            noun="image",
            form=ImageForm,
            read=catalog.list_images,
            get=catalog.image,
            create=catalog.create_image,
            update=catalog.update_image,
            delete=catalog.delete_image,
            ident=lambda i: i.name,
            columns=(
                Column("Name", lambda i: i.name),
                Column("OS", lambda i: i.os_family),
                Column("User", lambda i: i.default_user),
                Column("Smallest disk", lambda i: size(i.min_disk_gb, "GiB")),
                Column("Source", lambda i: i.source_url),
            ),
            on_delete="It leaves the catalog: no new VM can use it. VMs made from it keep running, and "
            "templates already on hosts stay there.",
            offering=True,
        ),
        Section(
            kind="zone",
            slug="zones",
            title="Zones",
            noun="zone",
            form=ZoneForm,
            read=catalog.list_zones,
            get=catalog.zone,
            create=catalog.create_zone,
            update=catalog.update_zone,
            delete=catalog.delete_zone,
            ident=lambda z: z.id,
            columns=(
                Column("Id", lambda z: z.id),
                Column("Name", lambda z: z.name),
                Column("Description", lambda z: z.description),
            ),
            on_delete="flex.plane stops using this Proxmox cluster. It is refused while the zone has "
            "hosts, or VDCs or storage profiles name it.",
        ),
        Section(
            kind="vdc",
            slug="vdcs",
            title="VDCs",
            noun="VDC",
            form=VdcForm,
            read=vdcs.list_vdcs,
            get=vdcs.get_vdc,
            create=vdcs.create_vdc,
            update=vdcs.update_vdc,
            delete=vdcs.delete_vdc,
            ident=lambda u: u.vdc.id,
            columns=(
                Column("Id", lambda u: u.vdc.id),
                Column("Name", lambda u: u.vdc.name),
                Column("Zones", lambda u: ", ".join(u.vdc.zones) or "none"),
                Column("VMs", lambda u: _of(u.usage.vms, u.vdc.quota_vms)),
                Column("vCPUs", lambda u: _of(u.usage.vcpus, u.vdc.quota_vcpus)),
                Column("Memory", lambda u: _of(u.usage.memory_mib, u.vdc.quota_memory_mib, "MiB")),
                Column("Disk", lambda u: _of(u.usage.disk_gb, u.vdc.quota_disk_gb, "GiB")),
            ),
            on_delete="Its Proxmox pool is deleted in each of its zones. It is refused while the VDC "
            "has VMs.",
        ),
    )
}

# --------------------------------------------------------------------------------------- helpers


def _page(
    request: HttpRequest, template: str, context: dict[str, Any], *, active: str, status: int = 200
) -> HttpResponse:
    """An admin page: the area's own navigation, with ``active`` marked as the current section."""
    nav = [(s.title, s.url("list"), s.kind == active) for s in SECTIONS.values()]
    nav.insert(4, ("Hosts", reverse("portal-admin:hosts"), active == "host"))
    nav.append(("Activity", reverse("activity"), active == "activity"))
    return render(request, template, {"admin_nav": nav, **context}, status=status)


# Errors a page shows in place; the rest (NotFound, PermissionDenied, Unauthenticated) are pages of their own.
_PAGE_ERRORS = (NotFound, PermissionDenied, Unauthenticated)


def _attempt(call: Callable[[], Any], form: AdminForm | None = None) -> tuple[Any, FlexPlaneError | None]:
    """Run a service call; a failure to show in place is returned, and put on ``form`` if given
    (a field's next to the field, any other at the form's top)."""
    try:
        with activity.action():  # the action's audit record (the operation is the URL's)
            return call(), None
    except _PAGE_ERRORS:
        raise
    except FlexPlaneError as exc:
        if form is not None and isinstance(exc, ValidationFailed):
            form.show_error(exc)
        elif form is not None:
            form.add_error(None, exc.message)
        return None, exc


def _status(failure: FlexPlaneError | None, form: AdminForm | None = None) -> int:
    if failure is not None:
        return status_of(failure)[0]
    return 400 if form is not None and form.is_bound and form.errors else 200


def _offered(form: AdminForm) -> str:
    """Where a new offering is offered, said after it was added (nothing for other kinds)."""
    if catalog.ALLOW_IN_VDCS not in form.fields:
        return ""
    vdcs = form.cleaned_data.get(catalog.ALLOW_IN_VDCS) or []
    if not vdcs:
        return " No VDC offers it yet: allow it in a VDC to offer it there."
    return f" VDC(s) {', '.join(vdcs)} offer it."


def _post_only(request: HttpRequest) -> HttpResponseNotAllowed | None:
    return None if request.method == "POST" else HttpResponseNotAllowed(["POST"])


# ------------------------------------------------------------------------------------------ pages


@admin_view
def index(request: HttpRequest, ctx: Context) -> HttpResponse:
    """The admin area's start: each section with how many it holds (the catalog: one read)."""
    counts = {
        "compute-profile": len(catalog.list_compute_profiles(ctx)),
        "storage-profile": len(catalog.list_storage_profiles(ctx)),
        "image": len(catalog.list_images(ctx)),
        "zone": len(catalog.list_zones(ctx)),
        "vdc": len(vdcs.visible_vdcs(ctx)),
    }
    cards = [(s.title, s.url("list"), counts[s.kind], s.noun) for s in SECTIONS.values()]
    cards.insert(4, ("Hosts", reverse("portal-admin:hosts"), len(catalog.list_hosts(ctx)), "host"))
    return _page(request, "portal/admin/index.html", {"cards": cards}, active="")


@admin_view
def section_list(request: HttpRequest, ctx: Context, kind: str) -> HttpResponse:
    section = SECTIONS[kind]
    rows = [
        {
            "ident": section.ident(obj),
            "cells": [(column.header, column.value(obj)) for column in section.columns],
            "edit": section.url("edit", section.ident(obj)),
            "delete": section.url("delete", section.ident(obj)),
        }
        for obj in section.read(ctx)
    ]
    return _page(
        request,
        "portal/admin/list.html",
        {"section": section, "headers": [c.header for c in section.columns], "rows": rows},
        active=kind,
    )


@admin_view
def section_create(request: HttpRequest, ctx: Context, kind: str) -> HttpResponseBase:
    section = SECTIONS[kind]
    form = section.form(request.POST if request.method == "POST" else None, ctx=ctx)
    failure = None
    if form.is_bound and form.is_valid():
        _, failure = _attempt(lambda: section.create(ctx, form.to_data()), form)
        if failure is None:
            ident = form.cleaned_data[section.form.key_fields[0]]
            messages.success(request, f"The {section.noun} {ident!r} was added.{_offered(form)}")
            return redirect(section.url("list"))
    return _page(
        request,
        "portal/admin/form.html",
        {
            "section": section,
            "form": form,
            "heading": f"Add a {section.noun}",
            "action": section.action("create"),
            "submit": f"Add {section.noun}",
        },
        active=kind,
        status=_status(failure, form),
    )


@admin_view
def section_edit(request: HttpRequest, ctx: Context, kind: str, ident: str) -> HttpResponseBase:
    section = SECTIONS[kind]
    current = section.get(ctx, ident)  # NotFound: the 404 page
    form = section.form(
        request.POST if request.method == "POST" else None,
        ctx=ctx,
        editing=True,
        initial=section.form.initial_from(current),
    )
    failure = None
    if form.is_bound and form.is_valid():
        _, failure = _attempt(lambda: section.update(ctx, ident, form.to_data()), form)
        if failure is None:
            messages.success(request, f"The {section.noun} {ident!r} was saved.")
            return redirect(section.url("list"))
    return _page(
        request,
        "portal/admin/form.html",
        {
            "section": section,
            "form": form,
            "heading": f"Edit {section.noun} {ident}",
            "action": section.action("update"),
            "submit": "Save changes",
            "delete_url": section.url("delete", ident),
        },
        active=kind,
        status=_status(failure, form),
    )


@admin_view
def section_delete(request: HttpRequest, ctx: Context, kind: str, ident: str) -> HttpResponseBase:
    """GET: what deleting means, and a confirmation; POST: delete (refusals are shown on the same page)."""
    section = SECTIONS[kind]
    section.get(ctx, ident)  # NotFound: the 404 page
    failure = None
    if request.method == "POST":
        deleted, failure = _attempt(lambda: section.delete(ctx, ident))
        if failure is None:
            removed = getattr(deleted, "vdcs", [])
            also = f" VDC(s) {', '.join(removed)} no longer offer it." if removed else ""
            messages.success(request, f"The {section.noun} {ident!r} was deleted.{also}")
            return redirect(section.url("list"))
    consequence = section.on_delete
    if section.offering:
        allowing = catalog.allowed_in(ctx, kind, ident)
        consequence += (
            f" VDC(s) {', '.join(allowing)} allow it: it is removed from them."
            if allowing
            else " No VDC allows it."
        )
    return _confirm(
        request,
        active=kind,
        heading=f"Delete {section.noun} {ident}?",
        consequence=consequence,
        action=section.action("delete"),
        submit=f"Delete {section.noun}",
        cancel=section.url("list"),
        failure=failure,
    )


def _confirm(
    request: HttpRequest,
    *,
    active: str,
    heading: str,
    consequence: str,
    action: str,
    submit: str,
    cancel: str,
    failure: FlexPlaneError | None,
) -> HttpResponse:
    return _page(
        request,
        "portal/admin/confirm.html",
        {
            "heading": heading,
            "consequence": consequence,
            "action": action,
            "submit": submit,
            "cancel": cancel,
            "failure": failure,
        },
        active=active,
        status=_status(failure),
    )


# ------------------------------------------------------------------------------------------ hosts


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
            drain.node,
            drain.status,
            states.count(hosts.MOVED),
            states.count(hosts.VM_FAILED),
            len(states),
            drain.message,
        )


# While a drain runs, the hosts page reads its drains again this often (an htmx poll of the fragment
# ``_drains.html``, which stops once none runs).
DRAIN_POLL = "every 2s"


@admin_view
def host_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """Every host by zone: online, agent and Proxmox versions, certificate expiry, cordon and drain.

    As the ``drains`` fragment (htmx, target ``drains``): only the drains, each swapped into its host's
    cell, and the poll that asks again while any runs."""
    if getattr(request, "htmx", False) and request.htmx.target == "drains":  # type: ignore[attr-defined]  # django-htmx
        followed = [DrainCell.of(d) for d in hosts.drains(ctx)]
        context = {"drains": followed, "polling": any(c.running for c in followed), "poll": DRAIN_POLL}
        return render(request, "portal/admin/_drains.html", context)
    details = hosts.host_details(ctx)
    cells = {d.host.key: DrainCell.of(d.drain) for d in details if d.drain is not None}
    by_zone = [
        (
            zone,
            [
                (d, cells.get(d.host.key), mesh.peer_of_host(ctx, d.host.zone, d.host.node))
                for d in details
                if d.host.zone == zone.id
            ],
        )
        for zone in catalog.list_zones(ctx)
    ]
    return _page(
        request,
        "portal/admin/hosts.html",
        {
            "zones": by_zone,
            "tokens": enrollment.list_join_tokens(ctx),
            "cordon": action("host.cordon"),
            "uncordon": action("host.uncordon"),
            "update_now": action("host.update-now"),
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
    _, failure = _attempt(lambda: hosts.uncordon_host(ctx, zone, host))
    if failure is None:
        messages.success(request, f"Host {_host_label(zone, host)} takes new VMs again.")
    else:
        messages.error(request, failure.message)
    return redirect("portal-admin:hosts")


@admin_view
def host_update_now(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """POST: the host's agent checks the release channel now (its own updater, its own rules)."""
    if refused := _post_only(request):
        return refused
    update, failure = _attempt(lambda: releases.update_host_now(ctx, zone, host))
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


@admin_view
def host_drain(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """GET: what a drain does, and a confirmation; POST: start it (it runs in the background)."""
    hosts.drain_status(ctx, zone, host)  # NotFound: the 404 page
    failure = None
    if request.method == "POST":
        drain, failure = _attempt(lambda: hosts.drain_host(ctx, zone, host))
        if failure is None:
            messages.success(
                request,
                f"Draining host {_host_label(zone, host)}: {len(drain.vms)} VM(s) to move. "
                "This page shows how it goes.",
            )
            return redirect("portal-admin:hosts")
    return _confirm(
        request,
        active="host",
        heading=f"Drain host {_host_label(zone, host)}?",
        consequence="The host is cordoned, then its VMs are migrated one after another (live when they "
        "run) to other hosts of the zone that have room. A VM that cannot move stays, with the reason.",
        action=action("host.drain"),
        submit="Drain host",
        cancel=reverse("portal-admin:hosts"),
        failure=failure,
    )


@admin_view
def host_remove(request: HttpRequest, ctx: Context, zone: str, host: str) -> HttpResponseBase:
    """GET: what removing means, and a confirmation; POST: remove it (refused while VMs are on it)."""
    hosts.drain_status(ctx, zone, host)  # NotFound: the 404 page
    failure = None
    if request.method == "POST":
        _, failure = _attempt(lambda: hosts.remove_host(ctx, zone, host))
        if failure is None:
            messages.success(request, f"Host {_host_label(zone, host)} was removed from flex.plane.")
            return redirect("portal-admin:hosts")
    return _confirm(
        request,
        active="host",
        heading=f"Remove host {_host_label(zone, host)}?",
        consequence="flex.plane stops using the host and no longer dials its agent; Proxmox and the node "
        "are untouched. It is refused while VMs are on the host: drain it first.",
        action=action("host.remove"),
        submit="Remove host",
        cancel=reverse("portal-admin:hosts"),
        failure=failure,
    )


@admin_view
def join_token(request: HttpRequest, ctx: Context) -> HttpResponse:
    """A join token for a new host: shown once, with the command to run on its Proxmox node."""
    form = JoinTokenForm(
        request.POST if request.method == "POST" else None,
        ctx=ctx,
        initial={"zone": request.GET.get("zone")},
    )
    created, failure = None, None
    if form.is_bound and form.is_valid():
        origin = request.build_absolute_uri("/")
        created, failure = _attempt(
            lambda: enrollment.create_join_token(
                ctx, form.cleaned_data["zone"], form.cleaned_data["host"], origin
            ),
            form,
        )
    return _page(
        request,
        "portal/admin/join_token.html",
        {"form": form, "created": created, "action": action("host.join-token")},
        active="host",
        status=_status(failure, form),
    )
