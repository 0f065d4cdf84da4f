"""Destructive actions in the browser: each one's link opens a page that names what goes and says it cannot be
undone; Cancel leaves everything as it was, the confirmation's button does it and goes back to the page the
user came from, saying so.

An organization owner (olivia) deletes a VDC of acme; admin revokes bob's membership of VDC demo; alice
removes a port forward and a rule of her VDC's edge gateway (zone-a gets an external network for the test; the
light world's agents apply the gateway's spec as they are sent it). Each confirmation page is saved
at 1366 and 390 px wide (``confirm-<what>.png``, ``confirm-<what>-narrow.png``), where it must not scroll
sideways.

Debian's chromium through Playwright, against the portal served in this process on the light world.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from devstack.identity.claims import organisation_of
from tests.apikit import Api
from tests.browser.conftest import DESKTOP, LoginFn, shoot
from tests.gatewaykit import ZONE
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.sources.test_zitadel import restore_seeded_organization
from tests.portal.light.conftest import Gateway

UNDONE = "This cannot be undone"
ACCESS = "/admin/access/"

ERRORS = "errors { code message }"
ALLOWANCE = (
    "mutation($o: ID!, $input: OrganizationAllowanceInput!) { setOrganizationAllowance(organization: $o, "
    f"input: $input) {{ {ERRORS} }} }}"
)
DELETE_ALLOWANCE = f"mutation($o: ID!) {{ deleteOrganizationAllowance(organization: $o) {{ {ERRORS} }} }}"
CREATE_VDC = f"mutation($input: VdcInput!) {{ createVdc(input: $input) {{ {ERRORS} }} }}"
DELETE_VDC = f"mutation($id: ID!) {{ deleteVdc(id: $id) {{ {ERRORS} }} }}"
VDC = '{ vdc(id: "acme-confirm") { id } }'
ORGANIZATIONS = "{ organizations { organization } }"
USERS = "query($s: String!) { users(search: $s) { id username vdcs } }"
ACME_ALLOWANCE = {
    "zones": ["zone-a"],
    "computeProfiles": ["small"],
    "storageProfiles": ["standard"],
    "images": ["debian-12"],
    "quota": {"vcpus": 2, "memoryMib": 4096, "diskGb": 40, "vms": 2},
}
ACME_VDC = {
    "id": "acme-confirm",
    "name": "Acme confirm",
    "zones": ["zone-a"],
    "computeProfiles": ["small"],
    "storageProfiles": ["standard"],
    "images": ["debian-12"],
    "quota": {"vcpus": 1, "memoryMib": 1024, "diskGb": 10, "vms": 1},
}


def no_errors(answer: Any, name: str) -> None:
    assert answer.data[name]["errors"] == [], answer.body


def asked(page: Page, question: str | re.Pattern[str], *named: str) -> None:
    """The page is a confirmation: its heading asks ``question``, it names each of ``named`` and says what
    cannot be undone."""
    expect(page.get_by_role("heading", level=1)).to_have_text(question)
    section = page.locator('section[aria-labelledby="confirm-title"]')
    for name in named:
        expect(section).to_contain_text(name)
    expect(section.locator("#confirm-explanation")).to_contain_text(UNDONE)


# ------------------------------------------------------------------------------------------ a VDC


@pytest.fixture
def acme_vdc(api: Api, zitadel: FakeZitadel) -> Iterator[str]:
    """Organization acme with an allowance, and its VDC acme-confirm (made by its owner olivia); acme's id.
    Afterwards the VDC and the allowance are gone, and acme as seeding left it."""
    acme = organisation_of("acme")[0]
    no_errors(
        api(ALLOWANCE, user="admin", variables={"o": acme, "input": ACME_ALLOWANCE}),
        "setOrganizationAllowance",
    )
    try:
        no_errors(api(CREATE_VDC, user="olivia", variables={"input": ACME_VDC}), "createVdc")
        yield acme
    finally:
        api(DELETE_VDC, user="admin", variables={"id": "acme-confirm"})
        api(DELETE_ALLOWANCE, user="admin", variables={"o": acme})
        restore_seeded_organization(zitadel, "acme")  # the allowance's end took acme's roles


def test_an_owners_delete_of_a_vdc_asks_first_cancel_keeps_it_and_confirm_deletes_it(
    page: Page, signed_in: LoginFn, api: Api, acme_vdc: str, screenshots: Path
) -> None:
    page.set_viewport_size(DESKTOP)
    signed_in(page, "olivia", f"{ACCESS}organizations/")
    row = page.locator('li[data-row="acme-confirm"]')
    delete = row.get_by_role("link", name="Delete… VDC acme-confirm")
    shoot(page, screenshots, "confirm-from-organizations", fits=False)
    delete.click()
    asked(page, "Delete VDC Acme confirm (acme-confirm)?", "organization", "zone-a", "holds 0 VMs", "members")
    shoot(page, screenshots, "confirm-vdc-delete")

    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Organizations")
    expect(row).to_be_visible()
    assert api(VDC, user="admin").data["vdc"] == {"id": "acme-confirm"}

    delete.click()
    page.get_by_role("button", name="Delete VDC acme-confirm").click()
    expect(page.locator("#messages")).to_contain_text("VDC acme-confirm was deleted.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Organizations")
    expect(row).to_have_count(0)
    assert api(VDC, user="admin").codes == ["NOT_FOUND"]


def test_taking_an_allowance_away_asks_first_and_says_a_refusal_on_the_confirmation(
    page: Page, signed_in: LoginFn, api: Api, acme_vdc: str, screenshots: Path
) -> None:
    page.set_viewport_size(DESKTOP)
    signed_in(page, "admin", f"{ACCESS}organizations/")
    page.locator(f'section[data-row="{acme_vdc}"]').get_by_role(
        "link", name="Take the allowance away…"
    ).click()
    asked(
        page,
        re.compile(r"^Take the allowance of organization .+ \(" + acme_vdc + r"\) away\?$"),
        "acme-confirm",
    )
    shoot(page, screenshots, "confirm-allowance-delete")
    page.get_by_role("button", name="Take the allowance away").click()
    expect(page.locator("[data-failure]")).to_contain_text("still has VDC(s) acme-confirm: delete them first")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Take the allowance of organization")
    assert [o["organization"] for o in api(ORGANIZATIONS, user="admin").data["organizations"]] == [acme_vdc]

    no_errors(api(DELETE_VDC, user="admin", variables={"id": "acme-confirm"}), "deleteVdc")
    page.goto(page.url)  # the confirmation again (its URL; not a reload, which would send the POST)
    page.get_by_role("button", name="Take the allowance away").click()
    expect(page.locator("#messages")).to_contain_text(f"({acme_vdc}) has no allowance any more.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Organizations")
    assert api(ORGANIZATIONS, user="admin").data["organizations"] == []


# ------------------------------------------------------------------------------------------ a membership


def vdcs_of_bob(api: Api) -> list[str]:
    (bob,) = [
        u for u in api(USERS, user="admin", variables={"s": "bob"}).data["users"] if u["username"] == "bob"
    ]
    return sorted(bob["vdcs"])


def test_revoking_a_membership_asks_first_naming_the_member_and_the_vdc(
    page: Page, signed_in: LoginFn, api: Api, bob_in_demo: str, screenshots: Path
) -> None:
    page.set_viewport_size(DESKTOP)
    signed_in(page, "admin", f"{ACCESS}users/{bob_in_demo}/")
    revoke = page.get_by_role("link", name="Revoke… membership of demo")
    shoot(page, screenshots, "confirm-from-user", fits=False)
    revoke.click()
    asked(page, "Revoke Bob Example's membership of VDC demo?", "bob@example.com", "next token")
    shoot(page, screenshots, "confirm-membership-revoke")

    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Bob Example")
    expect(page.locator('li[data-row="demo"]')).to_be_visible()
    assert vdcs_of_bob(api) == ["demo", "other"]

    revoke.click()
    page.get_by_role("button", name="Revoke membership of demo").click()
    expect(page.locator("#messages")).to_contain_text("Bob Example is no longer a member of VDC demo.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Bob Example")
    expect(page.locator('li[data-row="demo"]')).to_have_count(0)
    assert vdcs_of_bob(api) == ["other"]


# ------------------------------------------------------------------------------------------ the gateway


def test_removing_a_port_forward_and_a_gateway_rule_asks_first_naming_each(
    page: Page, signed_in: LoginFn, gateway: Gateway, screenshots: Path
) -> None:
    address, key = gateway.address, f"{gateway.address}:8080/tcp"
    page.set_viewport_size(DESKTOP)
    signed_in(page, "alice", "/vdc/demo/port-forwards/")
    row = page.locator(f'tr[data-forward="{key}"]')
    remove = row.get_by_role("link", name=f"Remove… {key}")
    shoot(page, screenshots, "confirm-from-port-forwards", fits=False)
    remove.click()
    target = f"{gateway.vm_address}:80"
    asked(
        page,
        f"Remove port forward {key}?",
        f"Port 8080/tcp of public IP {address}",
        gateway.vm_name,
        target,
    )
    shoot(page, screenshots, "confirm-port-forward-remove")
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Port forwards")
    expect(row).to_be_visible()
    remove.click()
    page.get_by_role("button", name="Remove port forward").click()
    expect(page.locator("#messages")).to_contain_text(f"Port 8080/tcp of {address} is no longer forwarded.")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Port forwards")
    expect(row).to_have_count(0)

    page.goto("/vdc/demo/gateway-firewall/")
    rule = page.locator(f'section[data-gateway="{ZONE}"] tr[data-rule="0"]')
    expect(rule).to_contain_text("443")
    remove_rule = rule.get_by_role("link", name=f"Remove… rule 1 of zone {ZONE}")
    shoot(page, screenshots, "confirm-from-gateway-firewall", fits=False)
    remove_rule.click()
    asked(
        page,
        f"Remove rule 1 of the gateway firewall of zone {ZONE}?",
        "Inbound, allow tcp",
        "port 443",
        "(web)",
    )
    shoot(page, screenshots, "confirm-gateway-rule-remove")
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Gateway firewall")
    expect(rule).to_be_visible()
    remove_rule.click()
    page.get_by_role("button", name="Remove rule 1").click()
    expect(page.locator("#messages")).to_contain_text(
        f"Rule 1 of the gateway firewall of zone {ZONE} was removed."
    )
    expect(page.get_by_role("heading", level=1)).to_contain_text("Gateway firewall")
    expect(rule).to_have_count(0)
    shoot(page, screenshots, "confirm-gateway-firewall-after", fits=False)
    assert not re.search(r"\bdata-action=\"gateway\.(unforward|rule\.remove)\"", page.content())
