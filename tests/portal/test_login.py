"""Signing in and out of the portal, end to end: the world's identity provider, the orchestrator's
server, a ``requests`` session playing the browser (the real code flow with PKCE)."""

from __future__ import annotations

import time
from unittest import mock
from urllib.parse import parse_qs, urlsplit

import requests

from devstack.world import World
from tests.portal.sessionkit import csrf_token, login, portal_session, set_portal_session, submit_login_form


def forget_identity_provider(session: requests.Session, world: World) -> None:
    """The browser's session at the identity provider is over (logged out elsewhere, or timed out)."""
    session.cookies.clear(domain=world.cfg.identity_host)


def expire_id_token(session: requests.Session, world: World) -> None:
    """The session's ID token past its time, as the portal's session records it."""
    store = portal_session(session, world)
    store["oidc_id_token_expiration"] = time.time() - 1
    store.save()
    set_portal_session(session, world, store)


def test_signing_in_goes_through_the_identity_provider_to_the_users_first_vdc(world: World) -> None:
    _, landed = login(world, "alice")
    assert landed.status_code == 200
    assert landed.url == f"{world.url}/vdc/demo/"
    assert "Alice Example" in landed.text
    hops = [urlsplit(r.url) for r in landed.history]
    authorize = next(h for h in hops if h.path.endswith("/authorize/"))
    query = parse_qs(authorize.query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["client_id"] == ["flexplane-portal"]


def test_the_session_holds_the_user_and_roles_from_the_claims_and_no_secret(world: World) -> None:
    session, _ = login(world, "alice")
    store = portal_session(session, world)
    assert store["flexplane_user"]["username"] == "alice"
    assert store["flexplane_user"]["roles"] == ["USER", "vdc:demo"]
    assert "oidc_access_token" not in store


def test_a_page_asked_for_while_signed_out_sends_to_the_login_and_back(world: World) -> None:
    session = requests.Session()
    first = session.get(f"{world.url}/vdc/demo/", allow_redirects=False, timeout=30)
    assert first.status_code == 302
    assert first.headers["Location"] == "/login/?next=/vdc/demo/"
    form = session.get(f"{world.url}{first.headers['Location']}", timeout=30)
    landed = submit_login_form(session, form, "alice")
    assert landed.url == f"{world.url}/vdc/demo/"


def test_a_login_never_sends_anyone_to_another_site_afterwards(world: World) -> None:
    _, landed = login(world, "alice", next_url="https://evil.example/steal")
    assert landed.url == f"{world.url}/vdc/demo/"


def test_signing_out_ends_the_session_here_and_at_the_identity_provider(world: World) -> None:
    session, _ = login(world, "alice")
    token = csrf_token(session, world)
    headers = {"X-CSRFToken": token, "Referer": world.url}
    out = session.post(f"{world.url}/logout/", headers=headers, timeout=30)
    assert [urlsplit(r.url).path for r in out.history][:2] == ["/logout/", "/o/logout/"]
    assert out.url == f"{world.url}/"
    assert "Sign in" in out.text
    after = session.get(f"{world.url}/vdc/demo/", allow_redirects=False, timeout=30)
    assert after.status_code == 302
    # The identity provider forgot the user too: signing in again asks for the password.
    again = session.get(f"{world.url}/login/", timeout=30)
    assert 'name="password"' in again.text


def test_signing_out_needs_the_csrf_token(world: World) -> None:
    session, _ = login(world, "alice")
    refused = session.post(f"{world.url}/logout/", allow_redirects=False, timeout=30)
    assert refused.status_code == 403
    assert "security token" in refused.text
    assert session.get(f"{world.url}/vdc/demo/", allow_redirects=False, timeout=30).status_code == 200


def test_an_id_token_past_its_time_is_renewed_silently_and_the_page_follows(world: World) -> None:
    session, _ = login(world, "alice")
    expire_id_token(session, world)
    page = session.get(f"{world.url}/vdc/demo/?from=refresh", timeout=30)
    assert page.url == f"{world.url}/vdc/demo/?from=refresh"
    assert any("prompt=none" in r.headers.get("Location", "") for r in page.history)
    assert portal_session(session, world)["oidc_id_token_expiration"] > time.time()


def test_a_silent_renewal_the_identity_provider_refuses_asks_for_the_login_then_returns(world: World) -> None:
    session, _ = login(world, "alice")
    expire_id_token(session, world)
    forget_identity_provider(session, world)
    form = session.get(f"{world.url}/vdc/demo/?from=renewal", timeout=30)
    assert form.url.startswith(world.identity.issuer)
    landed = submit_login_form(session, form, "alice")
    assert landed.url == f"{world.url}/vdc/demo/?from=renewal"


def test_an_expired_session_cookie_is_no_session_and_the_login_brings_the_user_back(world: World) -> None:
    session, _ = login(world, "alice")
    store = portal_session(session, world)
    nine_hours_ago = time.time() - 9 * 3600
    with mock.patch("django.core.signing.time.time", return_value=nine_hours_ago):
        store.save()
    set_portal_session(session, world, store)
    first = session.get(f"{world.url}/vdc/demo/?from=expiry", allow_redirects=False, timeout=30)
    assert first.status_code == 302
    assert first.headers["Location"] == "/login/?next=/vdc/demo/%3Ffrom%3Dexpiry"
    # The identity provider still knows the user: no form, straight back to the page.
    back = session.get(f"{world.url}{first.headers['Location']}", timeout=30)
    assert back.url == f"{world.url}/vdc/demo/?from=expiry"


def test_a_callback_without_a_login_in_progress_says_so(world: World) -> None:
    session = requests.Session()
    page = session.get(f"{world.url}/oidc/callback/?error=access_denied&state=x", timeout=30)
    assert page.url == f"{world.url}/"
    assert "Signing in did not succeed" in page.text
