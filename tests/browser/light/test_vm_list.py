"""The VM list in chromium (issue 37, item 8): alice reads each VM's addresses and compute profile, finds VMs
by an address as she types, starts one from its row, ticks several (the header's box ticks every one
shown) to start them and then to delete them
(the delete confirmed on a page naming each one, saying it cannot be undone), and the list says what
happened to each VM. The create form leaves the zone to placement ("Any zone" first, chosen), and a VM's
page shows the address its network card table shows. Screenshots of each page at 1366 and 390 px
(``item8-*``), none scrolling sideways on the phone.

Served from this process on the light world (``tests/browser/light/conftest.py``); the VMs of the list's
journey are put straight into the fake zones, tagged as flex.plane tags them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.apikit import Api
from tests.browser.conftest import LoginFn, shoot
from tests.portal.light.test_vm_list import tagged  # noqa: F401  (a fixture)
from tests.portal.served import LightPortal
from tests.vmkit import create, fake_vm, ok, present, vm_names

Make = Callable[..., str]


@pytest.fixture
def names(api: Api, site: LightPortal) -> Iterator[Callable[[str], str]]:
    with vm_names(api, site) as make:
        yield make


def _row(page: Page, ident: str) -> Locator:
    return page.locator(f"#vm-table tr[data-vm='{ident}']")


def test_alice_finds_vms_by_address_and_starts_and_deletes_several_at_once(
    page: Page,
    signed_in: LoginFn,
    screenshots: Path,
    site: LightPortal,
    tagged: Make,  # noqa: F811
) -> None:
    one = tagged("fleet-one", tags=";fp-cp-small;fp-ip-vfleet-10.88.0.11")
    two = tagged("fleet-two", zone="zone-b", tags=";fp-cp-medium;fp-ip-vfleet-10.88.0.12")
    solo = tagged("fleet-solo", tags=";fp-cp-small;fp-ip-vfleet-10.88.1.5")

    signed_in(page, "alice", "/vdc/demo/vms/")
    expect(_row(page, one).locator("[data-vm-addresses]")).to_have_text("10.88.0.11")
    expect(_row(page, two).locator("[data-vm-profile]")).to_have_text("medium")
    expect(page.locator("#vm-table thead")).to_contain_text("IP addresses")
    shoot(page, screenshots, "item8-vm-list")

    # The search filters as she types (htmx), by an address here.
    rows = page.locator("#vm-table tbody th[scope=row]")
    page.get_by_label("Search", exact=True).fill("10.88.0")
    expect(rows).to_have_text(["fleet-one", "fleet-two"])
    expect(page).to_have_url(re.compile(r"q=10\.88\.0"))

    # From a row: Start, at once.
    page.get_by_label("Search", exact=True).fill("fleet-solo")
    expect(rows).to_have_text(["fleet-solo"])
    _row(page, solo).get_by_role("button", name="Start fleet-solo").click()
    expect(page.locator("#messages")).to_contain_text("VM fleet-solo was started.")
    assert present(site, solo)["status"] == "running"
    expect(_row(page, solo).get_by_role("link", name="Stop… fleet-solo")).to_be_visible()

    # Several ticked: Start…, then Delete…, each on a page naming them.
    page.get_by_label("Search", exact=True).fill("10.88.0")
    expect(rows).to_have_text(["fleet-one", "fleet-two"])
    page.get_by_label("Select fleet-one").check()
    every = page.get_by_label("Select every virtual machine shown")
    expect(every).to_have_js_property("indeterminate", True)  # some ticked, not all
    every.check()
    expect(page.get_by_label("Select fleet-two")).to_be_checked()
    page.get_by_role("button", name="Start…").click()
    expect(page.get_by_role("heading", name="Start these 2 VMs?")).to_be_visible()
    page.get_by_role("button", name="Start 2 VMs").click()
    messages = page.locator("#messages")
    expect(messages).to_contain_text("VM fleet-one was started.")
    expect(messages).to_contain_text("VM fleet-two was started.")
    assert present(site, one)["status"] == present(site, two)["status"] == "running"

    page.get_by_label("Search", exact=True).fill("10.88.0")
    expect(rows).to_have_text(["fleet-one", "fleet-two"])
    page.get_by_label("Select fleet-one").check()
    page.get_by_label("Select fleet-two").check()
    page.get_by_role("button", name="Delete…").click()
    expect(page.get_by_role("heading", name="Delete these 2 VMs?")).to_be_visible()
    named = page.locator("[data-bulk-vms] li")
    expect(named).to_have_count(2)
    expect(named.nth(0)).to_contain_text("fleet-one")
    expect(named.nth(1)).to_contain_text("fleet-two")
    expect(page.locator("#confirm-explanation")).to_contain_text("This cannot be undone.")
    shoot(page, screenshots, "item8-bulk-delete")
    assert fake_vm(site, one) is not None  # asking deleted nothing

    page.get_by_role("button", name="Delete 2 VMs").click()
    expect(messages).to_contain_text("VM fleet-one was deleted.")
    expect(messages).to_contain_text("VM fleet-two was deleted.")
    expect(page.get_by_role("link", name="fleet-one", exact=True)).to_have_count(0)
    assert fake_vm(site, one) is None
    assert fake_vm(site, two) is None
    shoot(page, screenshots, "item8-vm-list-after")


def test_the_create_form_leaves_the_zone_to_placement_and_a_vms_page_shows_its_nics_address(
    page: Page,
    signed_in: LoginFn,
    screenshots: Path,
    api: Api,
    names: Callable[[str], str],
) -> None:
    signed_in(page, "alice", "/vdc/demo/vms/new/")
    zone = page.get_by_label("Zone")
    expect(zone).to_have_value("")
    expect(zone.locator("option").first).to_have_text("Any zone: placement chooses")
    shoot(page, screenshots, "item8-vm-new")

    made = ok(create(api, "alice", "demo", name=names("addr"), diskGb=10))
    zone_id, vmid = made["virtualMachine"]["id"].split("/")
    page.goto(f"/vdc/demo/vms/{zone_id}/{vmid}/")
    nic = page.locator("#vm-nics [data-nic-address]").first
    expect(nic).to_have_text(re.compile(r"^\d+\.\d+\.\d+\.\d+/\d+$"))
    address = nic.inner_text().split("/")[0]
    ips = page.locator("[data-vm-ips]")
    expect(ips).to_contain_text(address)
    expect(ips).not_to_contain_text("not reported")
    shoot(page, screenshots, "item8-vm-page")
