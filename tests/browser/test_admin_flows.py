"""An admin's day in the browser: add a compute profile, allow it in a VDC, and its user sees it offered.

Debian's chromium through Playwright, against the world's portal; admin and alice sign in through
the dev identity provider's real login form, each in a browser context of their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn, assert_not_found

PROFILE = "browser-xl"


@pytest.fixture
def cleanup(api: GraphQL) -> Iterator[None]:
    """Whatever the test changed goes back: demo's allow-list, then the profile."""
    yield
    api(
        'mutation { updateVdc(id: "demo", input: {computeProfiles: ["small", "medium", "large"]}) '
        "{ errors { message } } }",
        user="admin",
    )
    api(f'mutation {{ deleteComputeProfile(name: "{PROFILE}") {{ errors {{ message }} }} }}', user="admin")


def test_an_admin_adds_a_compute_profile_that_alice_then_is_offered(
    page: Page, new_context: Callable[..., BrowserContext], login: LoginFn, cleanup: None
) -> None:
    login(page, "admin", "/admin/")
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Compute profiles").click()
    page.get_by_role("link", name="Add compute profile").click()
    page.get_by_label("Name").fill(PROFILE)
    page.get_by_label("vCPUs").fill("8")
    page.get_by_label("Memory (MiB)").fill("16384")
    page.get_by_label("Description").fill("8 vCPUs, 16 GiB")
    page.get_by_role("button", name="Add compute profile").click()
    expect(page.get_by_role("status")).to_contain_text(f"The compute profile '{PROFILE}' was added.")
    expect(page.get_by_role("row", name=PROFILE)).to_contain_text("16 GiB")

    page.get_by_role("navigation", name="Admin").get_by_role("link", name="VDCs").click()
    page.get_by_role("row", name="demo").get_by_role("link", name="Edit").click()
    page.get_by_role("group", name="Allowed compute profiles").get_by_label(PROFILE).check()
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_contain_text("The VDC 'demo' was saved.")

    alice = new_context().new_page()
    login(alice, "alice", "/vdc/demo/vms/new/")
    offered = alice.get_by_label("Compute profile")
    expect(offered.locator(f'option[value="{PROFILE}"]')).to_have_count(1)
    offered.select_option(PROFILE)
    expect(offered).to_have_value(PROFILE)


def test_a_bad_value_is_said_next_to_its_field_and_keyboard_only_works(page: Page, login: LoginFn) -> None:
    login(page, "admin", "/admin/compute-profiles/new/")
    page.get_by_label("Name").fill("Not Valid")
    page.keyboard.press("Tab")
    page.keyboard.type("2")
    page.keyboard.press("Tab")
    page.keyboard.type("2048")
    page.get_by_label("Name").press("Enter")
    name = page.get_by_label("Name")
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(name).to_have_accessible_description(re.compile("is not a catalog name"))


def test_alice_finds_no_admin_area(page: Page, login: LoginFn) -> None:
    login(page, "alice", "/vdc/demo/")
    expect(page.get_by_role("link", name="Admin")).to_have_count(0)
    assert_not_found(page, "/admin/")
