"""The Access section's organization pages: allowances (ADMIN gives them), and an organization's VDCs (its
ORG_OWNERs create, change and delete them within the allowance). The same services as the GraphQL mutations;
what went wrong is said in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound, QuotaExceeded
from orchestrator.models import Usage, Vdc
from orchestrator.services import access, catalog, organizations, vdcs
from orchestrator.services.access_admin import memberships, users
from orchestrator.services.context import Context
from orchestrator.services.organizations import Allowance, AllowanceUsage
from orchestrator.services.people import organization_name
from portal.access.actions import action, performed
from portal.access.allowances import limits
from portal.access.forms import AllowanceForm, OrganizationVdcForm
from portal.access.views import access_view
from portal.admin.forms import AdminForm
from portal.admin.pages import page_status
from portal.forms import posted, show_error
from portal.perform import confirmation, perform

ORGANIZATIONS = "portal-access:organizations"


def _shown(failure: FlexPlaneError, form: AdminForm) -> FlexPlaneError:
    """The refusal, said once on the form: next to its field, or next to the first quota it names
    (``quota.vcpus``; its words name every quota over)."""
    named = [form.form_field(f) for f in failure.fields] if isinstance(failure, QuotaExceeded) else []
    show_error(form, failure, form.form_field, quota=[f for f in named if f][:1])
    return failure


def _form_page(
    request: HttpRequest,
    form: AdminForm,
    change: Callable[[], str],
    heading: str,
    name: str,
    notice: str = "",
) -> HttpResponseBase:
    """The form of an allowance or a VDC: a valid POST makes the ``change`` (a refusal is said on the form),
    then the organizations page says what it answered; otherwise the form, under ``heading``, for the
    action ``name``, with the ``notice`` above it (what the form cannot do, before it is filled in)."""
    failure = None
    if form.is_bound and form.is_valid():
        said = perform(change)
        if not isinstance(said, FlexPlaneError):
            messages.success(request, said)
            return redirect(ORGANIZATIONS)
        failure = _shown(said, form)
    context = {"form": form, "heading": heading, "action": action(name), "notice": notice}
    return render(request, "portal/access/form.html", context, status=page_status(failure, form))


@access_view
def organizations_page(request: HttpRequest, ctx: Context) -> HttpResponse:
    """GET: the organizations with an allowance the caller sees, each quota of it with what their VDCs
    have of it and what is left, their VDCs."""
    listed = [(item, limits(item)) for item in organizations.list_allowances(ctx)]
    context = {"listed": listed, "is_admin": ctx.principal.is_admin}
    return render(request, "portal/access/organizations.html", context)


@access_view
def allowance_page(request: HttpRequest, ctx: Context, org: str | None = None) -> HttpResponseBase:
    """GET: the allowance form (new, or of ``org``); POST: give or change it (ADMIN)."""
    if not ctx.principal.is_admin:
        raise NotFound("page", request.path)
    initial, name = _allowance_of(ctx, org) if org else ({}, "")
    data = posted(request)
    form = AllowanceForm(data, ctx=ctx, editing=org is not None, initial=initial)

    def give() -> str:
        ident = org or form.cleaned_data["organization"]
        given = organizations.set_allowance(ctx, ident, form.to_data()).allowance
        return f"Organization {organizations.named(given)} has its allowance."

    heading = (
        f"Allowance of organization {organization_name(ctx, org, name)}"
        if org
        else "Give an organization an allowance"
    )
    return _form_page(request, form, give, heading, "access.allowance")


def _usage_of(ctx: Context, org: str) -> AllowanceUsage | None:
    """The organization's allowance with what its VDCs have of it; None when it has none."""
    return next((u for u in organizations.list_allowances(ctx) if u.allowance.organization == org), None)


def _allowance_of(ctx: Context, org: str) -> tuple[dict[str, Any], str]:
    """The form's initial values: the organization's allowance, or none yet (the form gives one); and the
    organization's name, as the allowance keeps it ("" without one)."""
    try:
        allowance = organizations.get_allowance(ctx, org)
    except NotFound:
        return {"organization": organizations.organization_id(org)}, ""
    return AllowanceForm.of(allowance), allowance.name


