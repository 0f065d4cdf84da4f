"""Signing in to the portal under test as a browser would, with ``requests``: the real code flow.

GET the portal's login (``next`` optional) -> the identity provider's authorization endpoint ->
its login form -> POST the credentials -> back through the authorization endpoint -> the portal's
callback -> the page asked for. The session keeps the cookies of both sites apart, by host.

The portal's session is a signed cookie; the tests sign with the world's secret key, as its
orchestrator does (tests/conftest.py), so they can read it, and age it, as time would.
"""

from __future__ import annotations

import re
import time
from typing import Any, Protocol
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
import requests
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.signed_cookies import SessionStore

from devstack import seed
from devstack.world import World

COOKIE = "sessionid"
_CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_NEXT_FIELD = re.compile(r'name="next" value="([^"]*)"')
_FORM_ACTION = re.compile(r'<form method="post" action="([^"]+)"')


class Site(Protocol):
    """A portal under test: the devstack world's, or the one served from the test's process
    (``tests/portal/served.py``)."""

    @property
    def url(self) -> str: ...


def host_of(site: Site) -> str:
    """The host the portal's cookies are set for."""
    return urlsplit(site.url).hostname or ""


def password_of(username: str) -> str:
    return str(next(u for u in seed.USERS if u["username"] == username)["password"])


def _found(pattern: re.Pattern[str], page: requests.Response) -> str:
    match = pattern.search(page.text)
    assert match is not None, f"not the identity provider's login form: {page.url}\n{page.text[:500]}"
    return match.group(1).replace("&amp;", "&")


def submit_login_form(session: requests.Session, page: requests.Response, username: str) -> requests.Response:
    """Fill in and send the identity provider's login form that ``page`` shows."""
    return session.post(
        urljoin(page.url, _found(_FORM_ACTION, page)),
        data={
            "csrfmiddlewaretoken": _found(_CSRF_FIELD, page),
            "next": _found(_NEXT_FIELD, page),
            "username": username,
            "password": password_of(username),
        },
        headers={"Referer": page.url},
        timeout=30,
    )


def login(
    world: World, username: str, next_url: str | None = None
) -> tuple[requests.Session, requests.Response]:
    """A session signed in to the portal as ``username``, and the page it landed on."""
    session = requests.Session()
    query = f"?{urlencode({'next': next_url})}" if next_url else ""
    form = session.get(f"{world.url}/login/{query}", timeout=30)
    assert form.url.startswith(world.identity.issuer), f"the login did not reach the provider: {form.url}"
    landed = submit_login_form(session, form, username)
    assert landed.url.startswith(world.url), f"the login did not come back to the portal: {landed.url}"
    return session, landed


def signed_in(username: str, next_url: str | None = None) -> Any:
    """A module-scoped fixture: a session signed in to the portal as ``username`` (see ``login``)."""

    @pytest.fixture(scope="module", name=username)
    def session(world: World) -> requests.Session:
        return login(world, username, next_url)[0]

    return session


def csrf_token(session: requests.Session, site: Site) -> str:
    """The portal's CSRF cookie (set once a page with a form was served)."""
    token = session.cookies.get("csrftoken", domain=host_of(site))
    assert token, "the portal set no CSRF cookie"
    return str(token)


def portal_session(session: requests.Session, site: Site) -> SessionStore:
    """The portal's signed session as the browser holds it."""
    store = SessionStore(session_key=session.cookies.get(COOKIE, domain=host_of(site)))
    store.load()
    return store


def set_portal_session(session: requests.Session, site: Site, store: SessionStore) -> None:
    assert store.session_key is not None  # saved
    session.cookies.set(COOKIE, store.session_key, domain=host_of(site), path="/")


def recorded_session(site: Site, roles: list[str], username: str = "carol") -> requests.Session:
    """A browser session as the portal's login records it, for a user the identity provider does
    not seed (one in no VDC, say)."""
    subject = "9" + str(sum(map(ord, username))).zfill(17)
    user = {"subject": subject, "username": username, "name": username.title(), "email": "", "roles": roles}
    store = SessionStore()
    store.update(
        {
            SESSION_KEY: subject,
            BACKEND_SESSION_KEY: "portal.oidc.ClaimsBackend",
            HASH_SESSION_KEY: "",
            "flexplane_user": user,
            "oidc_id_token_expiration": time.time() + 3600,
            "flexplane_renewed_at": time.time(),
        }
    )
    store.save()
    session = requests.Session()
    set_portal_session(session, site, store)
    return session
