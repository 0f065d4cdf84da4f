"""The portal as an OIDC relying party: mozilla-django-oidc, with no database and discovered endpoints.

- The issuer's endpoints come from its discovery document (``FLEXPLANE_OIDC_ISSUER``), read when a
  login needs them and kept in memory for ``FLEXPLANE_JWKS_TTL`` seconds, so that the orchestrator
  starts whether or not the identity provider is up.
- The user is built from the claims (matched on ``sub``, never on email) and kept in the signed
  session (:mod:`portal.auth`); the ID token is checked for its issuer and audience too.
- Logout ends the session and sends the browser to the issuer's end-session endpoint, which ends
  the issuer's own session too.
- The session lives a short while (``OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS``); past it, ``SessionRefresh``
  serves no request on it before the issuer answered again without a prompt, and brings the user back
  to the page they were on; if the issuer wants a login (after a logout, say), they get its form. So a
  copied cookie outlives the logout by that short while at most. The admin pages' actions need a
  renewal younger still (``FLEXPLANE_ADMIN_RENEW_SECONDS``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import reverse
from django.views.generic import View
from django_htmx.http import HttpResponseClientRedirect
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.middleware import SessionRefresh as MozillaSessionRefresh
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from orchestrator.errors import Unavailable
from portal.auth import EXPIRATION_KEY, remember_user, renewed_within, session_is_current
from portal.errors import error_page
from portal.htmx import htmx_of
from portal.models import PortalUser

logger = logging.getLogger(__name__)

IDENTITY = "the identity provider"
# mozilla-django-oidc's settings that name the issuer's endpoints, and the discovery keys behind them.
_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
# What an issuer answers a prompt=none request with when the user must see it (OIDC Core 3.1.2.6).
_NEEDS_INTERACTION = frozenset(
    {"login_required", "interaction_required", "consent_required", "account_selection_required"}
)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
NOT_DONE = "Your sign-in was renewed first, and nothing was changed: please do it again."


# ------------------------------------------------------------------------------------ discovery


class _Discovery:
    """The issuer's discovery document, kept in memory for a while (like the JWKS)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._document: dict[str, Any] | None = None
        self._fetched_at = 0.0

    def document(self) -> dict[str, Any]:
        with self._lock:
            if self._document is None or time.monotonic() - self._fetched_at > settings.FLEXPLANE_JWKS_TTL:
                self._document = self._fetch()
                self._fetched_at = time.monotonic()
            return self._document

    @staticmethod
    def _fetch() -> dict[str, Any]:
        issuer = settings.FLEXPLANE_OIDC_ISSUER.rstrip("/")
        if not issuer:
            raise Unavailable(IDENTITY, "no identity provider is configured (FLEXPLANE_OIDC_ISSUER)")
        url = f"{issuer}/.well-known/openid-configuration"
        try:
            response = requests.get(url, timeout=settings.FLEXPLANE_OIDC_TIMEOUT)
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise Unavailable(IDENTITY, f"the identity provider at {issuer} did not answer: {exc}") from exc
        if not isinstance(document, dict):
            raise Unavailable(IDENTITY, f"{url} is not an OpenID Connect discovery document")
        return document


_discovery = _Discovery()


def endpoint(key: str) -> str:
    """An endpoint of the issuer (``authorization_endpoint``, ``jwks_uri``...), from discovery."""
    value = _discovery.document().get(key)
    if not isinstance(value, str) or not value:
        raise Unavailable(IDENTITY, f"the identity provider publishes no {key}")
    return value


def rp_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, with the issuer's endpoints taken from discovery."""
    if attr in _ENDPOINTS:
        return endpoint(_ENDPOINTS[attr])
    return import_from_settings(attr, *default)


def _identity_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    if not isinstance(exc, Unavailable):
        exc = Unavailable(IDENTITY, f"the identity provider did not answer: {exc}")
    logger.warning("login: %s", exc)
    return error_page(request, exc)


# ------------------------------------------------------------------------------------ the backend


