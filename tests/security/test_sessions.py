"""The portal's session: nobody can forge one, and a copied one is good for a short while only.

The session is a signed cookie (no database). Its key is the world's, new for each run: one signed
with the development settings' former default key gets nothing. It lives a short while past the
identity provider's last answer for it; past that, every request (not only a page) waits for a
silent renewal, which fails once the user signed out, since the logout ended the provider's session
too. An admin action needs a renewal younger still.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.test import override_settings
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from devstack.world import World
from tests.portal.sessionkit import (
    COOKIE,
    csrf_token,
    login,
    portal_session,
    recorded_session,
    set_portal_session,
)

pytestmark = pytest.mark.promise("portal-security")

# The development settings' former default SECRET_KEY, which anyone could read in the source.
FORMER_DEVELOPMENT_KEY = "dev-only-insecure-key-change-me"
# The session's short life (seconds) of the orchestrator that test_a_copied_cookie_... runs against.
SHORT_LIFE = 4.0
# How long past its life a refused cookie may still have been served (a request in flight, a slow machine).
SLACK = 3.0
# The admin pages' limit of the world's orchestrator (FLEXPLANE_ADMIN_RENEW_SECONDS, its default).
ADMIN_LIMIT = 300.0


def renewal(answer: requests.Response, world: World) -> bool:
    """Whether ``answer`` sends the browser to renew its session at the identity provider (prompt=none)
    rather than serving the request."""
    location = answer.headers.get("Location", "")
    if answer.status_code != 302 or not location.startswith(world.identity.issuer):
        return False
    return parse_qs(urlsplit(location).query).get("prompt") == ["none"]


def copied(session: requests.Session) -> requests.Session:
    """Another browser holding copies of ``session``'s cookies (the portal's and the identity provider's)."""
    thief = requests.Session()
    thief.cookies.update(session.cookies)
    return thief


def act(session: requests.Session, world: World, path: str, token: str) -> requests.Response:
    """An action of the portal's (a form's POST, not followed), sent from the page at ``path``."""
    return session.post(
        f"{world.url}{path}",
        data={"csrfmiddlewaretoken": token},
        headers={"Referer": f"{world.url}{path}"},
        allow_redirects=False,
        timeout=30,
    )


@pytest.fixture
def short_lived(world: World) -> Iterator[float]:
    """The world's orchestrator, restarted with a session life of SHORT_LIFE seconds, and back after."""
    assert world.orchestrator is not None
    world.orchestrator.stop()
    try:
        world.start_orchestrator({"FLEXPLANE_OIDC_RENEW_SECONDS": str(SHORT_LIFE)})
        yield SHORT_LIFE
    finally:
        assert world.orchestrator is not None
        world.orchestrator.stop()
        world.start_orchestrator()


# ------------------------------------------------------------------------------------------ forging


def test_an_admin_session_signed_with_the_former_development_key_gets_no_admin_page(world: World) -> None:
    with override_settings(SECRET_KEY=FORMER_DEVELOPMENT_KEY):
        forged = recorded_session(world, ["ADMIN"], "mallory")
    page = forged.get(f"{world.url}/admin/", allow_redirects=False, timeout=30)
    assert page.status_code == 302
    assert page.headers["Location"].startswith("/login/")


def test_the_worlds_orchestrator_signs_with_a_key_new_for_each_world(world: World) -> None:
    assert world.secret_key != FORMER_DEVELOPMENT_KEY
    assert len(world.secret_key) >= 50
    assert World(world.cfg).secret_key != world.secret_key
    # The test process signs with it (tests/conftest.py): the orchestrator takes what it signs.
    page = recorded_session(world, ["ADMIN"], "mallory").get(
        f"{world.url}/admin/", allow_redirects=False, timeout=30
    )
    assert page.status_code == 200


# ------------------------------------------------------------------------------------------ after logout


