"""The service-account pages of a VDC: thin adapters over the services the GraphQL API's field and
mutations call (``services.service_accounts``: ``serviceAccounts``, ``createServiceAccount``,
``revokeServiceAccount``; :mod:`portal.service_accounts.actions`).

Who may: a member of the VDC holding USER, or ADMIN (the service says so; anyone else gets the 404 page,
as for a VDC they may not see). The key is answered once, by the create form's POST: the page shows it,
and it is kept nowhere (not in the session, not in a message; the answer is ``no-store``), so that a
second look at any page never shows it again. An account of another VDC answers as a missing one.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.models import Vdc
from orchestrator.services import people, service_accounts, vdcs
from orchestrator.services.context import Context
from orchestrator.services.service_accounts import CreatedServiceAccount, ServiceAccount
from portal.context import vdc_view
from portal.forms import posted
from portal.perform import confirmation, perform
from portal.service_accounts import actions
from portal.service_accounts.forms import ServiceAccountForm


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _list_url(vdc: str) -> str:
    return reverse("service-account-list", args=[vdc])


def _accounts(ctx: Context) -> list[ServiceAccount]:
    """The page's VDC's accounts (one Zitadel call), by name."""
    return sorted(service_accounts.service_accounts(ctx, ctx.vdc), key=lambda a: a.name)


def _account(ctx: Context, name: str) -> ServiceAccount:
    """One account of the page's VDC, by name; another VDC's is ``NotFound`` as a missing one."""
    for account in _accounts(ctx):
        if account.name == name:
            return account
    raise NotFound("service account", name)


@vdc_view
def account_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/service-accounts/``: the VDC's service accounts (never a key), who made each by name."""
    found = _accounts(ctx)
    creators = people.people(ctx, [a.created_by for a in found])  # one Zitadel call for them all
    rows = [(a, creators.get(a.created_by)) for a in found]
    context = {"vdc": _vdc(ctx), "accounts": rows}
    return render(request, "portal/service_accounts/list.html", context)


@vdc_view
def account_create(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """``createServiceAccount`` as a form; on success, this page with the key, this once. Every answer is
    ``no-store``: the one with the key must not be kept by the browser or a proxy."""
    vdc = _vdc(ctx)
    form = ServiceAccountForm(posted(request))
    created: CreatedServiceAccount | None = None
    if form.is_bound and form.is_valid():
        name = form.cleaned_data["name"].strip()
        made = perform(
            lambda: service_accounts.create_service_account(ctx, vdc.id, name, form.expires_at()),
            ctx=ctx,
            operation=actions.CREATE.mutation,
            name=name,
        )
        if isinstance(made, FlexPlaneError):
            form.show_error(made)
        else:
            created, form = made, ServiceAccountForm()
    context = {"vdc": vdc, "form": form, "created": created, "create": actions.CREATE}
    response = render(request, "portal/service_accounts/new.html", context)
    response["Cache-Control"] = "no-store"
    return response


@vdc_view
def account_revoke(request: HttpRequest, ctx: Context, name: str) -> HttpResponse:
    """GET: what revoking means, and a confirmation; POST (confirmed): ``revokeServiceAccount``, then the
    list without it. A refusal is said on the same page."""
    vdc = _vdc(ctx)
    found = _account(ctx, name)  # NotFound: the 404 page
    return confirmation(
        request,
        ctx,
        actions.REVOKE,
        lambda: service_accounts.revoke_service_account(ctx, found.id),
        page="portal/service_accounts/revoke.html",
        context={"vdc": vdc, "account": found},
        said=f"Service account {found.name} was revoked: its key gives no new token.",
        then=_list_url(vdc.id),
        id=found.id,
        name=found.name,
    )
