"""Who the browser is: the user recorded in the signed session, for pages and websockets alike.

Django's ``AuthenticationMiddleware`` asks the backend for the user by id, which here would mean a
database. The user lives in the signed session instead (``portal.models.PortalUser``): written at
login by the OIDC callback, read back on every request by :class:`SessionUserMiddleware` and by
the websocket stack (:class:`WebsocketUserMiddleware`).

The session lives a short while (``OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS``) past the identity provider's
last answer for it, a login or a silent renewal: past that, pages wait for a renewal
(``portal.oidc.SessionRefresh``) and websockets are refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from channels.middleware import BaseMiddleware
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject

from portal.models import PortalUser

# The session key of the user's profile and roles (next to Django's own SESSION_KEY, the subject).
USER_KEY = "flexplane_user"
# When the identity provider last answered for the session's user (a login or a silent renewal): seconds
# since the epoch.
RENEWED_KEY = "flexplane_renewed_at"
# mozilla-django-oidc's: when the session's short life ends (its last renewal plus
# OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS).
EXPIRATION_KEY = "oidc_id_token_expiration"


def remember_user(session: Any, user: PortalUser) -> None:
    """Record ``user`` in the session (after ``auth.login()`` recorded its subject), renewed now."""
    session[USER_KEY] = user.to_session()
    session[RENEWED_KEY] = time.time()


def _seconds(session: Mapping[str, Any], key: str) -> float:
    value = session.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def session_is_current(session: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether the session's short life still runs (else it waits for a renewal)."""
    return _seconds(session, EXPIRATION_KEY) > (time.time() if now is None else now)


def renewed_within(session: Mapping[str, Any], seconds: float, now: float | None = None) -> bool:
    """Whether the identity provider answered for the session's user less than ``seconds`` ago."""
    return (time.time() if now is None else now) - _seconds(session, RENEWED_KEY) < seconds


def user_from_session(session: Mapping[str, Any]) -> PortalUser | AnonymousUser:
    """The user a session holds, or the anonymous user (also when the two records disagree)."""
    data = session.get(USER_KEY)
    if not isinstance(data, Mapping) or data.get("subject") != session.get(SESSION_KEY):
        return AnonymousUser()
    return PortalUser.from_session(data) or AnonymousUser()


class SessionUserMiddleware:
    """``request.user``, read from the signed session (in place of Django's AuthenticationMiddleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.user = SimpleLazyObject(lambda: user_from_session(request.session))  # type: ignore[assignment]  # lazy like Django's own
        return self.get_response(request)


class WebsocketUserMiddleware(BaseMiddleware):
    """``scope["user"]`` for websockets, from the session channels' SessionMiddleware loaded; a session
    past its short life is nobody's (a page's renewal comes first)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        session = scope.get("session")
        user: PortalUser | AnonymousUser = AnonymousUser()
        if session is not None and session_is_current(session):
            user = user_from_session(session)
        return await super().__call__({**scope, "user": user}, receive, send)
