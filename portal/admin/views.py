"""The admin pages of the catalog and VDCs: the area's start, and each section's list, add, edit, delete.

Every view is an ``admin_view``: anyone but ADMIN gets the 404 page, whatever the method, so the
area is hidden and refused server-side. The views call the same services as the GraphQL
mutations (``portal.admin.actions`` names which), in-process, and show what went wrong in words,
in place: a field's error next to the field, anything else at the top of the form or of the
confirmation. Destructive actions (delete, remove, drain) ask for a confirmation first. The
sections are declared in :mod:`portal.admin.sections`; the hosts' pages are :mod:`portal.admin.hosts`.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse

from orchestrator.services import catalog, image_cache, organizations, vdcs
from orchestrator.services.context import Context
from portal.admin.forms import AdminForm
from portal.admin.pages import ORGANIZATIONS, admin_page, attempt, confirm, page_status
from portal.admin.sections import SECTIONS, Section
from portal.context import admin_view
from portal.forms import posted


def _offered(form: AdminForm) -> str:
    """Where a new offering is offered, said after it was added (nothing for other kinds)."""
    if catalog.ALLOW_IN_VDCS not in form.fields:
        return ""
    vdcs = form.cleaned_data.get(catalog.ALLOW_IN_VDCS) or []
    if not vdcs:
        return " No VDC offers it yet: allow it in a VDC to offer it there."
    return f" VDC(s) {', '.join(vdcs)} offer it."


def _caching(result: object) -> str:
    """Where publishing an image started caching it, said after it was added or saved (nothing for other
    kinds, nor for a change that caches nothing)."""
    return image_cache.summary(result.caching) if isinstance(result, image_cache.Published) else ""


@admin_view
def index(request: HttpRequest, ctx: Context) -> HttpResponse:
    """The admin area's start: each section with how many it holds (the catalog: one read; the
    organizations with an allowance: one more)."""
    counts = {
        "compute-profile": len(catalog.list_compute_profiles(ctx)),
        "storage-profile": len(catalog.list_storage_profiles(ctx)),
        "image": len(catalog.list_images(ctx)),
        "zone": len(catalog.list_zones(ctx)),
        "vdc": len(vdcs.visible_vdcs(ctx)),
        "kubernetes-version": len(catalog.list_kubernetes_versions(ctx)),
    }
    cards = [(s.title, s.url("list"), counts[s.kind], s.noun) for s in SECTIONS.values()]
    cards.insert(4, ("Hosts", reverse("portal-admin:hosts"), len(catalog.list_hosts(ctx)), "host"))
    after_vdcs = [card[0] for card in cards].index(SECTIONS["vdc"].title) + 1
    allowed = len(organizations.list_allowances(ctx))
    cards.insert(after_vdcs, (ORGANIZATIONS[0], reverse(ORGANIZATIONS[1]), allowed, "organization"))
    return admin_page(request, "portal/admin/index.html", {"cards": cards}, active="")


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
    return admin_page(
        request,
        "portal/admin/list.html",
        {"section": section, "headers": [c.header for c in section.columns], "rows": rows},
        active=kind,
    )


def _form_page(
    request: HttpRequest, section: Section, form: AdminForm, change: Callable[[], str], shown: dict[str, str]
) -> HttpResponseBase:
    """A section's form (to add an object, or edit one): a valid POST makes the ``change`` (a refusal is
    shown on the form), then the section's list says what it answered; otherwise the form, with ``shown``:
    its heading, action and submit."""
    failure = None
    if form.is_bound and form.is_valid():
        said, failure = attempt(change, form)
        if failure is None:
            messages.success(request, said)
            return redirect(section.url("list"))
    return admin_page(
        request,
        "portal/admin/form.html",
        {"section": section, "form": form, **shown},
        active=section.kind,
        status=page_status(failure, form),
    )


@admin_view
def section_create(request: HttpRequest, ctx: Context, kind: str) -> HttpResponseBase:
    section = SECTIONS[kind]
    form = section.form(posted(request), ctx=ctx)

    def create() -> str:
        created = section.create(ctx, form.to_data())
        ident = form.cleaned_data[section.form.key_fields[0]]
        return f"The {section.noun} {ident!r} was added.{_offered(form)}{_caching(created)}"

    shown = {
        "heading": f"Add a {section.noun}",
        "action": section.action("create"),
        "submit": f"Add {section.noun}",
    }
    return _form_page(request, section, form, create, shown)


@admin_view
def section_edit(request: HttpRequest, ctx: Context, kind: str, ident: str) -> HttpResponseBase:
    section = SECTIONS[kind]
    current = section.get(ctx, ident)  # NotFound: the 404 page
    form = section.form(posted(request), ctx=ctx, editing=True, initial=section.form.initial_from(current))

    def update() -> str:
        saved = section.update(ctx, ident, form.to_data())
        return f"The {section.noun} {ident!r} was saved.{_caching(saved)}"

    shown = {
        "heading": f"Edit {section.noun} {ident}",
        "action": section.action("update"),
        "submit": "Save changes",
        "delete_url": section.url("delete", ident),
    }
    return _form_page(request, section, form, update, shown)


@admin_view
def section_delete(request: HttpRequest, ctx: Context, kind: str, ident: str) -> HttpResponseBase:
    """GET: what deleting means, and a confirmation; POST: delete (refusals are shown on the same page)."""
    section = SECTIONS[kind]
    section.get(ctx, ident)  # NotFound: the 404 page
    failure = None
    if request.method == "POST":
        deleted, failure = attempt(lambda: section.delete(ctx, ident))
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
    consequence += " This cannot be undone."
    return confirm(
        request,
        active=kind,
        heading=f"Delete {section.noun} {ident}?",
        consequence=consequence,
        action=section.action("delete"),
        submit=f"Delete {section.noun}",
        cancel=section.url("list"),
        failure=failure,
    )