class ClaimsBackend(OIDCAuthenticationBackend):
    """Authenticates the code flow's answer; the user is built from the claims, never looked up."""

    get_settings = staticmethod(rp_setting)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The signature and nonce (mozilla-django-oidc), plus the issuer and this client as audience."""
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        issuer = settings.FLEXPLANE_OIDC_ISSUER.rstrip("/")
        if str(payload.get("iss", "")).rstrip("/") != issuer:
            raise SuspiciousOperation(f"the ID token was issued by {payload.get('iss')!r}, not {issuer!r}")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token is not meant for this portal (audience)")
        return payload

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> PortalUser:
        claims = self.get_userinfo(access_token, id_token, payload)
        if not self.verify_claims(claims):
            raise SuspiciousOperation("the userinfo answer names no subject")
        if str(claims["sub"]) != str(payload.get("sub")):
            # OIDC Core 5.3.4: userinfo about someone else than the ID token must not be used.
            raise SuspiciousOperation("the userinfo answer is about another subject than the ID token")
        return PortalUser.from_claims(claims)

    def get_user(self, user_id: Any) -> None:
        """Never by id: the user lives in the session (see ``portal.auth``)."""
        return


# ------------------------------------------------------------------------------------ the views


class LoginView(OIDCAuthenticationRequestView):
    """``/login/?next=...``: off to the issuer's authorization endpoint (code flow with PKCE)."""

    def __init__(self, **kwargs: Any) -> None:
        # The endpoint is discovered when a login happens, not when the view is built.
        View.__init__(self, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponseBase:
        try:
            self.OIDC_OP_AUTH_ENDPOINT = endpoint("authorization_endpoint")
        except Unavailable as exc:
            return _identity_unavailable(request, exc)
        response: HttpResponseBase = super().get(request)
        return response


class CallbackView(OIDCAuthenticationCallbackView):
    """``/oidc/callback/``: the code exchanged for tokens, the user recorded in the session."""

    def get(self, request: HttpRequest) -> HttpResponseBase:
        self.next_url = request.session.get("oidc_login_next")  # a failed callback flushes the session
        try:
            response: HttpResponseBase = super().get(request)
        except requests.HTTPError as exc:
            logger.warning("login: the identity provider refused: %s", exc)
            return self._failed("the identity provider refused to complete the sign-in")
        except (requests.RequestException, Unavailable) as exc:
            return _identity_unavailable(request, exc)
        return response

    def login_success(self) -> HttpResponseBase:
        response: HttpResponseBase = super().login_success()
        remember_user(self.request.session, self.user)
        return response

    def login_failure(self) -> HttpResponseBase:
        error = self.request.GET.get("error")
        if error in _NEEDS_INTERACTION:
            # A silent refresh the issuer could not answer: sign in with its form, then go back.
            return redirect_to_login(self.next_url or reverse("home"), reverse("oidc_authentication_init"))
        if error:
            description = self.request.GET.get("error_description") or error
            return self._failed(f"the identity provider said: {description}")
        return self._failed("the sign-in could not be completed (it may have expired): please try again")

    def _failed(self, why: str) -> HttpResponseBase:
        messages.error(self.request, f"Signing in did not succeed: {why}.")
        return HttpResponseRedirect(reverse("home"))


def end_session_url(request: HttpRequest) -> str:
    """The issuer's end-session URL for this session (``OIDC_OP_LOGOUT_URL_METHOD``).

    It names the ID token (so the issuer logs out without asking) and where to come back to. If
    the issuer cannot be asked, the user is still logged out of the portal.
    """
    home = request.build_absolute_uri(reverse("home"))
    try:
        url = endpoint("end_session_endpoint")
    except Unavailable as exc:
        logger.warning("logout: %s; the portal session ends anyway", exc)
        return home
    params = {"client_id": settings.OIDC_RP_CLIENT_ID, "post_logout_redirect_uri": home}
    id_token = request.session.get("oidc_id_token")
    if isinstance(id_token, str) and id_token:
        params["id_token_hint"] = id_token
    return f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"


# ------------------------------------------------------------------------------------ refreshing


def _refresh_setting(attr: str, *default: Any) -> Any:
    """The settings ``SessionRefresh`` reads; its authorization endpoint is discovered at use."""
    if attr == "OIDC_OP_AUTHORIZATION_ENDPOINT":
        return ""  # read once by mozilla's __init__; the property below answers instead
    return import_from_settings(attr, *default)


class SessionRefresh(MozillaSessionRefresh):
    """Past the session's short life, no request is served before the issuer answered again.

    mozilla-django-oidc renews a page (a GET) whose ID token's time is up: the issuer is asked again
    with ``prompt=none``, then the browser comes back to the page. Here every request of a signed-in
    user waits for that renewal, not only GETs (a copied cookie would otherwise keep working for
    forms and htmx actions until the cookie's own age), and the admin pages' actions need a renewal
    younger than ``FLEXPLANE_ADMIN_RENEW_SECONDS``; an admin page loaded as a whole renews the session
    when it is older, so that its forms work. An action that waited is not carried out: the browser
    comes back to the page it was sent from, told to do it again. Exempt: the login, its callback, the
    logout and the orchestrator's own endpoints (``OIDC_EXEMPT_URLS``).

    The authorization endpoint is discovered when a refresh is due, not at start-up. An htmx
    request cannot follow a redirect to another site: it is told to load the refresh as a whole
    page instead, coming back to the page the user is on (not to the fragment).
    """

    get_settings = staticmethod(_refresh_setting)
    # Sync only, and last in MIDDLEWARE: under ASGI, Django then runs the whole chain in one thread (one
    # switch from the event loop into it, one back for the view) rather than switching for the request
    # and the response of every middleware that can run either way (a third of a small query's time).
    async_capable = False

    @property  # mozilla sets it once in __init__; here it is read at use
    def OIDC_OP_AUTHORIZATION_ENDPOINT(self) -> str:
        return endpoint("authorization_endpoint")

    @OIDC_OP_AUTHORIZATION_ENDPOINT.setter
    def OIDC_OP_AUTHORIZATION_ENDPOINT(self, value: str) -> None:
        """Ignored: the endpoint comes from discovery."""

    def is_refreshable_url(self, request: HttpRequest) -> bool:
        """Every request of a signed-in user, whatever its method, but on the exempt paths."""
        path = request.path
        exempt = path in self.exempt_urls or any(pattern.match(path) for pattern in self.exempt_url_patterns)
        return not exempt and bool(request.user.is_authenticated)

    def process_request(self, request: HttpRequest) -> None:
        """Nothing yet: the check comes once the request's view is known (:meth:`process_view`)."""

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponseBase | None:
        """After the CSRF check (which refuses a forged action first), before the view."""
        return self.renew_if_due(request)

    def renew_if_due(self, request: HttpRequest) -> HttpResponseBase | None:
        """The renewal's redirect when it is due for this request, else nothing."""
        if not self.is_refreshable_url(request):
            return None
        now = time.time()
        admin_due = _is_admin(request) and not renewed_within(
            request.session, settings.FLEXPLANE_ADMIN_RENEW_SECONDS, now
        )
        if session_is_current(request.session, now) and not admin_due:
            return None
        if admin_due:
            # The renewal is due now: mozilla renews a session past its time.
            request.session[EXPIRATION_KEY] = 0
        try:
            response: HttpResponseBase | None = super().process_request(request)  # the redirect, as mozilla's
        except Unavailable as exc:
            return _identity_unavailable(request, exc)
        if response is None:
            return None
        if request.method not in _SAFE_METHODS:
            messages.info(request, NOT_DONE)
            request.session["oidc_login_next"] = _page_sent_from(request)
        details = htmx_of(request)
        if details is None:
            return response
        current = details.current_url_abs_path
        if current:
            request.session["oidc_login_next"] = current
        return HttpResponseClientRedirect(response["Location"])


def _is_admin(request: HttpRequest) -> bool:
    """An admin page's action, or an admin page loaded as a whole (not a fragment of it)."""
    if not request.path.startswith(reverse("portal-admin:index")):
        return False
    return request.method not in _SAFE_METHODS or htmx_of(request) is None


def _page_sent_from(request: HttpRequest) -> str:
    """The path of the page an action was sent from (its Referer, on this site), else the home page."""
    referer = urlsplit(request.headers.get("Referer", ""))
    same_site = referer.netloc == request.get_host() and referer.scheme == request.scheme
    if same_site and referer.path.startswith("/"):
        return f"{referer.path}?{referer.query}" if referer.query else referer.path
    return reverse("home")
