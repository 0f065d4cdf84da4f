"""Screenshots of the portal's main pages for a reviewer, in the folder `make test` names at its end.

Each page is opened as its user would open it (alice for her VDC, admin for the admin area), must
answer 200 with its heading, and is saved whole as ``<name>.png``, on a desktop and a narrow screen.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, ViewportSize

from tests.browser.conftest import LoginFn

# (file name, user, path): the seeded VDC demo holds web-1, VM 100 of zone-a.
PAGES = [
    ("dashboard", "alice", "/vdc/demo/"),
    ("vm-list", "alice", "/vdc/demo/vms/"),
    ("vm-create", "alice", "/vdc/demo/vms/new/"),
    ("vm-detail", "alice", "/vdc/demo/vms/zone-a/100/"),
    ("admin-hosts", "admin", "/admin/hosts/"),
    ("admin-vdc-edit", "admin", "/admin/vdcs/demo/edit/"),
]
NARROW: ViewportSize = {"width": 390, "height": 844}
# A screenshot smaller than this is a blank page.
MIN_BYTES = 10_000


@pytest.mark.parametrize(("name", "user", "path"), PAGES, ids=[p[0] for p in PAGES])
def test_a_screenshot_of_the_page(
    page: Page, login: LoginFn, screenshots: Path, name: str, user: str, path: str
) -> None:
    login(page, user, path)
    answer = page.goto(path)
    assert answer is not None
    assert answer.status == 200, f"{path} answered {answer.status}"
    assert page.locator("h1").count() >= 1, f"{path} has no heading"
    background = page.locator("header").first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background != "rgba(0, 0, 0, 0)", f"{path}: the portal's CSS did not style the page"
    desktop = screenshots / f"{name}.png"
    page.screenshot(path=str(desktop), full_page=True)
    page.set_viewport_size(NARROW)
    narrow = screenshots / f"{name}-narrow.png"
    page.screenshot(path=str(narrow), full_page=True)
    for shot in (desktop, narrow):
        assert shot.stat().st_size > MIN_BYTES, f"{shot} looks blank"
