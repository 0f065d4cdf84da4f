"""The portal's CSRF and Origin checks, every URL in this process: an unsafe request (POST, PUT, PATCH,
DELETE) that lacks the CSRF token, or that comes from a foreign Origin, is refused with 403 and the page
saying why, before its view runs, and nothing reaches Proxmox.

The checks are Django's middleware, which runs here exactly as in the orchestrator (Django's test client
through the portal's own middleware stack, the session its login records); the views behind them run on
the light world (tests/orchestrator/lightworld.py). The control, that the same request with the token from
the portal's own Origin gets past the check, and the production headers and cookies run against the
devstack (test_portal_security.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from tests.orchestrator.inprocess import LocalIssuer, in_process, signed_in
from tests.orchestrator.lightworld import LightWorld
from tests.promises import RecordFigure
from tests.security.test_portal_security import (
    FOREIGN_ORIGIN,
    NOTHING,
    REFUSED_IN_WORDS,
    ROUTES,
    SUITE,
    UNSAFE,
    path_of,
)

pytestmark = pytest.mark.promise("portal-security")


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightWorld]:
    """The portal in this process, on the light world."""
    issuer = LocalIssuer()
    try:
        with (
            LightWorld(tmp_path_factory.mktemp("light")) as world,
            in_process(issuer, world.kube, world.proxmox),
        ):
            yield world
    finally:
        issuer.stop()


@pytest.fixture(scope="module")
def alice(light: LightWorld) -> tuple[Client, str]:
    """Alice's browser, and the CSRF token a page with a form gave it."""
    browser = signed_in("alice")
    page = browser.get("/vdc/demo/vms/")
    assert page.status_code == 200
    return browser, browser.cookies["csrftoken"].value


@pytest.fixture(scope="module")
def refused(record_figure: RecordFigure) -> Iterator[list[str]]:
    """The unsafe requests refused for want of a token or for their Origin, for the summary."""
    found: list[str] = []
    yield found
    record_figure(SUITE, "unsafe requests refused (no token, foreign Origin)", len(found))
    record_figure(SUITE, "portal URLs checked", len(ROUTES))


def writes(light: LightWorld) -> int:
    """How many requests that change something the fake zones have received."""
    fakes = light.fakes
    return sum(
        fakes.on_loop(lambda fake=fake: sum(1 for method, _, _ in fake.pve.requests if method != "GET"))
        for fake in fakes.zones.values()
    )


@pytest.mark.parametrize("path", [route.path for route in ROUTES])
def test_an_unsafe_request_without_the_token_or_from_a_foreign_origin_is_refused(
    light: LightWorld, alice: tuple[Client, str], refused: list[str], path: str
) -> None:
    browser, token = alice
    route = next(route for route in ROUTES if route.path == path)
    url = path_of(route, NOTHING)
    before = writes(light)
    for method in UNSAFE:
        send = getattr(browser, method.lower())
        without_token = send(url, {"confirm": "yes"})
        foreign = send(
            url,
            {"csrfmiddlewaretoken": token, "confirm": "yes"},
            headers={"X-CSRFToken": token, "Origin": FOREIGN_ORIGIN},
        )
        for response in (without_token, foreign):
            assert response.status_code == 403, (method, path, response.status_code)
            assert REFUSED_IN_WORDS in response.content.decode()
            refused.append(f"{method} {path}")
    assert writes(light) == before
