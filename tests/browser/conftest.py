"""Browser tests: Playwright driving Debian's chromium against the world's portal (this folder) or the
portal served from the test's process on the light world (``light/``: pages, forms and scripts without a
world).

`make install` (and `make test`) puts Debian's chromium at /usr/bin/chromium; Playwright never
downloads a browser of its own here (`playwright install` fails on these machines). Every test
in this folder is marked ``browser``; `make test` runs them with the rest, ``-m browser`` alone.

Each test gets a fresh browser context (pytest-playwright's ``page``), so no login leaks from
one test into the next; a test that needs a second user opens another context with
``new_context`` and logs it in with ``login``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, Response, ViewportSize, expect

from devstack import seed
from devstack.world import World

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags chromium keeps dialling Google's hosts, which this
# machine's closed network refuses; without --no-sandbox it does not start as root.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
# Where the screenshots for a reviewer go; `make test` prints this folder at the end.
SCREENSHOTS = ROOT / ".scratch" / "screenshots"
# The portal's CSS as `make install` builds it, and the folders Tailwind reads its classes from.
CSS = ROOT / "portal" / "theme" / "static" / "css" / "dist" / "styles.css"
CSS_SOURCES = ("templates", "portal", "static")
HERE = Path(__file__).resolve().parent
# A page of the portal, the identity provider's login and the way back take a few requests each.
TIMEOUT_MS = 15_000

# The sizes of the screenshots: a laptop's screen and a phone's.
DESKTOP: ViewportSize = {"width": 1366, "height": 768}
NARROW: ViewportSize = {"width": 390, "height": 844}
SIDEWAYS = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
# Every context's window and language.
CONTEXT: dict[str, Any] = {"viewport": {"width": 1280, "height": 860}, "locale": "en-US"}

# Signs a page in (and may answer the response of the page it then shows).
LoginFn = Callable[..., Response | None]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``browser`` (the hook sees the whole session's items)."""
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Debian's chromium, with the flags that make it start quietly on these machines."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make install`, which installs Debian's chromium")
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


def stale_css() -> str | None:
    """Why the built CSS would not style the pages as their templates say (None: it is current)."""
    if not CSS.exists():
        return f"{CSS.relative_to(ROOT)} is not built"
    built = CSS.stat().st_mtime
    sources = [p for d in CSS_SOURCES for p in (ROOT / d).rglob("*") if p.suffix in {".html", ".py", ".js"}]
    newer = [p for p in sources if "node_modules" not in p.parts and p.stat().st_mtime > built]
    if newer:
        return f"{CSS.relative_to(ROOT)} is older than {newer[0].relative_to(ROOT)}"
    return None


@pytest.fixture(scope="session")
def base_url(world: World) -> str:
    """The portal of the session's world: ``page.goto("/vdc/demo/")`` resolves against it.

    Tailwind keeps only the classes it found in the templates when it built the CSS: pages
    checked (and screenshots taken) with an older build would not look as they do for users.
    """
    stale = stale_css()
    if stale:
        pytest.fail(f"{stale}: run `make install`, which rebuilds the portal's CSS")
    return world.url


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, **CONTEXT}


@pytest.fixture
def page(page: Page) -> Page:
    page.set_default_timeout(TIMEOUT_MS)
    return page


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def _password(username: str) -> str:
    for user in seed.USERS:
        if user["username"] == username:
            return str(user["password"])
    raise ValueError(f"{username!r} is not a devstack user (admin, alice, bob)")


def log_in(page: Page, base_url: str, username: str, next_path: str = "/") -> None:
    """Sign in through the portal's login and the identity provider's own form, landing on ``next_path``.

    The portal sends the browser to the issuer (authorization code with PKCE); the dev identity
    provider shows its real login form; after it, the portal's callback sets the signed session
    and redirects to ``next_path``.
    """
    page.goto(f"/login/?{urlencode({'next': next_path})}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(_password(username))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile("^" + re.escape(base_url)), timeout=TIMEOUT_MS)
    expect(page.get_by_label("Password")).to_have_count(0)


@pytest.fixture
def login(base_url: str) -> LoginFn:
    """``login(page, "alice")``: sign ``page``'s context in as a devstack user (password = username)."""

    def _login(page: Page, username: str, next_path: str = "/") -> None:
        log_in(page, base_url, username, next_path)

    return _login


@pytest.fixture(scope="module")
def kept_sessions() -> dict[str, list[Any]]:
    """The portal's session cookie of each user a module's pages signed in, by user name."""
    return {}


@pytest.fixture
def signed_in(base_url: str, kept_sessions: dict[str, list[Any]]) -> LoginFn:
    """``signed_in(page, "alice")``: ``page``'s context holds alice's portal session: the one her first
    login of the module set (through the login and the identity provider's form, as ``login``), for the
    tests of pages rather than of the login (a session outlives a module's minutes, the admin's renewal
    window included)."""

    def _signed_in(page: Page, username: str, next_path: str = "/") -> None:
        if username in kept_sessions:
            page.context.add_cookies(kept_sessions[username])
            return
        log_in(page, base_url, username, next_path)
        kept_sessions[username] = [c for c in page.context.cookies() if c["name"] == "sessionid"]

    return _signed_in


def assert_not_found(page: Page, path: str) -> None:
    """Going to ``path`` answers 404, and the page says it found nothing."""
    answer = page.goto(path)
    assert answer is not None
    assert answer.status == 404, path
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()


def shoot(page: Page, screenshots: Path, name: str, *, fits: bool = True) -> None:
    """The page as it is now, whole, at 1366 px and on a 390 px phone (``<name>.png``, ``<name>-narrow.png``),
    where it must not scroll sideways unless it need not (``fits=False``); left at 1366 px."""
    for size, suffix in ((DESKTOP, ""), (NARROW, "-narrow")):
        page.set_viewport_size(size)
        page.screenshot(path=str(screenshots / f"{name}{suffix}.png"), full_page=True)
    scroll, client = page.evaluate(SIDEWAYS)
    assert not fits or scroll <= client, f"{page.url} is {scroll} px wide on a {client} px phone"
    page.set_viewport_size(DESKTOP)
