"""Browser tests on the portal served from this process (``tests/portal/served.py``) on the light world
and Zitadel in memory, rather than on the devstack's world: pages, forms, htmx and the portal's scripts in
Debian's chromium, without the server, the identity provider's login or the agents (the world's browser tests
show those).

A test gets a fresh browser context on the served portal (``page``, its base URL the portal's) and signs it in
with ``signed_in(page, "alice", path)``: the session the portal's login records for the devstack's user, its
cookie set in the context, then ``path`` opened. The module's fixtures are the in-process portal's
(``tests/portal/light/conftest.py``): ``api`` for the GraphQL API as a user, ``acme`` for organization acme
with an allowance, ``bob_in_demo`` for bob a member of demo, ``gateway`` for demo's edge gateway with a rule
and a port forward, ``light`` for the zones.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from playwright.sync_api import Browser, Page, Response

from tests.browser.conftest import CONTEXT, TIMEOUT_MS, LoginFn, stale_css
from tests.orchestrator.inprocess import recorded_login
from tests.portal.light.conftest import (  # noqa: F401  (the in-process portal's fixtures, for this folder)
    acme,
    api,
    bob_in_demo,
    gateway,
    issuer,
    light,
    site,
    tenant_clusters,
    zitadel,
)
from tests.portal.served import LightPortal


@pytest.fixture(scope="module")
def portal(site: LightPortal) -> LightPortal:  # noqa: F811
    """The served portal, once its CSS is as current as its templates."""
    stale = stale_css()
    if stale:
        pytest.fail(f"{stale}: run `make install`, which rebuilds the portal's CSS")
    return site


@pytest.fixture
def page(browser: Browser, portal: LightPortal) -> Iterator[Page]:
    """A page of a fresh context whose relative URLs are the served portal's (not pytest-playwright's
    ``page``, whose context's base URL is the world's portal)."""
    context = browser.new_context(**CONTEXT, base_url=portal.url)
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    yield opened
    context.close()


@pytest.fixture
def signed_in(portal: LightPortal) -> LoginFn:
    """``signed_in(page, "alice", "/vdc/demo/")``: ``page``'s context holds the session the portal's login
    records for alice, and shows ``path`` (answering its response)."""

    def _signed_in(page: Page, username: str, path: str = "/") -> Response | None:
        cookie = settings.SESSION_COOKIE_NAME
        page.context.add_cookies([{"name": cookie, "value": recorded_login(username), "url": portal.url}])
        return page.goto(path)

    return _signed_in
