"""The portal's defences in the browser's terms: CSRF and Origin checks, security headers, cookie flags.

Every URL of the portal (read from Django's resolver) refuses an unsafe request (POST, PUT, PATCH, DELETE)
that lacks the CSRF token, or that comes from a foreign Origin, with 403 and the page saying why, before
its view runs (test_portal_csrf.py, in-process); here, against the devstack, the same request with the
token from the portal's own Origin gets past the check. The websocket refuses a foreign Origin. Under
production settings (an orchestrator process of its own, behind what an ingress ending TLS would add)
every page carries a Content-Security-Policy without inline or eval'd scripts, X-Frame-Options DENY, HSTS,
nosniff and a same-origin referrer policy; the session cookie is Secure, HttpOnly and SameSite=Lax, the
CSRF cookie Secure and Lax; a foreign Referer or none at all fails the CSRF check over HTTPS; and plain
HTTP is sent to HTTPS."""

from __future__ import annotations

from collections.abc import Callable
from http.cookies import SimpleCookie

import pytest
import requests
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from devstack.world import World
from tests.portal.sessionkit import COOKIE, csrf_token, login, signed_in
from tests.security.conftest import (
    BEHIND_THE_INGRESS,
    Production,
    Route,
    portal_routes,
    production_cookie,
)

pytestmark = pytest.mark.promise("portal-security")

SUITE = "portal-security"
UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
FOREIGN_ORIGIN = "https://attacker.example"
REFUSED_IN_WORDS = "security token is missing or out of date"
# Values for every parameter of the portal's routes that name nothing: were a check to let a request
# through, its view would find nothing to act on.
NOTHING = {
    "vdc": "nowhere",
    "zone": "zone-a",
    "vmid": 99999,
    "action": "stop",
    "task_id": "no-such-task",
    "host": "no-such-host",
    "ident": "no-such-thing",
    "name": "no-such-snapshot",
    "network": "no-such-network",
    "group": "no-such-group",
    "user": "no-such-user",
    "org": "no-such-org",
    "address": "203.0.113.250",
    "protocol": "tcp",
    "port": 65000,
    "position": 99,
    "cluster": "no-such-cluster",
}
# Values that name real objects of the world (devstack/seed.py): pages with something on them.
REAL = {**NOTHING, "vdc": "demo", "vmid": 100, "host": "pve1", "ident": "small"}
CSRF_COOKIE = "csrftoken"


def path_of(route: Route, values: dict[str, object]) -> str:
    missing = set(route.params) - set(values)
    assert not missing, f"{route.path}: give the parameters {missing} values in {__name__}"
    return route.url(**values)


ROUTES = portal_routes()


# ------------------------------------------------------------------------------------------ CSRF

alice = signed_in("alice")


@pytest.mark.parametrize("path", [route.path for route in ROUTES])
def test_the_same_request_with_the_token_from_the_portal_itself_gets_past_the_check(
    world: World, alice: requests.Session, path: str
) -> None:
    """The control: the refusals above are the CSRF check's, not the view's."""
    route = next(route for route in ROUTES if route.path == path)
    # Logging out ends the session it is sent with: that one gets a session of its own.
    session = login(world, "alice")[0] if route.name == "oidc_logout" else alice
    token = csrf_token(session, world)

    response = session.post(
        f"{world.url}{path_of(route, NOTHING)}",
        data={"csrfmiddlewaretoken": token},
        headers={"X-CSRFToken": token, "Origin": world.url},
        allow_redirects=False,
        timeout=30,
    )

    assert response.status_code != 403 or REFUSED_IN_WORDS not in response.text, path
    assert response.status_code < 500, (path, response.text[:2000])


def test_the_live_task_socket_refuses_a_foreign_origin(world: World, alice: requests.Session) -> None:
    cookie = alice.cookies.get(COOKIE, domain=world.cfg.orchestrator_host)
    url = f"ws://{world.cfg.orchestrator_host}:{world.cfg.orchestrator_port}/ws/tasks/no-such-task/"

    with (
        pytest.raises(InvalidStatus) as refused,
        connect(url, additional_headers={"Cookie": f"{COOKIE}={cookie}"}, origin=Origin(FOREIGN_ORIGIN)),
    ):
        pass

    assert refused.value.response.status_code == 403


# ------------------------------------------------------------------------------------------ production


class Browser:
    """A browser on the production orchestrator, behind the ingress: its cookies travel by hand, since
    the Secure ones would not over the test's plain HTTP."""

    def __init__(self, production: Production, cookies: dict[str, str]) -> None:
        self.production = production
        self.cookies = dict(cookies)

    @property
    def origin(self) -> str:
        """The portal's origin as the browser sees it (HTTPS, the ingress's scheme)."""
        return self.production.url.replace("http://", "https://", 1)

    def request(self, method: str, path: str, **headers: str) -> requests.Response:
        """``method`` on ``path``; an unsafe one carries the CSRF token (as its form's hidden field)."""
        data = None
        if method != "GET" and CSRF_COOKIE in self.cookies:
            data = {"csrfmiddlewaretoken": self.cookies[CSRF_COOKIE]}
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        response = requests.request(
            method,
            f"{self.production.url}{path}",
            data=data,
            headers={**BEHIND_THE_INGRESS, "Cookie": cookie, **headers},
            allow_redirects=False,
            timeout=60,
        )
        for name, morsel in set_cookies(response).items():
            self.cookies[name] = morsel.value
        return response


