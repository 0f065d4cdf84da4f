"""Edge gateways in the browser: alice allocates a public IP, forwards port 8080 to her VM and sees the
forward listed, and on her VM's page.

Debian's chromium through Playwright, against the world's portal; zone-a gets an external network for the
test (on bridges this machine gets as a node would have them, where the world's agents build the gateway).
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from devstack.world import World
from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn
from tests.gatewaykit import ZONE, bridge, clean_gateway, demo_gateway, external_network, unbridge, vnets_of
from tests.vmkit import create, vm_names

PUBLIC = re.compile(r"Public IP (203\.0\.113\.\d+) is yours in zone zone-a\.")


def test_alice_allocates_a_public_ip_forwards_port_8080_to_her_vm_and_sees_it_listed(
    page: Page, login: LoginFn, world: World, api: GraphQL, screenshots: Path
) -> None:
    with demo_gateway(), external_network(api, world, "b"), vm_names(api, world) as names:
        vm_name = names("site")
        made = create(api, "alice", "demo", name=vm_name)
        assert made["errors"] == [], made["errors"]
        vm = made["virtualMachine"]["id"]
        vnets = vnets_of(api, "demo")
        for vnet in vnets:
            bridge(vnet)
        try:
            login(page, "alice", "/vdc/demo/")
            page.get_by_role("link", name="Public IPs", exact=True).click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("Public IPs")
            page.get_by_label("Zone").select_option(ZONE)
            page.get_by_role("button", name="Allocate public IP").click()
            said = page.locator("#messages")
            expect(said).to_contain_text(PUBLIC)
            match = PUBLIC.search(said.inner_text())
            assert match is not None
            address = match.group(1)
            expect(page.locator(f'tr[data-public-ip="{address}"]')).to_be_visible()

            page.get_by_role("link", name="Port forwards").first.click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("Port forwards")
            page.get_by_label("Public IP").select_option(address)
            page.get_by_label("Protocol").select_option("tcp")
            page.get_by_label("Public port").fill("8080")
            to_vm = page.get_by_label("To VM")
            target = to_vm.locator("option", has_text=f"{vm_name} (").first.get_attribute("value")
            assert target is not None
            to_vm.select_option(target)
            page.get_by_label("VM port (optional)").fill("80")
            page.get_by_role("button", name="Forward port").click()
            expect(page.locator("#messages")).to_contain_text(f"Port 8080/tcp of {address} now reaches")
            row = page.locator(f'tr[data-forward="{address}:8080/tcp"]')
            expect(row.locator("[data-to]")).to_contain_text(vm_name)
            expect(row.locator("[data-to-port]")).to_have_text("80")
            page.screenshot(path=str(screenshots / "gateway-port-forward.png"), full_page=True)

            page.goto(f"/vdc/demo/vms/{vm}/")
            expect(page.locator(f'[data-vm-forward="{address}:8080/tcp"]')).to_contain_text(f"{address}:8080")
        finally:
            clean_gateway(api, "demo")
            for vnet in vnets:
                unbridge(vnet)
