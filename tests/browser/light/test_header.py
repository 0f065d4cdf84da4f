"""The header as people use it: the indicator of their tasks, live (running, and failed since they last
looked), opening a list of them by keyboard or pointer; the navigation in one row at 1366 px and behind a Menu
button on a phone; an organization owner's Organizations, and the admin's."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.apikit import Api
from tests.browser.conftest import DESKTOP, NARROW, SIDEWAYS, LoginFn, shoot
from tests.orchestrator.lightworld import LightWorld
from tests.portal.light.test_header_tasks import fail_a_start, starting_db_1

NAV = "header nav[aria-label='Main']"
# A poll every 5 s, and the answer: what the indicator says shows within this.
LIVE_MS = 12_000
# The header's parts that show, and where each one's top is (one row: all within a few pixels).
ROWS = """nav => [...nav.children]
  .flatMap(e => e.id === 'main-menu' ? [...e.children] : [e])
  .filter(e => e.getClientRects().length).map(e => Math.round(e.getBoundingClientRect().top))"""


def one_row(page: Page) -> bool:
    tops = page.locator(NAV).evaluate(ROWS)
    return max(tops) - min(tops) < 16


def test_the_tasks_indicator_counts_live_and_opens_a_list_of_links_by_keyboard(
    page: Page, signed_in: LoginFn, api: Api, light: LightWorld, screenshots: Path
) -> None:
    page.set_viewport_size(DESKTOP)
    signed_in(page, "alice", "/vdc/demo/")
    button = page.locator("#tasks-button")
    expect(button).to_have_attribute("aria-label", "Tasks: none running")
    expect(page.get_by_role("button", name="Tasks: none running")).to_be_visible()
    # A failure, then a start that takes a while: the indicator says so without a reload.
    fail_a_start(light, api)
    expect(button).to_have_attribute(
        "aria-label", "Tasks: none running, 1 failed since you last looked", timeout=LIVE_MS
    )
    expect(button.locator("[data-tasks-failed]")).to_have_text("1 failed")
    with starting_db_1(light, api, seconds=20):
        expect(button).to_have_attribute(
            "aria-label", "Tasks: 1 running, 1 failed since you last looked", timeout=LIVE_MS
        )
        assert one_row(page), "the header wraps at 1366 px"
        # Opened from the keyboard: the list links each task, the failure marked new; opening it is looking.
        button.focus()
        page.keyboard.press("Enter")
        panel = page.locator("#tasks-panel")
        expect(panel).to_be_visible()
        expect(page.locator("#tasks-button")).to_have_attribute("aria-expanded", "true")
        rows = panel.locator("[data-task-row]")
        expect(rows.first).to_have_attribute("data-task-state", "running")
        failed = panel.locator("[data-task-row][data-task-state='failed']").first
        expect(failed).to_contain_text("new")
        expect(failed).to_contain_text("Start db-1")
        expect(page.locator("#tasks-button")).to_have_attribute("aria-label", "Tasks: 1 running")
        expect(page.locator("#tasks-button")).to_be_focused()
        shoot(page, screenshots, "item11-tasks-open")
        page.keyboard.press("Tab")
        expect(rows.first.locator("a")).to_be_focused()
        page.keyboard.press("Escape")
        expect(panel).to_be_hidden()
        expect(page.locator("#tasks-button")).to_be_focused()
        expect(page.locator("#tasks-button")).to_have_attribute("aria-expanded", "false")
        # Seen: the failure is no longer counted, on this page or the next.
        page.reload()
        expect(page.locator("#tasks-button")).to_have_attribute("aria-label", "Tasks: 1 running")
        # A pointer opens it too, and a task's link leads to its page.
        page.locator("#tasks-button").click()
        page.locator("#tasks-panel [data-task-row][data-task-state='failed'] a").first.click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("Start of VM db-1")
        expect(page.get_by_text("Failed: start failed: no bootable disk")).to_be_visible()
    page.goto("/tasks/")
    expect(page.get_by_role("heading", name="Your tasks", level=1)).to_be_visible()
    shoot(page, screenshots, "item11-tasks-page")


def test_on_a_phone_the_navigation_folds_behind_a_menu_button_and_the_tasks_stay_in_view(
    page: Page, signed_in: LoginFn, screenshots: Path
) -> None:
    page.set_viewport_size(NARROW)
    signed_in(page, "alice", "/vdc/demo/")
    menu = page.get_by_role("button", name="Menu")
    expect(menu).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_role("link", name="Virtual machines")).to_be_hidden()
    expect(page.locator("#tasks-button")).to_be_visible()
    header = page.locator("header").bounding_box()
    assert header is not None
    assert header["height"] < 80, f"the folded header is {header['height']} px high"
    page.screenshot(path=str(screenshots / "item11-header-narrow.png"), full_page=True)
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("link", name="Virtual machines")).to_be_visible()
    expect(page.get_by_test_id("user-menu").get_by_text("Alice Example")).to_be_visible()
    scroll, client = page.evaluate(SIDEWAYS)
    assert scroll <= client
    page.screenshot(path=str(screenshots / "item11-header-menu-open-narrow.png"), full_page=True)
    page.get_by_role("link", name="Virtual machines").click()
    expect(page).to_have_url("/vdc/demo/vms/")
    # At 1366 px there is no Menu button: everything is in one row, the user menu too, even the admin's.
    page.set_viewport_size(DESKTOP)
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    assert one_row(page)
    signed_in(page, "admin", "/vdc/demo/vms/")
    expect(page.get_by_role("link", name="Access")).to_be_visible()
    assert one_row(page), "the admin's header wraps at 1366 px"
    shoot(page, screenshots, "item11-header-admin")


def test_an_owner_and_the_admin_reach_organizations_from_their_navigation(
    page: Page, signed_in: LoginFn, acme: str, screenshots: Path
) -> None:
    page.set_viewport_size(DESKTOP)
    signed_in(page, "olivia", "/")
    page.locator(NAV).get_by_role("link", name="Organizations").click()
    expect(page).to_have_url("/admin/access/organizations/")
    expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
    marked = page.locator(f"{NAV} a[aria-current='page']")
    expect(marked).to_have_count(1)
    expect(marked).to_have_text("Organizations")
    shoot(page, screenshots, "item4-owner-organizations")
    signed_in(page, "admin", "/admin/")
    card = page.get_by_role("link", name="Organizations 1 organization")
    expect(card).to_be_visible()
    shoot(page, screenshots, "item4-admin")
    page.locator("nav[aria-label='Admin']").get_by_role("link", name="Organizations").click()
    expect(page).to_have_url("/admin/access/organizations/")
    expect(page.locator(f"[data-row='{acme}']")).to_be_visible()