def set_cookies(response: requests.Response) -> SimpleCookie:
    """The cookies a response sets, with their attributes."""
    jar: SimpleCookie = SimpleCookie()
    for header in response.raw.headers.getlist("Set-Cookie"):
        jar.load(header)
    return jar


@pytest.fixture(scope="module")
def alice_in_production(world: World, production_orchestrator: Production) -> Browser:
    """alice signed in to the production portal (a session as its login records one), with a CSRF
    cookie from her first page."""
    cookie = production_cookie(production_orchestrator, world, ["USER", "vdc:demo"], "alice")
    browser = Browser(production_orchestrator, {COOKIE: cookie})
    assert browser.request("GET", "/vdc/demo/").status_code == 200
    assert CSRF_COOKIE in browser.cookies
    return browser


def directives(policy: str) -> dict[str, list[str]]:
    parsed = (part.split() for part in policy.split(";") if part.strip())
    return {words[0]: words[1:] for words in parsed}


def assert_secure_headers(response: requests.Response, where: str) -> None:
    policy = directives(response.headers.get("Content-Security-Policy", ""))
    scripts = policy.get("script-src", policy.get("default-src"))
    assert scripts == ["'self'"], (where, policy)
    assert not {"'unsafe-inline'", "'unsafe-eval'"} & set(policy["default-src"]), where
    assert policy["frame-ancestors"] == ["'none'"], where
    assert policy["object-src"] == ["'none'"], where
    assert response.headers["X-Frame-Options"] == "DENY", where
    assert response.headers["X-Content-Type-Options"] == "nosniff", where
    assert response.headers["Referrer-Policy"] == "same-origin", where
    hsts = dict(
        part.strip().partition("=")[::2] for part in response.headers["Strict-Transport-Security"].split(";")
    )
    assert int(hsts["max-age"]) >= 365 * 86400, where
    assert "includeSubDomains" in hsts, where


@pytest.mark.parametrize("path", [route.path for route in ROUTES])
def test_every_page_carries_the_security_headers_in_production(
    alice_in_production: Browser, path: str
) -> None:
    route = next(route for route in ROUTES if route.path == path)
    for values in (REAL, NOTHING):  # a page with something on it, and the page saying there is nothing
        page = path_of(route, values)
        response = alice_in_production.request("GET", page)
        assert response.status_code < 500, (page, response.text[:2000])
        assert_secure_headers(response, page)


def test_signed_out_pages_and_refusals_carry_them_too(production_orchestrator: Production) -> None:
    signed_out = Browser(production_orchestrator, {})
    answers = {
        "the start page, signed out": signed_out.request("GET", "/"),
        "a URL that does not exist": signed_out.request("GET", "/no-such-page/"),
        "a form refused by the CSRF check": signed_out.request("POST", "/logout/"),
    }
    assert answers["a form refused by the CSRF check"].status_code == 403
    for where, response in answers.items():
        assert_secure_headers(response, where)


def test_the_session_cookie_is_secure_http_only_and_same_site_lax_in_production(
    production_orchestrator: Production,
) -> None:
    """The login stores its state in the session: the first Set-Cookie of a session."""
    response = Browser(production_orchestrator, {}).request("GET", "/login/")

    assert response.status_code == 302
    session = set_cookies(response)[COOKIE]
    assert session["secure"] is True
    assert session["httponly"] is True
    assert session["samesite"] == "Lax"


def test_the_csrf_cookie_is_secure_and_same_site_lax_in_production(
    production_orchestrator: Production, world: World
) -> None:
    cookie = production_cookie(production_orchestrator, world, ["USER", "vdc:demo"], "alice")
    response = Browser(production_orchestrator, {COOKIE: cookie}).request("GET", "/vdc/demo/")

    csrf = set_cookies(response)[CSRF_COOKIE]
    assert csrf["secure"] is True
    assert csrf["samesite"] == "Lax"


# Where a form comes from, as its headers say, given the portal's HTTPS origin.
ELSEWHERE: dict[str, Callable[[str], dict[str, str]]] = {
    "no Referer and no Origin": lambda own: {},
    "a foreign Referer": lambda own: {"Referer": f"{FOREIGN_ORIGIN}/page"},
    "a foreign Origin": lambda own: {"Origin": FOREIGN_ORIGIN},
    "the portal's own host over plain HTTP": lambda own: {"Origin": own.replace("https://", "http://")},
}


@pytest.mark.parametrize("case", list(ELSEWHERE))
def test_over_https_a_form_with_its_token_is_refused_from_anywhere_but_the_portal(
    alice_in_production: Browser, case: str
) -> None:
    where = ELSEWHERE[case](alice_in_production.origin)

    response = alice_in_production.request("POST", "/vdc/nowhere/vms/new/", **where)  # with its token

    assert response.status_code == 403, case
    assert REFUSED_IN_WORDS in response.text


def test_over_https_a_form_with_its_token_from_the_portal_gets_past_the_check(
    alice_in_production: Browser,
) -> None:
    """The control: the same form from the portal's own pages reaches the view (which finds no VDC)."""
    own = alice_in_production.origin

    for where in ({"Origin": own}, {"Referer": f"{own}/vdc/demo/"}):
        response = alice_in_production.request("POST", "/vdc/nowhere/vms/new/", **where)
        assert response.status_code == 404, where


def test_plain_http_is_sent_to_https_in_production(production_orchestrator: Production) -> None:
    response = requests.get(f"{production_orchestrator.url}/vdc/demo/", allow_redirects=False, timeout=30)

    assert response.status_code == 301
    assert response.headers["Location"].startswith("https://")
