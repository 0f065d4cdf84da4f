"""Networks in the browser: alice creates a network, creates a VM on it with the address she chose, and
sees that NIC on the VM's page; bob's session sees none of it.

Debian's chromium through Playwright, against the world's portal; each user signs in through the dev
identity provider's real login form, in a browser context of their own. What the pages did is checked in
the fake Proxmox too (the VM's config).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from devstack.world import World
from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn, assert_not_found
from tests.vmkit import named, present, vm_names

# Cloning, configuring and starting a VM takes a few seconds in the fake zones.
CREATE_MS = 90_000
DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { message } } }"


MAC = re.compile(r"^([0-9A-F]{2}:){5}[0-9A-F]{2}$", re.I)


def new_network(page: Page, name: str, cidr: str) -> None:
    """Through the Networks page's create form, as alice fills it in."""
    page.get_by_role("link", name="Networks", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Networks")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Zone").select_option("zone-a")
    page.get_by_label("Addresses (CIDR)").fill(cidr)
    page.get_by_role("button", name="Create network").click()
    said = f"Network {name} ({cidr}) is ready in zone zone-a."
    expect(page.locator("#messages")).to_contain_text(said)
    row = page.locator(f'tr[data-network="zone-a/{name}"]')
    expect(row.locator("[data-cidr]")).to_have_text(cidr)
    expect(row.locator("[data-gateway]")).to_have_text(cidr.replace(".0/24", ".1"))


def new_vm_on(page: Page, vm_name: str, network: str, cidr: str, address: str) -> None:
    """Through the create form: a VM whose one NIC is on ``network`` with ``address``."""
    page.get_by_role("link", name="Virtual machines", exact=True).click()
    page.get_by_role("link", name="Create a virtual machine").first.click()
    page.get_by_label("Name").fill(vm_name)
    page.get_by_label("Image").select_option("debian-12")
    page.get_by_label("Compute profile").select_option("small")
    page.get_by_label("Zone").select_option("zone-a")
    default = page.get_by_label(re.compile("^default: "))
    expect(default).to_be_checked()
    default.uncheck()
    page.get_by_label(f"{network} ({cidr})").check()
    page.get_by_label(f"Address on {network}").fill(address)
    page.get_by_role("button", name="Create virtual machine").click()
    page.wait_for_url(re.compile(r"/vdc/demo/vms/zone-a/\d+/\?task="), timeout=CREATE_MS)
    expect(page.get_by_role("heading", level=1)).to_contain_text(vm_name)


def bob_sees_none_of_it(
    browser: Browser, login: LoginFn, world: World, name: str, cidr: str, vm: str
) -> None:
    """bob's own session: his networks page lists none of alice's; her network's and VM's URLs are 404."""
    context = browser.new_context(base_url=world.url)
    try:
        his = context.new_page()
        login(his, "bob", "/vdc/other/networks/")
        expect(his.get_by_role("heading", level=1)).to_contain_text("Networks")
        expect(his.locator("main")).not_to_contain_text(name)
        expect(his.locator("main")).not_to_contain_text(cidr)
        for path in (
            "/vdc/demo/networks/",
            f"/vdc/other/networks/zone-a/{name}/delete/",
            f"/vdc/demo/vms/{vm}/",
        ):
            assert_not_found(his, path)
            expect(his.locator("main")).not_to_contain_text(cidr)
    finally:
        context.close()


def test_alice_makes_a_network_and_a_vm_on_it_with_her_address_and_bob_sees_none_of_it(
    page: Page, browser: Browser, login: LoginFn, world: World, api: GraphQL, screenshots: Path
) -> None:
    octets = uuid.uuid4().bytes
    name, cidr = f"b{uuid.uuid4().hex[:8]}", f"10.{100 + octets[0] % 100}.{octets[1]}.0/24"
    address = cidr.replace(".0/24", ".50")
    try:
        with vm_names(api, world) as names:  # its VMs go at its end, before the network
            vm_name = names("on-net")
            login(page, "alice", "/vdc/demo/")
            new_network(page, name, cidr)
            new_vm_on(page, vm_name, name, cidr, address)

            nic = page.locator('#vm-nics tr[data-nic="net0"]')
            expect(nic.locator("[data-nic-network]")).to_have_text(name)
            expect(nic.locator("[data-nic-address]")).to_have_text(f"{address}/24")
            expect(nic.locator("[data-nic-mac]")).to_have_text(MAC)
            expect(page.locator('#vm-nics tr[data-nic="net1"]')).to_have_count(0)
            status = page.locator("[data-task-live] [data-task-field=status]")
            expect(status).to_have_text(re.compile("Succeeded"), timeout=CREATE_MS)
            page.screenshot(path=str(screenshots / "network-vm-nic.png"), full_page=True)
            ((zone, vmid),) = named(world, vm_name)
            assert present(world, f"{zone}/{vmid}")["config"]["ipconfig0"].startswith(f"ip={address}/24")

            bob_sees_none_of_it(browser, login, world, name, cidr, f"{zone}/{vmid}")
    finally:
        api(DELETE_NETWORK, user="admin", vdc="demo", variables={"id": f"zone-a/{name}"})
