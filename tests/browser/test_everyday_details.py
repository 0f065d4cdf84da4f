"""Everyday details of the portal (issue 37, item 10): a favicon that is there, a zero quota said in words,
forms whose descriptions exist and whose first error takes the focus, a console titled with its VM's name.

Debian's chromium through Playwright, against the world's portal; the seeded VDC demo holds web-1 (VM 100
of zone-a, running).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, Response, ViewportSize, expect

from devstack.world import World
from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn
from tests.gatewaykit import ZONE, bridge, clean_gateway, demo_gateway, external_network, unbridge, vnets_of

VM_PAGE = "/vdc/demo/vms/zone-a/100/"
# How long an edge gateway may take to be built by its agent once a public IP is allocated.
GATEWAY_BUILT = 60.0
QUOTA = 'query { vdc(id: "demo") { quota { vms publicIps } } }'
UPDATE = 'mutation($input: VdcUpdateInput!) { updateVdc(id: "demo", input: $input) { errors { message } } }'
NARROW: ViewportSize = {"width": 390, "height": 844}
ALLOCATE = (
    "mutation($zone: String) { allocatePublicIp(zone: $zone) { publicIp { address } errors { message } } }"
)
# A gateway's counter as the page says it: a size in binary units, then its packets counted.
READING = re.compile(r"^(inbound|outbound|dropped) \d+(\.\d)? (B|KiB|MiB|GiB|TiB|PiB) \([\d,]+ packets?\)$")
# Every element an aria-describedby names, which is not in the document.
DANGLING = """() => [...document.querySelectorAll('[aria-describedby]')].flatMap(e =>
  e.getAttribute('aria-describedby').split(/\\s+/).filter(id => id && !document.getElementById(id))
    .map(id => `${e.id || e.tagName}: ${id}`))"""


def shoot(page: Page, screenshots: Path, name: str) -> None:
    """The page as it is now, on the desktop and on a 390 px phone (where it must not scroll sideways)."""
    page.screenshot(path=str(screenshots / f"{name}.png"), full_page=True)
    desktop = page.viewport_size
    page.set_viewport_size(NARROW)
    page.screenshot(path=str(screenshots / f"{name}-narrow.png"), full_page=True)
    scroll, client = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= client, f"{name} is {scroll} px wide on a {client} px phone"
    if desktop is not None:
        page.set_viewport_size(desktop)


@contextmanager
def zero_quota(api: GraphQL) -> Iterator[dict[str, Any]]:
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
    page: Page, signed_in: LoginFn, api: GraphQL, screenshots: Path
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


def test_a_gateways_counters_read_in_binary_units_and_counted_packets(
    page: Page, signed_in: LoginFn, api: GraphQL, world: World, screenshots: Path
) -> None:
    with demo_gateway(), external_network(api, world, "d"):
        vnets = vnets_of(api, "demo")  # the gateway's legs: the bridges of demo's VNets on this machine
        for vnet in vnets:
            bridge(vnet)
        try:
            made = api(ALLOCATE, user="alice", vdc="demo", variables={"zone": ZONE}).data["allocatePublicIp"]
            assert made["errors"] == [], made["errors"]
            signed_in(page, "alice", "/vdc/demo/gateway-firewall/")
            counters = page.locator(f'[data-gateway="{ZONE}"] [data-counters]')
            # The agent builds the gateway after the allocation answered (slower on a busy machine).
            deadline = time.monotonic() + GATEWAY_BUILT
            while True:
                page.goto("/vdc/demo/gateway-firewall/")
                if counters.count() or time.monotonic() > deadline:
                    break
                page.wait_for_timeout(500)
            expect(counters).to_be_visible()
            readings = [r.strip() for r in counters.locator("[data-counter]").all_inner_texts()]
            assert {r.split()[0] for r in readings} >= {"inbound", "outbound", "dropped"}, readings
            assert all(READING.match(r) for r in readings), readings
            said = counters.inner_text()
            assert re.search(r"\d{4}", said) is None, said  # 1,234: thousands separated
            assert "_bytes" not in said
            assert "_packets" not in said
            shoot(page, screenshots, "gateway-firewall-counters")
        finally:
            clean_gateway(api, "demo")
            for vnet in vnets:
                unbridge(vnet)


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