def test_a_copied_cookie_is_refused_once_its_short_life_is_over_and_cannot_be_renewed_after_logout(
    world: World, short_lived: float
) -> None:
    # The session's life starts at the provider's answer, somewhere within the login: the page it lands
    # on (the first of a freshly started orchestrator) may take seconds on a loaded machine.
    signing_in = time.monotonic()
    alice, _ = login(world, "alice")
    signed_in = time.monotonic()
    token = csrf_token(alice, world)
    thief = copied(alice)
    stolen = str(thief.cookies.get(COOKIE, domain=world.cfg.orchestrator_host))
    out = alice.post(f"{world.url}/logout/", headers={"X-CSRFToken": token, "Referer": world.url}, timeout=30)
    assert out.url == f"{world.url}/"

    # An action (the create form, sent empty: were it served, it would answer with the form's errors).
    create = "/vdc/demo/vms/new/"
    answer = act(thief, world, create, token)
    while not renewal(answer, world):
        assert time.monotonic() - signed_in < short_lived + SLACK, f"still served: {answer.status_code}"
        time.sleep(0.2)
        answer = act(thief, world, create, token)
    assert time.monotonic() - signing_in >= short_lived - SLACK

    # The renewal fails: the logout ended the identity provider's session, the copied cookie of it too.
    renewed = thief.get(answer.headers["Location"], timeout=30)
    assert urlsplit(renewed.url).path.endswith("/login/")
    assert renewed.url.startswith(world.identity.issuer)
    assert 'name="password"' in renewed.text
    # The failed renewal signed that browser out; the copied cookie, sent again, stays refused.
    page = thief.get(f"{world.url}/vdc/demo/", allow_redirects=False, timeout=30)
    assert page.headers["Location"] == "/login/?next=/vdc/demo/"
    thief.cookies.set(COOKIE, stolen, domain=world.cfg.orchestrator_host, path="/")
    assert renewal(thief.get(f"{world.url}/vdc/demo/", allow_redirects=False, timeout=30), world)
    assert renewal(act(thief, world, create, token), world)


# ------------------------------------------------------------------------------------------ admin actions


def test_an_admin_action_on_a_session_renewed_longer_ago_than_the_admin_limit_waits_for_a_renewal(
    world: World,
) -> None:
    admin, _ = login(world, "admin", "/admin/")
    store = portal_session(admin, world)
    store["flexplane_renewed_at"] = time.time() - ADMIN_LIMIT - 1
    store.save()
    set_portal_session(admin, world, store)
    token = csrf_token(admin, world)
    form = "/admin/compute-profiles/new/"

    waited = act(admin, world, form, token)
    assert renewal(waited, world)
    # The renewal is silent (the identity provider's session lasts) and comes back to the form's page,
    # saying the action was not carried out.
    back = admin.get(waited.headers["Location"], timeout=30)
    assert back.url == f"{world.url}{form}"
    assert "nothing was changed" in back.text
    assert time.time() - portal_session(admin, world)["flexplane_renewed_at"] < ADMIN_LIMIT
    # Renewed, the same action is carried out (its view answers: here, the empty form's errors).
    assert not renewal(act(admin, world, form, token), world)


def test_an_admin_page_renews_a_session_older_than_the_admin_limit_as_it_loads(world: World) -> None:
    admin, _ = login(world, "admin", "/admin/")
    store = portal_session(admin, world)
    store["flexplane_renewed_at"] = time.time() - ADMIN_LIMIT - 1
    store.save()
    set_portal_session(admin, world, store)
    page = admin.get(f"{world.url}/admin/?from=renewal", timeout=30)
    assert page.url == f"{world.url}/admin/?from=renewal"
    assert any("prompt=none" in r.headers.get("Location", "") for r in page.history)
    # Its tenant pages wait for no such renewal.
    store = portal_session(admin, world)
    store["flexplane_renewed_at"] = time.time() - ADMIN_LIMIT - 1
    store.save()
    set_portal_session(admin, world, store)
    assert admin.get(f"{world.url}/vdc/demo/", allow_redirects=False, timeout=30).status_code == 200


# ------------------------------------------------------------------------------------------ websockets


def live_task_socket(world: World, session: requests.Session) -> int:
    """The close code of the live task socket (on a task that does not exist) for ``session``'s cookie;
    403 when the handshake is refused."""
    cookie = session.cookies.get(COOKIE, domain=world.cfg.orchestrator_host)
    url = f"ws://{world.cfg.orchestrator_host}:{world.cfg.orchestrator_port}/ws/tasks/no-such-task/"
    try:
        with connect(
            url,
            additional_headers={"Cookie": f"{COOKIE}={cookie}"},
            origin=Origin(world.url),
            open_timeout=10,
        ) as socket:
            socket.recv(timeout=30)
            socket.recv(timeout=30)
    except InvalidStatus as refused:
        return refused.response.status_code
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else 0
    return 0


def test_a_live_task_socket_on_a_session_past_its_short_life_is_refused(world: World) -> None:
    alice, _ = login(world, "alice")
    assert live_task_socket(world, alice) == 4404  # served: the task is not there
    store = portal_session(alice, world)
    store["oidc_id_token_expiration"] = time.time() - 1
    store.save()
    set_portal_session(alice, world, store)
    assert live_task_socket(world, alice) == 403
