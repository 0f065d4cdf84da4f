"""Everyday details of the portal (issue 37, item 10): a favicon that is there, a zero quota said in words,
forms whose descriptions exist and whose first error takes the focus, a console titled with its VM's name,
an Activity page read a page at a time and downloaded as CSV.

Debian's chromium through Playwright, against the portal served in this process on the light world; the
seeded VDC demo holds web-1 (VM 100 of zone-a, running). A gateway's counters, read from its agent's
nftables: ``tests/browser/test_gateway_counters.py``, on the devstack's world.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Response, expect

from portal.activity import views as activity
from tests.apikit import Api
from tests.browser.conftest import LoginFn, shoot

VM_PAGE = "/vdc/demo/vms/zone-a/100/"
QUOTA = 'query { vdc(id: "demo") { quota { vms publicIps } } }'
SNAPSHOT = 'mutation { createSnapshot(vm: "zone-a/999999", name: "paged") { errors { code } } }'
UPDATE = 'mutation($input: VdcUpdateInput!) { updateVdc(id: "demo", input: $input) { errors { message } } }'
# Every element an aria-describedby names, which is not in the document.
DANGLING = """() => [...document.querySelectorAll('[aria-describedby]')].flatMap(e =>
  e.getAttribute('aria-describedby').split(/\\s+/).filter(id => id && !document.getElementById(id))
    .map(id => `${e.id || e.tagName}: ${id}`))"""


@contextmanager
def zero_quota(api: Api) -> Iterator[dict[str, Any]]:
    """VDC demo allows no VMs and no public IPs (it holds web-1 and db-1, no public IP); as it was after."""
    before = api(QUOTA, user="admin").data["vdc"]["quota"]
    answer = api(UPDATE, user="admin", variables={"input": {"quota": {"vms": 0, "publicIps": 0}}})
    assert answer.data["updateVdc"]["errors"] == [], answer.body
    try:
        yield before
    finally:
        api(UPDATE, user="admin", variables={"input": {"quota": before}})


def test_no_page_asks_for_a_favicon_that_is_not_there(page: Page, signed_in: LoginFn) -> None:
    failed: list[str] = []

    def note(response: Response) -> None:
        if response.status >= 400:
            failed.append(f"{response.status} {response.url}")

    page.on("response", note)
    signed_in(page, "alice", "/vdc/demo/")
    page.goto("/vdc/demo/")
    icon = page.locator('link[rel="icon"]')
    expect(icon).to_have_count(1)
    href = icon.get_attribute("href")
    assert href is not None
    served = page.request.get(href)
    assert served.status == 200, href
    assert served.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in served.body()
    legacy = page.request.get("/favicon.ico")  # what browsers ask for on their own
    assert legacy.status == 200
    assert legacy.headers["content-type"].startswith("image/")
    assert failed == []


def test_a_zero_quota_reads_as_none_allowed_without_a_percentage(
    page: Page, signed_in: LoginFn, api: Api, screenshots: Path
) -> None:
    with zero_quota(api):
        signed_in(page, "alice", "/vdc/demo/")
        page.goto("/vdc/demo/")
        held = page.locator('li[data-quota="VMs"]')
        expect(held).to_contain_text(re.compile(r"[1-9]\d* of 0"))
        expect(held).to_contain_text("none allowed")
        expect(held).to_contain_text("over quota")
        expect(held).not_to_contain_text("%")
        addresses = page.locator('li[data-quota="public IPs"]')
        expect(addresses).to_contain_text("0 of 0")
        expect(addresses).to_contain_text("none allowed")
        expect(addresses).not_to_contain_text("%")
        expect(addresses).not_to_contain_text("over quota")
        shoot(page, screenshots, "dashboard-zero-quota")


def test_every_description_a_vm_pages_fields_name_is_on_the_page(page: Page, signed_in: LoginFn) -> None:
    signed_in(page, "alice", VM_PAGE)
    page.goto(VM_PAGE)
    expect(page.get_by_role("heading", name="Snapshots")).to_be_visible()
    memory = page.get_by_label("Include the VM's memory")
    expect(memory).to_have_accessible_description(re.compile("rolling back resumes it"))
    assert page.evaluate(DANGLING) == []


def test_a_form_shown_again_puts_the_focus_on_its_first_field_in_error(
    page: Page, signed_in: LoginFn, screenshots: Path
) -> None:
    signed_in(page, "alice", VM_PAGE)
    page.goto(VM_PAGE)
    form = page.locator('form[data-action="snapshot-create"]')
    form.get_by_label("Name").fill("9 lives")  # a snapshot's name starts with a letter
    form.get_by_role("button", name="Take a snapshot").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Take a snapshot of VM web-1")
    expect(page.locator('[data-error-for="name"]')).to_be_visible()
    expect(page.get_by_label("Name")).to_be_focused()
    assert page.evaluate(DANGLING) == []
    shoot(page, screenshots, "vm-snapshot-error")


def test_the_console_is_titled_with_the_vms_name_and_its_id_beside(page: Page, signed_in: LoginFn) -> None:
    signed_in(page, "alice", "/vdc/demo/console/zone-a/100/")
    page.goto("/vdc/demo/console/zone-a/100/")
    expect(page).to_have_title(re.compile(r"^Console of web-1\b"))
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_contain_text("Console of web-1")
    expect(heading).to_contain_text("zone-a/100")


def test_the_activity_goes_a_page_at_a_time_and_its_records_download_as_csv(
    page: Page, signed_in: LoginFn, api: Api, screenshots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(activity, "PAGE_SIZE", 3)  # the portal is served from this process
    for _ in range(4):
        api(SNAPSHOT, user="alice", vdc="demo")
    signed_in(page, "admin", "/admin/activity/")
    page.get_by_label("VDC").fill("demo")
    page.get_by_label("Operation").fill("createSnapshot")
    page.get_by_role("button", name="Filter").click()
    pages = page.get_by_role("navigation", name="Pages of the activity")
    expect(pages).to_contain_text(re.compile(r"Records 1\u20133 of \d+"))
    expect(page.locator("[data-record]")).to_have_count(3)
    shoot(page, screenshots, "activity-paged")
    pages.get_by_role("link", name="Older →").click()
    expect(pages).to_contain_text(re.compile(r"Records 4\u2013\d+ of \d+"))
    expect(page.get_by_label("VDC")).to_have_value("demo")  # the filters stay
    expect(pages.get_by_role("link", name="← Newer")).to_be_visible()

    with page.expect_download() as download:
        page.get_by_role("link", name="Download these records as CSV").click()
    saved = download.value.path()
    rows = list(csv.DictReader(io.StringIO(saved.read_text(encoding="utf-8"))))
    assert rows
    assert {(row["vdc"], row["operation"]) for row in rows} == {("demo", "createSnapshot")}
    assert download.value.suggested_filename.startswith("flexplane-activity-")


def test_the_zones_list_says_which_zones_have_an_external_network(page: Page, signed_in: LoginFn) -> None:
    signed_in(page, "admin", "/admin/zones/")
    expect(page.get_by_role("columnheader", name="External network")).to_be_visible()
    external = page.locator('tr[data-row="zone-a"] td[data-label="External network"]')
    expect(external).to_have_text("none: no edge gateways or public IPs")
