"""``/``: where a visitor starts. Signed out: what flex.plane is, and a way in. Signed in: their first VDC."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse

from orchestrator.errors import FlexPlaneError
from orchestrator.services import vdcs
from orchestrator.services.context import Context
from portal.context import portal_view

ADMIN_HOME = "/admin/"


def favicon(request: HttpRequest) -> HttpResponseBase:
    """``/favicon.ico``, which browsers ask for on their own: the portal's icon
    (``static/portal/favicon.svg``, which the pages link), so that no page logs a 404 for it. Not a
    permanent redirect: the static file's name may change."""
    return redirect(static("portal/favicon.svg"))


def home(request: HttpRequest) -> HttpResponseBase:
    if not request.user.is_authenticated:
        return render(request, "portal/home.html", {"graphql_url": reverse("graphql")})
    return _start(request)


@portal_view
def _start(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """The first VDC the user is a member of; admins who are members of none go to the admin area."""
    principal = ctx.principal
    try:
        members_of = [vdc for vdc in vdcs.visible_vdcs(ctx) if vdc.id in principal.vdcs]
    except FlexPlaneError:
        if not principal.is_admin:
            raise
        members_of = []  # an admin without the USER role still has the admin area
    if members_of:
        return redirect("vdc-dashboard", vdc=members_of[0].id)
    if principal.is_admin:
        return redirect(ADMIN_HOME)
    return _no_vdc(request)


def _no_vdc(request: HttpRequest) -> HttpResponse:
    return render(request, "portal/no_vdc.html")
