"""The portal's layout as a keyboard and a phone user meet it: the current page is marked in the top
navigation, keyboard focus shows on the dark header, one primary button style on tenant and admin
pages, and a resize of a running VM says at once that its profile cannot change (not after a submit).
Every page's fit on a 390 px phone and its binary units: test_screenshots.py."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LoginFn

NAV = "header nav[aria-label='Main']"


@pytest.mark.parametrize(
    ("user", "path", "current"),
    [
        ("alice", "/vdc/demo/", "Dashboard"),
        ("alice", "/vdc/demo/vms/", "Virtual machines"),
        ("alice", "/vdc/demo/vms/zone-a/100/", "Virtual machines"),
        ("admin", "/admin/hosts/", "Admin"),
    ],
)
def test_the_top_navigation_marks_the_current_page_for_screen_readers_and_eyes(
    page: Page, signed_in: LoginFn, user: str, path: str, current: str
) -> None:
    signed_in(page, user, path)
    page.goto(path)
    nav = page.locator(NAV)
    marked = nav.locator("a.nav-link[aria-current='page']")
    expect(marked).to_have_count(1)
    expect(marked).to_have_text(current)
    style = "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).textDecorationLine]"
    others = nav.locator("a.nav-link:not([aria-current])")
    assert others.count() >= 1
    assert marked.evaluate(style) != others.first.evaluate(style), "the current page looks like the others"


def test_keyboard_focus_shows_on_the_dark_header(page: Page, signed_in: LoginFn) -> None:
    signed_in(page, "alice", "/vdc/demo/")
    page.goto("/vdc/demo/")
    page.keyboard.press("Tab")  # the skip link
    page.keyboard.press("Tab")  # flex.plane, on the dark header
    focused = page.locator(f"{NAV} a").first
    expect(focused).to_be_focused()
    outline = focused.evaluate(
        "e => { const s = getComputedStyle(e); "
        "return [s.outlineStyle, parseFloat(s.outlineWidth), s.outlineColor]; }"
    )
    style, width, color = outline
    header = page.locator("header").evaluate("e => getComputedStyle(e).backgroundColor")
    assert style != "none", "no focus ring on the header"
    assert width >= 2, f"a {width}px focus ring is hard to see"
    assert color != header, "the focus ring has the header's colour"


def test_the_primary_button_looks_the_same_on_tenant_and_admin_pages(page: Page, signed_in: LoginFn) -> None:
    look = "e => { const s = getComputedStyle(e); return [s.backgroundColor, s.color, s.borderRadius]; }"
    signed_in(page, "admin", "/vdc/demo/vms/")
    page.goto("/vdc/demo/vms/")
    tenant = page.get_by_role("link", name="Create a virtual machine").evaluate(look)
    page.goto("/admin/vdcs/")
    admin = page.get_by_role("link", name="Add VDC").evaluate(look)
    page.goto("/admin/vdcs/new/")
    form = page.get_by_role("button", name="Add VDC").evaluate(look)
    assert tenant == admin == form


def test_a_running_vm_is_not_offered_a_profile_change_and_is_told_why(page: Page, signed_in: LoginFn) -> None:
    signed_in(page, "alice", "/vdc/demo/vms/zone-a/100/resize/")  # web-1, running
    page.goto("/vdc/demo/vms/zone-a/100/resize/")
    profile = page.get_by_label("Compute profile")
    expect(profile).to_be_disabled()
    expect(page.locator("[data-field='compute_profile']")).to_contain_text(
        "is running: stop it to move it to another compute profile"
    )
    expect(page.get_by_label("Disk size (GiB)")).to_be_enabled()
