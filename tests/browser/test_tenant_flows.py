"""A tenant's day in the browser: alice creates a VM and watches its task, stops it and deletes it;
bob cannot reach it.

Debian's chromium through Playwright, against the world's portal; each user signs in through the
dev identity provider's real login form, in a browser context of their own. What the pages did is
checked in the fake Proxmox too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from devstack.world import World
from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn, assert_not_found
from tests.vmkit import fake_vm, named, vm_names

# Cloning, configuring and starting a VM takes a few seconds in the fake zones.
CREATE_MS = 90_000


@pytest.fixture
def names(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    with vm_names(api, world) as make:
        yield make


def test_alice_creates_a_vm_watches_its_task_then_stops_and_deletes_it(
    page: Page, login: LoginFn, world: World, names: Callable[[str], str]
) -> None:
    name = names("browser")
    login(page, "alice", "/vdc/demo/vms/")
    page.get_by_role("link", name="Create a virtual machine").first.click()
    expect(page.get_by_role("heading", name=re.compile("New virtual machine"))).to_be_visible()

    page.get_by_label("Name").fill(name)
    page.get_by_label("Image").select_option("debian-12")
    quota = page.locator("#quota")
    page.get_by_label("Compute profile").select_option("large")
    expect(quota.locator('[data-quota="vcpus"] [data-asked]')).to_have_text("4")  # recomputed over htmx
    page.get_by_label("Compute profile").select_option("small")
    expect(quota.locator('[data-quota="vcpus"] [data-asked]')).to_have_text("1")
    page.get_by_label("Disk size (GiB)").fill("12")
    expect(quota.locator('[data-quota="disk_gb"] [data-asked]')).to_have_text("12 GiB")
    page.get_by_label("Zone").select_option("zone-a")
    page.get_by_role("button", name="Create virtual machine").click()

    page.wait_for_url(re.compile(r"/vdc/demo/vms/zone-a/\d+/\?task="), timeout=CREATE_MS)
    expect(page.get_by_role("heading", level=1)).to_contain_text(name)
    live = page.locator("[data-task-live]")
    expect(live.locator("[data-task-field=status]")).to_have_text(re.compile("Succeeded"), timeout=CREATE_MS)
    expect(page.locator("[data-placement-reasons] li").first).to_be_visible()
    ((zone, vmid),) = named(world, name)
    ident = f"{zone}/{vmid}"
    expect(page.locator("#vm-facts [data-vm-status]")).to_have_text(re.compile("running"))

    page.get_by_role("link", name="Stop…").click()
    expect(page.get_by_role("heading", name=f"Stop VM {name}?")).to_be_visible()
    page.get_by_role("button", name=f"Stop {name}").click()
    page.wait_for_url(re.compile(rf"/vdc/demo/vms/{zone}/{vmid}/\?task="))
    expect(page.locator("[data-task-live] [data-task-field=status]")).to_have_text(re.compile("Succeeded"))
    expect(page.locator("#vm-facts [data-vm-status]")).to_have_text(re.compile("stopped"))
    vm = fake_vm(world, ident)
    assert vm is not None
    assert vm["status"] == "stopped"

    page.get_by_role("link", name="Delete…").click()
    page.get_by_role("button", name=f"Delete {name}").click()
    page.wait_for_url(re.compile(r"/vdc/demo/vms/\?task="))
    expect(page.locator("#messages")).to_contain_text(f"VM {name} was deleted.")
    expect(page.locator("[data-task-live] [data-task-field=status]")).to_have_text(re.compile("Succeeded"))
    expect(page.get_by_role("link", name=name, exact=True)).to_have_count(0)
    assert fake_vm(world, ident) is None


def test_the_list_filters_as_alice_types(page: Page, login: LoginFn) -> None:
    login(page, "alice", "/vdc/demo/vms/")
    rows = page.locator("#vm-table tbody th[scope=row]")
    expect(rows.filter(has_text="db-1")).to_have_count(1)
    page.get_by_label("Search", exact=True).fill("web")
    expect(rows).to_have_text(["web-1", "web-2"])
    expect(page).to_have_url(re.compile(r"q=web"))
    page.get_by_label("Status").select_option("stopped")
    expect(rows).to_have_count(0)
    expect(page.locator("#vm-table")).to_contain_text("No virtual machine matches.")


def test_bob_cannot_reach_alices_vm(page: Page, login: LoginFn) -> None:
    login(page, "bob", "/vdc/other/vms/")
    expect(page.get_by_role("link", name="web-1")).to_have_count(0)

    assert_not_found(page, "/vdc/demo/vms/zone-a/100/")
    expect(page.locator("main")).not_to_contain_text("web-1")
    said = page.locator("main").inner_text()

    missing = page.goto("/vdc/demo/vms/zone-a/99999/")
    assert missing is not None
    assert missing.status == 404
    assert page.locator("main").inner_text() == said

    under_his = page.goto("/vdc/other/vms/zone-a/100/")
    assert under_his is not None
    assert under_his.status == 404
    expect(page.locator("main")).not_to_contain_text("web-1")
