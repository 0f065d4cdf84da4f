"""The Content-Security-Policy of the portal's pages (Django 5.2 has none built in).

Scripts, styles, images, fonts and connections only from this site: no inline script, no
``eval``, no inline style (the pages carry none: JS lives in ``static/portal/``, CSS in the built
Tailwind file). Forms may be sent here, and on to the identity provider (logout answers a form
post with a redirect there). No site may frame the portal. Paths in ``FLEXPLANE_CSP_EXEMPT``
(GraphiQL, which loads its own scripts) keep their own answers.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def policy(request: HttpRequest) -> str:
    """The policy for a page of this request's site."""
    socket = f"{'wss' if request.is_secure() else 'ws'}://{request.get_host()}"
    form_action = " ".join(filter(None, ["'self'", _origin(settings.FLEXPLANE_OIDC_ISSUER)]))
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "font-src 'self'",
            f"connect-src 'self' {socket}",
            "object-src 'none'",
            "base-uri 'self'",
            f"form-action {form_action}",
            "frame-ancestors 'none'",
        ]
    )


class ContentSecurityPolicyMiddleware:
    """Adds the portal's policy to every answer that has none and is not exempt."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.exempt = tuple(settings.FLEXPLANE_CSP_EXEMPT)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if HEADER not in response and not request.path.startswith(self.exempt):
            response[HEADER] = policy(request)
        return response
