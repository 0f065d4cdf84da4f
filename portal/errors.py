"""Pages in words for what went wrong: never a stack trace, never a blank page.

Domain errors (``orchestrator.errors``) become a page with the matching status; an htmx request
gets the same words as a fragment swapped into the page's messages area (htmx does not swap
error answers into its target). Any other exception is the portal's error boundary's
(:func:`internal_error_page`, and :func:`server_error` for Django's ``handler500``): its traceback is
logged once under a request id, and the page shows that id, never the exception's text.
"""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    Internal,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unauthenticated,
    Unavailable,
    UpstreamFailure,
    ValidationFailed,
    internal_error,
)
from portal.htmx import htmx_of

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
    (Internal, 500, "Something went wrong"),
)
_INTERNAL_MESSAGE = (
    "The portal could not answer this request. It has been logged; please try again in a moment."
)


# Errors that are pages of their own (404, 403, the login), never said in place on the page a form is on.
PAGE_ERRORS = (NotFound, PermissionDenied, Unauthenticated)


def status_of(exc: FlexPlaneError) -> tuple[int, str]:
    for kind, status, title in _PAGES:
        if isinstance(exc, kind):
            return status, title
    return 400, "Could not be done"


def failure_status(failure: FlexPlaneError | None) -> int:
    """The status of a page that says ``failure`` in place: the failure's, or 200 without one."""
    return status_of(failure)[0] if failure is not None else 200


def error_page(request: HttpRequest, exc: FlexPlaneError) -> HttpResponse:
    """The page (or, for htmx, the fragment) saying what went wrong, with the matching status."""
    status, title = status_of(exc)
    context = {
        "title": title,
        "message": _INTERNAL_MESSAGE if isinstance(exc, Internal) else exc.message,
        "status": status,
        # Unavailable and UpstreamFailure name what did not answer: a zone, a host, the identity provider.
        "where": getattr(exc, "where", None),
        "request_id": getattr(exc, "request_id", None),
    }
    if htmx_of(request):
        response = render(request, "portal/_error.html", context)
        response["HX-Retarget"] = "#messages"
        response["HX-Reswap"] = "innerHTML"
        return response
    return render(request, "portal/error.html", context, status=status)


def internal_error_page(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """The page of an exception nothing expected: logged once under a request id, which it shows."""
    return error_page(request, internal_error(exc, f"{request.method} {request.path}"))


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``, for what fails outside the portal's views (their own failures never get here)."""
    exc = sys.exc_info()[1] or RuntimeError("a server error with no exception")
    response = internal_error_page(request, exc)
    # Logged once, here, under the request id: Django would log the same traceback again, without it.
    response._has_been_logged = True  # type: ignore[attr-defined]  # django.utils.log.log_response's mark
    return response


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
