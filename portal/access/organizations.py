"""The Access section's organization pages: allowances (ADMIN gives them), and an organization's VDCs (its
ORG_OWNERs create, change and delete them within the allowance). The same services as the GraphQL mutations;
what went wrong is said in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render

from orchestrator.errors import FlexPlaneError, NotFound, QuotaExceeded
from orchestrator.models import Vdc
from orchestrator.services import access, catalog, organizations, vdcs
from orchestrator.services.context import Context
from orchestrator.services.organizations import Allowance
from portal.access.actions import action
from portal.access.forms import AllowanceForm, OrganizationVdcForm
from portal.access.views import access_view, post_only
from portal.admin.forms import AdminForm
from portal.admin.pages import page_status
from portal.forms import posted, show_error
from portal.perform import attempt


def _attempt(call: Callable[[], object], form: AdminForm | None = None) -> FlexPlaneError | None:
    failure = attempt(call)
    if (
        failure is not None and form is not None
    ):  # a quota next to each one the refusal names (``quota.vcpus``)
        quota = [form.form_field(f) for f in failure.fields] if isinstance(failure, QuotaExceeded) else []
        show_error(form, failure, form.form_field, quota=quota)
    return failure


@access_view
def organizations_page(request: HttpRequest, ctx: Context) -> HttpResponse:
    """GET: the organizations with an allowance the caller sees, what their VDCs take of it, their VDCs."""
    listed = organizations.list_allowances(ctx)
    context = {
        "listed": listed,
        "is_admin": ctx.principal.is_admin,
        "delete_action": action("access.vdc-delete"),
        "allowance_delete_action": action("access.allowance-delete"),
    }
    return render(request, "portal/access/organizations.html", context)


@access_view
def allowance_page(request: HttpRequest, ctx: Context, org: str | None = None) -> HttpResponseBase:
    """GET: the allowance form (new, or of ``org``); POST: give or change it (ADMIN)."""
    if not ctx.principal.is_admin:
        raise NotFound("page", request.path)
    initial = _allowance_of(ctx, org) if org else {}
    data = posted(request)
    form = AllowanceForm(data, ctx=ctx, editing=org is not None, initial=initial)
    failure = None
    if form.is_bound and form.is_valid():
        ident = org or form.cleaned_data["organization"]
        failure = _attempt(lambda: organizations.set_allowance(ctx, ident, form.to_data()), form)
        if failure is None:
            messages.success(request, f"Organization {ident} has its allowance.")
            return redirect("portal-access:organizations")
    context = {
        "form": form,
        "heading": f"Allowance of organization {org}" if org else "Give an organization an allowance",
        "action": action("access.allowance"),
    }
    return render(request, "portal/access/form.html", context, status=page_status(failure, form))


def _allowance_of(ctx: Context, org: str) -> dict[str, Any]:
    """The form's initial values: the organization's allowance, or none yet (the form gives one)."""
    try:
        return AllowanceForm.of(organizations.get_allowance(ctx, org))
    except NotFound:
        return {"organization": organizations.organization_id(org)}


@access_view
def allowance_delete(request: HttpRequest, ctx: Context, org: str) -> HttpResponseBase:
    """POST: take the organization's allowance away (ADMIN; refused while it has VDCs)."""
    if refused := post_only(request):
        return refused
    failure = _attempt(lambda: organizations.delete_allowance(ctx, org))
    if failure is None:
        messages.success(request, f"Organization {org} has no allowance any more.")
    else:
        messages.error(request, failure.message)
    return redirect("portal-access:organizations")


@access_view
def vdc_create(request: HttpRequest, ctx: Context, org: str) -> HttpResponseBase:
    """GET: a new VDC's form, offering what the allowance allows; POST: create it within the allowance."""
    if not access.manages_organization(ctx, organizations.organization_id(org)):
        raise NotFound("organization", org)  # another organization's: the 404 page, as a missing one's
    try:
        allowance = organizations.get_allowance(ctx, org)
    except NotFound:
        allowance = Allowance(org, org)  # none yet: nothing is offered, and the create says why
    data = posted(request)
    form = OrganizationVdcForm(data, ctx=ctx, allowance=allowance)
    failure = None
    if form.is_bound and form.is_valid():
        failure = _attempt(lambda: vdcs.create_vdc(ctx, {**form.to_data(), "organization": org}), form)
        if failure is None:
            messages.success(request, f"VDC {form.cleaned_data['id']} was made in organization {org}.")
            return redirect("portal-access:organizations")
    context = {
        "form": form,
        "heading": f"New VDC of organization {org}",
        "action": action("access.vdc-create"),
    }
    return render(request, "portal/access/form.html", context, status=page_status(failure, form))


@access_view
def vdc_edit(request: HttpRequest, ctx: Context, org: str, vdc: str) -> HttpResponseBase:
    """GET: a VDC of the organization's form, each quota with the allowance's limit; POST: change it within
    the allowance, as ``updateVdc`` does. Another organization's VDC: the 404 page, as a missing one's."""
    found = organizations.organization_vdc(ctx, org, vdc)
    data = posted(request)
    initial = OrganizationVdcForm.initial_from(found.vdc)
    form = OrganizationVdcForm(
        data, ctx=ctx, allowance=found.usage.allowance, usage=found.usage, editing=True, initial=initial
    )
    failure = None
    if form.is_bound and form.is_valid():
        failure = _attempt(lambda: vdcs.update_vdc(ctx, vdc, form.to_data()), form)
        if failure is None:
            messages.success(request, f"VDC {vdc} of organization {org} was changed.")
            return redirect("portal-access:organizations")
    context = {
        "form": form,
        "heading": f"VDC {vdc} of organization {org}",
        "action": action("access.vdc-update"),
    }
    return render(request, "portal/access/form.html", context, status=page_status(failure, form))


@access_view
def vdc_delete(request: HttpRequest, ctx: Context, org: str, vdc: str) -> HttpResponseBase:
    """POST: delete a VDC of the organization (refused while it has VMs)."""
    if refused := post_only(request):
        return refused
    owned = {v.id for v in catalog.objects(ctx, catalog.VDC, Vdc.from_spec) if v.organization == org}
    if vdc not in owned:
        raise NotFound("VDC", vdc)
    failure = _attempt(lambda: vdcs.delete_vdc(ctx, vdc))
    if failure is None:
        messages.success(request, f"VDC {vdc} was deleted.")
    else:
        messages.error(request, failure.message)
    return redirect("portal-access:organizations")
