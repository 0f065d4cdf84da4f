"""Screenshots of every portal page for a reviewer, in the folder `make test` names at its end, from the
portal served in this process on the light world (a connected console's: test_console.py, on the world's).

Each page is opened as its user would open it (alice for her VDC, admin for the admin area), must
answer 200 with its heading, and is saved whole as ``<name>.png`` on a desktop and as
``<name>-narrow.png`` on a 390 px phone, where it must not scroll sideways: wide tables scroll in
their own box, and nothing else is wider than the screen.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page

from devstack.identity.claims import organisation_of, subject_of
from tests.browser.conftest import DESKTOP, NARROW, SIDEWAYS, LoginFn

# (file name, user, path): the seeded VDC demo holds web-1, VM 100 of zone-a (running).
PAGES = [
    ("home", "alice", "/"),
    ("dashboard", "alice", "/vdc/demo/"),
    ("vm-list", "alice", "/vdc/demo/vms/"),
    ("vm-create", "alice", "/vdc/demo/vms/new/"),
    ("vm-detail", "alice", "/vdc/demo/vms/zone-a/100/"),
    ("vm-resize", "alice", "/vdc/demo/vms/zone-a/100/resize/"),
    ("vm-delete", "alice", "/vdc/demo/vms/zone-a/100/delete/"),
    ("vm-attach-network", "alice", "/vdc/demo/vms/zone-a/100/nics/attach/"),
    ("vm-snapshot-new", "alice", "/vdc/demo/vms/zone-a/100/snapshots/new/"),
    ("networks", "alice", "/vdc/demo/networks/"),
    ("security-groups", "alice", "/vdc/demo/security-groups/"),
    ("security-group-new", "alice", "/vdc/demo/security-groups/new/"),
    ("security-group-edit", "alice", "/vdc/demo/security-groups/default/edit/"),
    ("security-group-delete", "alice", "/vdc/demo/security-groups/default/delete/"),
    ("gateway-firewall", "alice", "/vdc/demo/gateway-firewall/"),
    ("service-accounts", "alice", "/vdc/demo/service-accounts/"),
    ("admin", "admin", "/admin/"),
    ("admin-compute-profiles", "admin", "/admin/compute-profiles/"),
    ("admin-compute-profile-new", "admin", "/admin/compute-profiles/new/"),
    ("admin-compute-profile-edit", "admin", "/admin/compute-profiles/small/edit/"),
    ("admin-compute-profile-delete", "admin", "/admin/compute-profiles/small/delete/"),
    ("admin-storage-profiles", "admin", "/admin/storage-profiles/"),
    ("admin-storage-profile-new", "admin", "/admin/storage-profiles/new/"),
    ("admin-images", "admin", "/admin/images/"),
    ("admin-image-edit", "admin", "/admin/images/ubuntu-24.04/edit/"),
    ("admin-zones", "admin", "/admin/zones/"),
    ("admin-zone-new", "admin", "/admin/zones/new/"),
    ("admin-hosts", "admin", "/admin/hosts/"),
    ("admin-join-token", "admin", "/admin/hosts/join-token/"),
    ("admin-host-drain", "admin", "/admin/hosts/zone-a/pve1/drain/"),
    ("admin-vdcs", "admin", "/admin/vdcs/"),
    ("admin-vdc-new", "admin", "/admin/vdcs/new/"),
    ("admin-vdc-edit", "admin", "/admin/vdcs/demo/edit/"),
    # The confirmations that need no object made for them (test_confirmations.py saves the others').
    ("access-membership-revoke", "admin", f"/admin/access/users/{subject_of('alice')}/vdcs/demo/revoke/"),
    # People and organizations by name (test_people_by_name.py saves the pages with records and tokens).
    ("admin-activity", "admin", "/admin/activity/"),
    ("access-allowance", "admin", f"/admin/access/organizations/{organisation_of('acme')[0]}/allowance/"),
    ("access-vdc-new", "olivia", f"/admin/access/organizations/{organisation_of('acme')[0]}/vdcs/new/"),
]
# A screenshot smaller than this is a blank page.
MIN_BYTES = 10_000
# Sizes are binary everywhere (KiB, MiB, GiB): a decimal unit after a number is a page out of step.
DECIMAL_UNIT = re.compile(r"\d\s?(?:kB|KB|MB|GB|TB)\b")


@pytest.mark.parametrize(("name", "user", "path"), PAGES, ids=[p[0] for p in PAGES])
def test_a_screenshot_of_the_page_which_fits_a_phone(
    page: Page, signed_in: LoginFn, screenshots: Path, name: str, user: str, path: str
) -> None:
    page.set_viewport_size(DESKTOP)
    answer = signed_in(page, user, path)
    assert answer is not None
    assert answer.status == 200, f"{path} answered {answer.status}"
    assert page.locator("h1").count() >= 1, f"{path} has no heading"
    background = page.locator("header").first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background != "rgba(0, 0, 0, 0)", f"{path}: the portal's CSS did not style the page"
    desktop = screenshots / f"{name}.png"
    page.screenshot(path=str(desktop), full_page=True)

    page.set_viewport_size(NARROW)  # the same page on a phone: the layout follows the width, as on a turn
    narrow = screenshots / f"{name}-narrow.png"
    page.screenshot(path=str(narrow), full_page=True)
    for shot in (desktop, narrow):
        assert shot.stat().st_size > MIN_BYTES, f"{shot} looks blank"
    decimal = DECIMAL_UNIT.search(page.locator("body").inner_text())
    assert decimal is None, f"{path} shows a decimal unit: {decimal.group(0) if decimal else ''}"
    scroll, client = page.evaluate(SIDEWAYS)
    assert scroll <= client, f"{path} is {scroll} px wide on a {client} px phone: it scrolls sideways"
