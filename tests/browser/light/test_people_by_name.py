"""People and organizations by name in the browser (issue 37, item 2): the admin's Activity page and a VDC's
dashboard say who did what by name, the id beside it for the admin (a link to their records, its title); join
tokens say who made them; an owner's new VDC form names the organization.

Each page is saved at 1366 and 390 px wide (``people-<what>.png``, ``people-<what>-narrow.png``), where it
must not scroll sideways. Debian's chromium through Playwright, against the portal served in this process
on the light world.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from devstack.identity.claims import organisation_of, subject_of
from tests.apikit import Api
from tests.browser.conftest import LoginFn, shoot

SNAPSHOT = 'mutation { createSnapshot(vm: "zone-a/999999", name: "by-name") { errors { code } } }'
JOIN_TOKEN = 'mutation { createHostJoinToken(host: "named-node", zone: "zone-a") { errors { code } } }'


def alice_did_something(api: Api) -> None:
    answer = api(SNAPSHOT, user="alice", vdc="demo")
    assert answer.data["createSnapshot"]["errors"] == [{"code": "NOT_FOUND"}], answer.body


def test_the_activity_page_says_who_by_name_with_their_id_for_the_admin(
    page: Page, signed_in: LoginFn, api: Api, screenshots: Path
) -> None:
    alice_did_something(api)
    alice = subject_of("alice")
    signed_in(page, "admin", "/admin/activity/")
    page.goto(f"/admin/activity/?user={alice}")
    who = page.locator(f'[data-record] [data-person="{alice}"]').first
    expect(who).to_have_text("Alice Example")
    expect(who).to_have_attribute("title", f"Their records (user id {alice})")
    shoot(page, screenshots, "people-activity")

    page.goto("/admin/activity/")
    page.locator(f'[data-record] [data-person="{alice}"]').first.click()
    expect(page.get_by_label("User (subject)")).to_have_value(alice)
    expect(page.locator(f'[data-record]:not([data-subject="{alice}"])')).to_have_count(0)


def test_a_vdcs_dashboard_says_who_did_what_by_name(
    page: Page, signed_in: LoginFn, api: Api, screenshots: Path
) -> None:
    alice_did_something(api)
    signed_in(page, "alice", "/vdc/demo/")
    page.goto("/vdc/demo/")
    activity = page.locator("[data-vdc-activity]")
    who = activity.locator(f'[data-person="{subject_of("alice")}"]').first
    expect(who).to_have_text("Alice Example")
    expect(activity).not_to_contain_text(subject_of("alice"))
    shoot(page, screenshots, "people-dashboard")


def test_join_tokens_say_who_made_them_by_name(
    page: Page, signed_in: LoginFn, api: Api, screenshots: Path
) -> None:
    made = api(JOIN_TOKEN, user="admin")
    assert made.data["createHostJoinToken"]["errors"] == [], made.body
    signed_in(page, "admin", "/admin/hosts/")
    page.goto("/admin/hosts/")
    created_by = page.locator('td[data-label="Created by"]')
    expect(created_by.first).to_be_visible()
    expect(created_by.filter(has_text="Platform Admin").first).to_be_visible()
    expect(created_by.filter(has_text=subject_of("admin"))).to_have_count(0)
    page.locator("#tokens").scroll_into_view_if_needed()
    shoot(page, screenshots, "people-hosts")


def test_an_owners_new_vdc_form_names_the_organization(
    page: Page, signed_in: LoginFn, screenshots: Path
) -> None:
    acme = organisation_of("acme")[0]
    signed_in(page, "olivia", f"/admin/access/organizations/{acme}/vdcs/new/")
    page.goto(f"/admin/access/organizations/{acme}/vdcs/new/")
    expect(page.get_by_role("heading", level=1)).to_have_text("New VDC of organization acme")
    expect(page).to_have_title("New VDC of organization acme · Access · flex.plane")
    shoot(page, screenshots, "people-organization-vdc-new")
