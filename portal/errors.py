"""Pages in words for what went wrong: never a stack trace, never a blank page.

Domain errors (``orchestrator.errors``) become a page with the matching status; an htmx request
gets the same words as a fragment swapped into the page's messages area (htmx does not swap
error answers into its target).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unauthenticated,
    Unavailable,
    UpstreamFailure,
    ValidationFailed,
)

# (status, title) per kind of error; the first match wins.
_PAGES: tuple[tuple[type[FlexPlaneError], int, str], ...] = (
    (NotFound, 404, "Not found"),
    (PermissionDenied, 403, "Not allowed"),
    (Unauthenticated, 401, "Not signed in"),
    (Unavailable, 503, "Not answering"),
    (UpstreamFailure, 503, "Refused upstream"),
    (QuotaExceeded, 409, "Over quota"),
    (Conflict, 409, "Conflict"),
    (ValidationFailed, 400, "Not valid"),
)


def status_of(exc: FlexPlaneError) -> tuple[int, str]:
    for kind, status, title in _PAGES:
        if isinstance(exc, kind):
            return status, title
    return 400, "Could not be done"


def error_page(request: HttpRequest, exc: FlexPlaneError) -> HttpResponse:
    """The page (or, for htmx, the fragment) saying what went wrong, with the matching status."""
    status, title = status_of(exc)
    context = {
        "title": title,
        "message": exc.message,
        "status": status,
        # Unavailable and UpstreamFailure name what did not answer: a zone, a host, the identity provider.
        "where": getattr(exc, "where", None),
    }
    if getattr(request, "htmx", False):
        response = render(request, "portal/_error.html", context)
        response["HX-Retarget"] = "#messages"
        response["HX-Reswap"] = "innerHTML"
        return response
    return render(request, "portal/error.html", context, status=status)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: a refused form says why in words (a stale page, cookies blocked)."""
    return render(
        request,
        "portal/error.html",
        {
            "title": "Not accepted",
            "message": "The form could not be accepted because its security token is missing or out of "
            "date. Reload the page and try again; the portal needs cookies to be enabled.",
            "status": 403,
        },
        status=403,
    )
