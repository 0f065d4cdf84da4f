"""The Access pages: find users, see and change their VDC memberships and platform roles, a VDC's members.

For ADMIN (every user and VDC) and ORG_OWNERs (their organizations' users and VDCs); anyone else gets
the 404 page, as for a page that does not exist. The views call the same services as the GraphQL
mutations (``portal.access.actions`` names which) and say what went wrong in words, in place. Every
page says that a change takes effect with the user's next token.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.services.access_admin import memberships, users
from orchestrator.services.context import Context
from portal.access.actions import action, performed
from portal.access.forms import GrantForm, RolesForm, SearchForm
from portal.context import View, Wrapped, portal_view
from portal.errors import PAGE_ERRORS
from portal.htmx import HtmxHttpRequest
from portal.perform import attempt, back_to, confirmation, perform

TAKES_EFFECT = (
    "Changes take effect with the user's next token: when they sign in again, or when their session is "
    "renewed. Tokens already issued keep the roles they carry until they expire."
)


def access_view(view: View[Any]) -> Wrapped:
    """A page of the Access section: ADMIN or ORG_OWNER; anyone else gets the 404 page."""

    @functools.wraps(view)
    def guarded(request: HtmxHttpRequest, ctx: Context, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not (ctx.principal.is_admin or ctx.principal.is_org_owner):
            raise NotFound("page", request.path)
        return view(request, ctx, *args, **kwargs)

    return portal_view(guarded)


@access_view
def users_page(request: HttpRequest, ctx: Context) -> HttpResponse:
    """GET: the search form and, once searched, the users found with their roles and VDCs."""
    form = SearchForm(request.GET if "search" in request.GET else None)
    found: list[users.UserAccess] | None = None
    failure = None
    if form.is_bound and form.is_valid():
        try:
            found = users.search_users(ctx, form.cleaned_data["search"])
        except PAGE_ERRORS:
            raise
        except FlexPlaneError as exc:
            failure = exc
    context = {"form": form, "found": found, "failure": failure, "takes_effect": TAKES_EFFECT}
    return render(request, "portal/access/users.html", context, status=400 if form.errors else 200)


@access_view
def user_page(request: HttpRequest, ctx: Context, user: str) -> HttpResponse:
    """GET: one user's roles and VDCs, with the forms that change them: the VDCs offered are those the
    user may join (of the platform, or of their organization) among those the caller manages."""
    shown = users.user_access(ctx, user)  # NotFound (another organization's user too): the 404 page
    joinable = memberships.joinable_vdcs(ctx, shown)  # those of other organizations are not offered
    context = {
        "shown": shown,
        "grant_form": GrantForm(vdcs=joinable) if joinable else None,
        "joinable_words": f"Offered: the VDCs {shown.name} may join, the platform's and those of their own "
        "organization (an organization's VDCs take only its own users).",
        "roles_form": RolesForm(initial={"roles": list(shown.roles)}) if ctx.principal.is_admin else None,
        "manageable": {v.id for v in memberships.manageable_vdcs(ctx)},
        "grant_action": action("access.grant"),
        "roles_action": action("access.roles"),
        "takes_effect": TAKES_EFFECT,
    }
    return render(request, "portal/access/user.html", context)


def post_only(request: HttpRequest) -> HttpResponseNotAllowed | None:
    return None if request.method == "POST" else HttpResponseNotAllowed(["POST"])


def _change(request: HttpRequest, user: str, call: Callable[[], object], success: str) -> HttpResponseBase:
    """POST only: ``call`` changes the user's access; then the user's page says how it went."""
    if refused := post_only(request):
        return refused
    failure = attempt(call)
    return back_to(request, failure, f"{success} {TAKES_EFFECT}", "portal-access:user", user=user)


@access_view
def grant(request: HttpRequest, ctx: Context, user: str) -> HttpResponseBase:
    """POST: make the user a member of the VDC chosen; the user's page then says so, naming both, or says
    why not (the service's words name the user and the VDC)."""
    if refused := post_only(request):
        return refused
    vdc = str(request.POST.get("vdc", ""))
    outcome = perform(lambda: memberships.grant_vdc_membership(ctx, user, vdc))
    if isinstance(outcome, FlexPlaneError):
        messages.error(request, outcome.message)
    else:
        named = next((v.label for v in memberships.manageable_vdcs(ctx) if v.id == vdc), vdc)
        who = outcome.name or outcome.username
        messages.success(request, f"{who} is now a member of VDC {named}. {TAKES_EFFECT}")
    return redirect("portal-access:user", user=user)


@access_view
def revoke(request: HttpRequest, ctx: Context, user: str, vdc: str) -> HttpResponse:
    """GET: whose membership of which VDC ends, what that means, and a confirmation; POST (confirmed):
    ``revokeVdcMembership``, then the user's page. A membership that is not there (or of a VDC the caller
    does not manage): the 404 page."""
    shown = users.user_access(ctx, user)  # NotFound (another organization's user too): the 404 page
    if vdc not in shown.vdcs or vdc not in {v.id for v in memberships.manageable_vdcs(ctx)}:
        raise NotFound("membership of VDC", vdc)
    revoking = performed("access.revoke")
    return confirmation(
        request,
        ctx,
        revoking,
        lambda: memberships.revoke_vdc_membership(ctx, shown.id, vdc),
        page="portal/access/revoke.html",
        context={"shown": shown, "vdc": vdc, "revoke_action": revoking, "takes_effect": TAKES_EFFECT},
        said=f"{shown.name} is no longer a member of VDC {vdc}. {TAKES_EFFECT}",
        then=reverse("portal-access:user", args=[shown.id]),
        user=shown.id,
    )


@access_view
def set_roles(request: HttpRequest, ctx: Context, user: str) -> HttpResponseBase:
    """POST: give the user exactly the platform roles ticked (ADMIN only: the service refuses others)."""
    roles = [str(r) for r in request.POST.getlist("roles")]
    said = f"The user's platform roles are now: {', '.join(roles) or 'none'}."
    return _change(request, user, lambda: memberships.set_platform_roles(ctx, user, roles), said)


@access_view
def vdc_members(request: HtmxHttpRequest, ctx: Context, vdc: str) -> HttpResponse:
    """GET: a VDC's members (a fragment for the VDC's admin page, or a page of its own)."""
    failure = None
    members: list[users.UserAccess] = []
    try:
        members = memberships.vdc_members(ctx, vdc)
    except PAGE_ERRORS:
        raise
    except FlexPlaneError as exc:
        failure = exc
    template = "portal/access/_members.html" if request.htmx else "portal/access/members.html"
    context = {"vdc": vdc, "members": members, "failure": failure, "takes_effect": TAKES_EFFECT}
    return render(request, template, context)
