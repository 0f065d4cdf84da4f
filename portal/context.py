"""What every portal view builds on: the caller's service ``Context``, the view decorators, the nav.

The portal calls the orchestrator's services in-process, with the same ``Principal`` the GraphQL
API would build from a bearer token: here it comes from the signed session (``portal.auth``).

- :func:`service_context` is the request's ``Context`` (one per request: its memo is the request's).
- :func:`portal_view`, :func:`vdc_view` and :func:`admin_view` wrap views written as
  ``def view(request, ctx, **kwargs)``: they send anonymous users to the login (and back), build
  ``ctx``, and turn domain errors into pages in words (:mod:`portal.errors`).
- :func:`navigation` (a template context processor) gives every page ``vdcs``, ``current_vdc``,
  ``is_admin``, ``is_org_owner``, ``has_tasks``, ``area``, ``user`` and ``unavailable``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponseBase
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from orchestrator.errors import FlexPlaneError, NotFound, Unauthenticated
from orchestrator.services import vdcs
from orchestrator.services.context import Context
from portal.activity import trail as activity
from portal.errors import error_page, internal_error_page
from portal.htmx import HtmxHttpRequest

P = ParamSpec("P")
View = Callable[Concatenate[HtmxHttpRequest, Context, P], HttpResponseBase]
Wrapped = Callable[..., HttpResponseBase]

# The attribute of the request that holds its service context (as ``info.context.flexplane`` in GraphQL).
_CTX = "flexplane"


def service_context(request: HttpRequest, vdc: str | None = None) -> Context:
    """The signed-in caller's service ``Context``, acting in ``vdc`` (None: not scoped to a VDC).

    The request keeps the first one built, so that the view, its helpers and the navigation share
    one per-request memo. Raises ``Unauthenticated`` when nobody is signed in.
    """
    existing = getattr(request, _CTX, None)
    if isinstance(existing, Context) and existing.vdc == vdc:
        return existing
    user = request.user
    if not user.is_authenticated:
        raise Unauthenticated("you are not signed in")
    ctx = Context(principal=user.principal, vdc=vdc)
    if existing is None:
        setattr(request, _CTX, ctx)
    return ctx


def login_redirect(request: HtmxHttpRequest) -> HttpResponseBase:
    """To the login, and back to this page afterwards (for htmx: the page the fragment is on)."""
    login_url = reverse("oidc_authentication_init")
    if request.htmx:
        here = request.htmx.current_url_abs_path or reverse("home")
        return HttpResponseClientRedirect(redirect_to_login(here, login_url)["Location"])
    return redirect_to_login(request.get_full_path(), login_url)


def _run(request: HtmxHttpRequest, call: Callable[[], HttpResponseBase]) -> HttpResponseBase:
    if not request.user.is_authenticated:
        return login_redirect(request)
    try:
        with activity.serving(request):  # a portal action's audit record needs the request
            return call()
    except Unauthenticated:
        return login_redirect(request)
    except FlexPlaneError as exc:
        return error_page(request, exc)
    except Exception as exc:  # the error boundary: logged under a request id, the page shows the id
        return internal_error_page(request, exc)


def portal_view(view: View[P]) -> Wrapped:
    """A signed-in page that is not about one VDC: ``view(request, ctx, **kwargs)``."""

    @functools.wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return _run(request, lambda: view(request, service_context(request), *args, **kwargs))

    return wrapper


def vdc_view(view: View[P]) -> Wrapped:
    """A page of one VDC, routed under ``vdc/<str:vdc>/``: ``view(request, ctx, **kwargs)``.

    ``ctx.vdc`` is the VDC of the URL (the ``vdc`` argument is not passed on). A VDC the caller
    may not see answers exactly as one that does not exist: the same 404 page.
    """

    @functools.wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, vdc: str, **kwargs: Any) -> HttpResponseBase:
        def call() -> HttpResponseBase:
            ctx = service_context(request, vdc)
            vdcs.get_vdc(ctx, vdc)  # NotFound for a VDC that is not the caller's, as for none at all
            return view(request, ctx, *args, **kwargs)

        return _run(request, call)

    return wrapper


def admin_view(view: View[P]) -> Wrapped:
    """An admin page: as :func:`portal_view`, for ADMIN only; anyone else gets the 404 page."""

    @functools.wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        def call() -> HttpResponseBase:
            ctx = service_context(request)
            if not ctx.principal.is_admin:
                raise NotFound("page", request.path)  # hidden: the same answer as a page that does not exist
            return view(request, ctx, *args, **kwargs)

        return _run(request, call)

    return wrapper


def area_of(path: str, *, organizations_link: bool) -> str | None:
    """Which of the header's links outside a VDC (``admin``, ``access``, ``organizations``) leads to the
    page at ``path``, for the navigation to mark it as the current page; None for a VDC's pages and the
    rest. The organizations pages are under Access, and Access under the admin area's path: the most
    specific link the user has wins."""
    if organizations_link and path.startswith(reverse("portal-access:organizations")):
        return "organizations"
    if path.startswith(reverse("portal-access:users")):
        return "access"
    if path.startswith(reverse("portal-admin:index")):
        return "admin"
    return None


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Template context of every page: the user, their VDCs, the current VDC and zones not answering.

    ``vdcs``: the VDCs the user may see (``Vdc`` objects, ADMIN sees all); ``current_vdc``: the id
    of the VDC the page is about, or None; ``is_admin``; ``is_org_owner`` (the header links their
    organizations); ``has_tasks`` (the header shows the indicator of their tasks: USER or ADMIN);
    ``area``: :func:`area_of` the page; ``user``; ``unavailable``: the ``Unavailable`` errors of zones
    or hosts that did not answer while the page was built. Nothing here calls a service but for the VDCs:
    the tasks' indicator loads once the page is shown.
    """
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {
            "vdcs": [],
            "current_vdc": None,
            "is_admin": False,
            "is_org_owner": False,
            "has_tasks": False,
            "area": None,
            "user": user,
            "unavailable": [],
        }
    ctx = service_context(request, getattr(getattr(request, _CTX, None), "vdc", None))
    principal = ctx.principal
    try:
        # The VDCs the user may enter: an ORG_OWNER manages more (the Access pages), but enters as a member.
        visible = [v for v in vdcs.visible_vdcs(ctx) if principal.is_admin or v.id in principal.vdcs]
    except FlexPlaneError:
        visible = []  # the page itself says what is wrong; the nav just has no VDCs to offer
    return {
        "vdcs": visible,
        "current_vdc": ctx.vdc,
        "is_admin": principal.is_admin,
        "is_org_owner": principal.is_org_owner,
        "has_tasks": principal.is_user or principal.is_admin,
        "area": area_of(request.path, organizations_link=principal.is_org_owner),
        "user": user,
        "unavailable": ctx.unavailable,
    }