@access_view
def allowance_delete(request: HttpRequest, ctx: Context, org: str) -> HttpResponseBase:
    """GET: the organization's allowance, what taking it away means, and a confirmation; POST (confirmed):
    ``deleteOrganizationAllowance`` (ADMIN; refused while it has VDCs, said on the same page)."""
    if not ctx.principal.is_admin:
        raise NotFound("page", request.path)
    allowance = organizations.get_allowance(ctx, org)  # none: the 404 page
    held = [
        v.id
        for v in catalog.objects(ctx, catalog.VDC, Vdc.from_spec)
        if v.organization == allowance.organization
    ]
    return confirmation(
        request,
        ctx,
        performed("access.allowance-delete"),
        lambda: organizations.delete_allowance(ctx, org),
        page="portal/access/allowance_delete.html",
        context={
            "allowance": allowance,
            "held_vdcs": held,
            "delete_action": action("access.allowance-delete"),
        },
        said=f"Organization {allowance.name} ({allowance.organization}) has no allowance any more.",
        then=reverse(ORGANIZATIONS),
        org=allowance.organization,
    )


@access_view
def vdc_create(request: HttpRequest, ctx: Context, org: str) -> HttpResponseBase:
    """GET: a new VDC's form, offering what the allowance allows, each quota with what is left of it and
    starting inside it; POST: create it within the allowance."""
    if not access.manages_organization(ctx, organizations.organization_id(org)):
        raise NotFound("organization", org)  # another organization's: the 404 page, as a missing one's
    usage = _usage_of(ctx, org)
    # None yet: nothing is offered, and the create says why.
    allowance = usage.allowance if usage else Allowance(org, organization_name(ctx, org))
    data = posted(request)
    form = OrganizationVdcForm(data, ctx=ctx, allowance=allowance, usage=usage)
    name = allowance.name or org

    def create() -> str:
        vdcs.create_vdc(ctx, {**form.to_data(), "organization": org})
        return f"VDC {form.cleaned_data['id']} was made in organization {name}."

    notice = "" if usage else f"Organization {name} has no allowance yet: an admin gives it one first."
    return _form_page(request, form, create, f"New VDC of organization {name}", "access.vdc-create", notice)


@access_view
def vdc_edit(request: HttpRequest, ctx: Context, org: str, vdc: str) -> HttpResponseBase:
    """GET: a VDC of the organization's form, each quota with what is left for it; POST: change it within
    the allowance, as ``updateVdc`` does. Another organization's VDC: the 404 page, as a missing one's."""
    found = organizations.organization_vdc(ctx, org, vdc)
    data = posted(request)
    initial = OrganizationVdcForm.initial_from(found.vdc)
    form = OrganizationVdcForm(
        data,
        ctx=ctx,
        allowance=found.usage.allowance,
        usage=found.usage,
        replacing=found.vdc.quota,
        editing=True,
        initial=initial,
    )

    name = found.usage.allowance.name or org

    def update() -> str:
        vdcs.update_vdc(ctx, vdc, form.to_data())
        return f"VDC {vdc} of organization {name} was changed."

    return _form_page(request, form, update, f"VDC {vdc} of organization {name}", "access.vdc-update")


def _held(ctx: Context, vdc: str) -> tuple[Usage | None, list[users.UserAccess] | None, list[str]]:
    """What a VDC holds now (its VMs, networks and public IPs) and its members, for its deletion to name;
    what cannot be read is left out (None), and why is said."""
    held: Usage | None = None
    members: list[users.UserAccess] | None = None
    unread: list[str] = []
    try:
        held = vdcs.usage(ctx, vdc)
    except FlexPlaneError as exc:
        unread.append(exc.message)
    try:
        members = memberships.vdc_members(ctx, vdc)
    except FlexPlaneError as exc:
        unread.append(exc.message)
    return held, members, unread


@access_view
def vdc_delete(request: HttpRequest, ctx: Context, org: str, vdc: str) -> HttpResponseBase:
    """GET: the VDC of the organization, what it holds, who loses access, and a confirmation; POST
    (confirmed): ``deleteVdc`` (refused while it has VMs, said on the same page). Another organization's
    VDC: the 404 page, as a missing one's."""
    found = organizations.organization_vdc(ctx, org, vdc)
    held, members, unread = _held(ctx, vdc)
    context = {
        "org": org,
        "organization": found.usage.allowance,
        "vdc": found.vdc,
        "held": held,
        "members": members,
        "unread": unread,
        "delete_action": action("access.vdc-delete"),
    }
    return confirmation(
        request,
        ctx,
        performed("access.vdc-delete"),
        lambda: vdcs.delete_vdc(ctx, vdc),
        page="portal/access/vdc_delete.html",
        context=context,
        said=f"VDC {vdc} was deleted.",
        then=reverse(ORGANIZATIONS),
        vdc=vdc,
    )
