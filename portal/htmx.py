"""htmx's side of a request, typed: the one place the portal asks how htmx sent a request.

One URL serves a page and its fragments: :func:`respond` picks the fragment by the element htmx asks
to swap (``HX-Target``), :func:`targets` says whether a request is a given element's (a fragment that
reads itself again), :func:`redirect` sends the browser on (htmx follows ``HX-Redirect``, a form a 303).

The portal's views are annotated with :class:`HtmxHttpRequest`, as django-htmx's documentation
recommends: its middleware (in ``settings.MIDDLEWARE``) gives every request ``htmx`` before a view
runs. Code that takes any request (the error pages, which Django's ``handler500`` may call with a
request no middleware marked, and the middleware after django-htmx's) asks :func:`htmx_of` instead.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it: an annotation only (Django builds requests)."""

    htmx: HtmxDetails


def htmx_of(request: HttpRequest) -> HtmxDetails | None:
    """The details of a request htmx sent (its ``HX-Request`` header), None for any other: a whole page,
    or a request django-htmx's middleware has not seen."""
    details: HtmxDetails | None = getattr(request, "htmx", None)
    return details if details else None


def targets(request: HtmxHttpRequest, element: str) -> bool:
    """Whether htmx sent the request to swap the element whose id is ``element`` (``HX-Target``)."""
    return bool(request.htmx) and request.htmx.target == element


def respond(
    request: HtmxHttpRequest, page: str, context: dict[str, Any], fragments: dict[str, str] | None = None
) -> HttpResponse:
    """The page, or for htmx the fragment of the element it targets (``fragments``: element id ->
    template); the page when it targets none of them. The template knows which (``fragment``)."""
    target = request.htmx.target if request.htmx else None
    template = (fragments or {}).get(target or "", page)
    return render(request, template, {**context, "fragment": template != page})


def redirect(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """On to ``url`` once a form did its work: htmx is told to load it (``HX-Redirect``), a browser's
    form gets a 303 (See Other: a GET, so a reload does not send the form again)."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url, status=303)
