"""The security-group form as people fill it in (issue 37, item 6): a rule's "From / to" is a choice with
nothing chosen and no placeholder that reads as a default; the field a choice needs (the addresses, the
group) shows beside it as it is chosen, with no script (CSS ``:has()``); a row without its addresses is
refused in the portal's words under that field; ports are written as Proxmox's firewall takes them.

Debian's chromium through Playwright, against the portal served in this process on the light world.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.apikit import Api
from tests.browser.conftest import LoginFn, shoot

NEW = "/vdc/demo/security-groups/new/"
DELETE_GROUP = "mutation($name: String!) { deleteSecurityGroup(name: $name) { errors { message } } }"
RULES = "query { securityGroups { name rules { ports cidr group vdcNetworks } } }"


@pytest.fixture
def group(api: Api) -> Iterator[str]:
    """A name for a group of VDC demo, deleted afterwards."""
    name = f"b{uuid.uuid4().hex[:8]}"
    yield name
    api(DELETE_GROUP, user="admin", vdc="demo", variables={"name": name})


def row(page: Page, index: int) -> Locator:
    return page.locator(f"[data-rule-row='{index}']")


def test_a_rule_says_where_from_by_a_choice_and_shows_the_field_that_choice_needs(
    page: Page, signed_in: LoginFn, api: Api, screenshots: Path, group: str
) -> None:
    signed_in(page, "alice", NEW)
    first, second, third = row(page, 0), row(page, 1), row(page, 2)
    remote = first.get_by_label("From / to")
    expect(remote).to_have_value("")  # nothing chosen: no remote reads as a default
    expect(remote.locator("option:checked")).to_have_text("Choose…")
    assert page.locator("input[placeholder]").count() == 0
    # Until a kind needs it, neither the addresses nor the group is there to fill in.
    expect(first.get_by_label("Addresses (CIDR)")).to_be_hidden()
    expect(first.get_by_label("Security group")).to_be_hidden()
    shoot(page, screenshots, "item06-sg-form-new")

    page.get_by_label("Name", exact=True).fill(group)
    first.get_by_label("Ports").fill("80,443")
    remote.select_option(label="Anywhere (0.0.0.0/0)")
    expect(first.get_by_label("Addresses (CIDR)")).to_be_hidden()
    second.get_by_label("Ports").fill("8000:8100")
    second.get_by_label("From / to").select_option(label="Addresses (a CIDR)")
    cidr = second.get_by_label("Addresses (CIDR)")
    expect(cidr).to_be_visible()
    expect(second.get_by_label("Security group")).to_be_hidden()
    third.get_by_label("Protocol").select_option("any")
    third.get_by_label("From / to").select_option(label="A security group's VMs")
    expect(third.get_by_label("Security group")).to_be_visible()
    expect(third.get_by_label("Addresses (CIDR)")).to_be_hidden()
    third.get_by_label("Security group").select_option("default")

    page.get_by_role("button", name="Create security group").click()
    # Addresses chosen but none typed: said under that field, in the portal's words, the rest kept.
    said = row(page, 1).locator("[data-error-for='cidr']")
    expect(said).to_contain_text("Type the addresses, such as 203.0.113.0/24, or choose Anywhere.")
    expect(page.locator("main")).not_to_contain_text("names exactly one remote")
    expect(row(page, 1).get_by_label("Addresses (CIDR)")).to_be_visible()
    expect(row(page, 0).get_by_label("Ports")).to_have_value("80,443")
    expect(row(page, 2).get_by_label("Security group")).to_be_visible()
    shoot(page, screenshots, "item06-sg-form-refused")

    row(page, 1).get_by_label("Addresses (CIDR)").fill("203.0.113.0/24")
    page.get_by_role("button", name="Create security group").click()
    expect(page).to_have_url(f"{page.url.split('/vdc/')[0]}/vdc/demo/security-groups/")
    made = page.locator(f"[data-group='{group}']")
    expect(made).to_contain_text("80,443")
    expect(made).to_contain_text("8000:8100")
    answer = api(RULES, user="alice", vdc="demo")
    rules = next(g["rules"] for g in answer.data["securityGroups"] if g["name"] == group)
    assert rules == [
        {"ports": "80,443", "cidr": "0.0.0.0/0", "group": None, "vdcNetworks": False},
        {"ports": "8000:8100", "cidr": "203.0.113.0/24", "group": None, "vdcNetworks": False},
        {"ports": None, "cidr": None, "group": "default", "vdcNetworks": False},
    ]
    shoot(page, screenshots, "item06-sg-list")

    # The group's edit page shows each rule's choice again, and only the fields those choices need.
    page.goto(f"/vdc/demo/security-groups/{group}/edit/")
    expect(row(page, 0).get_by_label("From / to")).to_have_value("anywhere")
    expect(row(page, 0).get_by_label("Addresses (CIDR)")).to_be_hidden()
    expect(row(page, 1).get_by_label("Addresses (CIDR)")).to_have_value("203.0.113.0/24")
    expect(row(page, 2).get_by_label("Security group")).to_have_value("default")
    shoot(page, screenshots, "item06-sg-form-edit")
