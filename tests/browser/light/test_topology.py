"""A picture of the VDC (issue 37, item 9): from the dashboard to the topology, demo drawn zone by zone with
its edge gateway, two networks, a VM on both, a tenant cluster's workers framed together and the seeded VMs
on none; a VM's box opens its page. Screenshots ``topology.png`` and ``topology-narrow.png`` (the drawing
scrolls in its own box on a phone, the page does not).

Debian's chromium through Playwright, against the portal served in this process on the light world; what
the drawing holds is ``tests/portal/light/test_topology.py``'s ``scene``.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.apikit import Api
from tests.browser.conftest import NARROW, LoginFn, shoot
from tests.orchestrator.fakekube import FakeClusterApi
from tests.portal.light.conftest import Gateway
from tests.portal.light.test_topology import scene
from tests.portal.served import LightPortal

# The drawing's width against its box's on a phone: it scrolls there, inside the box.
SCROLLS = "e => [e.scrollWidth, e.clientWidth]"


def test_the_topology_draws_demo_and_a_vms_box_opens_its_page(
    page: Page,
    signed_in: LoginFn,
    api: Api,
    site: LightPortal,
    tenant_clusters: FakeClusterApi,
    gateway: Gateway,
    screenshots: Path,
) -> None:
    with scene(api, site, tenant_clusters, gateway) as made:
        signed_in(page, "alice", "/vdc/demo/")
        page.get_by_role("link", name="See the VDC drawn").click()
        expect(page).to_have_url(re.compile(r"/vdc/demo/topology/$"))
        expect(page.get_by_role("heading", name="Zone zone-a")).to_be_visible()
        zone_a = page.locator('[data-topology-zone="zone-a"] svg[data-topology-drawing]')
        expect(zone_a).to_be_visible()
        expect(zone_a.locator("[data-topology-gateway]")).to_contain_text(made.gateway.address)
        expect(zone_a.locator(f'[data-topology-cluster="{made.cluster}"]')).to_be_visible()
        # The text alternative: the same facts, as lists.
        page.get_by_text("Zone zone-a as a list").click()
        listed = page.locator('[data-topology-zone="zone-a"] details')
        expect(listed.get_by_role("link", name=f"Network {made.backend}")).to_be_visible()
        expect(listed.get_by_role("link", name=made.db)).to_be_visible()
        page.get_by_text("Zone zone-a as a list").click()
        # Every label fits its box: no text is drawn past the right edge of the VM it names.
        spills = zone_a.evaluate(
            """svg => [...svg.querySelectorAll('[data-topology-vm]')].flatMap(a => {
                 const box = a.querySelector('rect').getBBox();
                 return [...a.querySelectorAll('text')].filter(t => {
                   const b = t.getBBox(); return b.x + b.width > box.x + box.width - 2;
                 }).map(t => t.textContent);
               })"""
        )
        assert spills == [], spills
        shoot(page, screenshots, "topology")
        page.set_viewport_size(NARROW)
        box = page.locator('[data-topology-zone="zone-a"] .overflow-x-auto')
        inner, outer = box.evaluate(SCROLLS)
        assert inner > outer, "on a phone the drawing keeps a readable size and scrolls in its box"
        db = zone_a.locator(f'[data-topology-vm="{made.vm_ids[made.db]}"]')
        db.scroll_into_view_if_needed()
        db.click()
        zone, vmid = made.vm_ids[made.db].split("/")
        expect(page).to_have_url(re.compile(rf"/vdc/demo/vms/{zone}/{vmid}/$"))
        expect(page.get_by_role("heading", level=1)).to_contain_text(made.db)
