"""Who the browser is: the user recorded in the signed session, for pages and websockets alike.

Django's ``AuthenticationMiddleware`` asks the backend for the user by id, which here would mean a
database. The user lives in the signed session instead (``portal.models.PortalUser``): written at
login by the OIDC callback, read back on every request by :class:`SessionUserMiddleware` and by
the websocket stack (:class:`WebsocketUserMiddleware`).
"""

from __future__ import annotations

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


def remember_user(session: Any, user: PortalUser) -> None:
    """Record ``user`` in the session (after ``auth.login()`` recorded its subject)."""
    session[USER_KEY] = user.to_session()


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
    """``scope["user"]`` for websockets, from the session channels' SessionMiddleware loaded."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        session = scope.get("session")
        user = user_from_session(session) if session is not None else AnonymousUser()
        return await super().__call__({**scope, "user": user}, receive, send)
