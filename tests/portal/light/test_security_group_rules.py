"""A security group's rule rows as people fill them in (issue 37, item 6): where the traffic comes from or
goes to is a choice (anywhere, addresses, a group's VMs, the VDC's networks) with the field it needs, no
placeholder that reads as a default, and a row without what it needs is refused in the portal's words
under that field; ports are lists and ranges as Proxmox's firewall takes them. ``requests`` sessions on
the portal served from this process (tests/portal/served.py); what was saved is read back from the API."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.apikit import Api
from tests.portal.light.test_security_groups_pages import row_error, rule_rows, stored
from tests.portal.pagekit import get, post
from tests.portal.served import LightPortal

NEW = "/vdc/demo/security-groups/new/"
DELETE_GROUP = "mutation($name: String!) { deleteSecurityGroup(name: $name) { errors { message } } }"
RULES = "query { securityGroups { name rules { direction protocol ports cidr group vdcNetworks } } }"
# What the API says of a rule without a remote: never what the portal's user reads.
API_WORDS = ("names exactly one remote", "vdcNetworks", "cidr (use")


@pytest.fixture
def group(api: Api) -> Iterator[str]:
    """A name for a group of VDC demo, deleted afterwards."""
    name = f"r{uuid.uuid4().hex[:8]}"
    yield name
    api(DELETE_GROUP, user="admin", vdc="demo", variables={"name": name})


def rules_of(api: Api, name: str) -> list[dict[str, Any]]:
    answer = api(RULES, user="admin", vdc="demo")
    assert answer.errors == [], answer.errors
    found = next(g for g in answer.data["securityGroups"] if g["name"] == name)
    rules: list[dict[str, Any]] = found["rules"]
    return rules


def control(page: str, name: str) -> str:
    """The HTML of the form control named ``name`` (an input, or a select with its options)."""
    found = re.search(
        rf'<select[^>]*name="{name}"[^>]*>.*?</select>|<input[^>]*name="{name}"[^>]*>', page, re.S
    )
    assert found is not None, f"no control {name}"
    return found.group(0)


def chosen(page: str, name: str) -> str:
    """The value of the option selected in the select ``name``."""
    found = re.search(r'<option value="([^"]*)"[^>]*selected', control(page, name))
    return found.group(1) if found else ""


def test_the_remote_is_a_choice_with_nothing_chosen_and_no_placeholder_reading_as_a_default(
    site: LightPortal, alice: requests.Session
) -> None:
    page = get(alice, site, NEW).text
    remote = control(page, "rules-0-remote")
    assert re.findall(r'<option value="([^"]*)"', remote) == ["", "anywhere", "cidr", "group", "vdc_networks"]
    labels = [html.unescape(label) for label in re.findall(r"<option [^>]*>([^<]*)</option>", remote)]
    assert labels == [
        "Choose…",
        "Anywhere (0.0.0.0/0)",
        "Addresses (a CIDR)",
        "A security group's VMs",
        "The VDC's networks",
    ]
    assert chosen(page, "rules-0-remote") == ""  # a spare row has no remote until one is chosen
    assert "placeholder" not in control(page, "rules-0-cidr")
    assert "placeholder" not in control(page, "rules-0-ports")
    assert 'placeholder="0.0.0.0/0"' not in page
    groups = re.findall(r'<option value="([^"]*)"', control(page, "rules-0-group"))
    assert "default" in groups
    assert "Addresses (CIDR)" in page  # the addresses field says what it is


def test_a_row_without_a_remote_or_its_addresses_is_refused_in_the_portals_words_under_the_field(
    site: LightPortal, api: Api, alice: requests.Session, group: str
) -> None:
    get(alice, site, NEW)
    rows = [
        {"ports": "22"},  # no remote chosen
        {"remote": "cidr", "ports": "443"},  # addresses chosen, none typed
        {"remote": "cidr", "cidr": "10.0.0.1/24"},  # an address with a prefix
        {"remote": "cidr", "cidr": "10.0.0.300/8"},
        {"protocol": "udp"},  # something chosen, but not where from: not a spare row any more
    ]
    refused = post(alice, site, NEW, {"name": group, **rule_rows(rows, total=6)})
    assert refused.status_code == 200
    page = html.unescape(refused.text)
    assert "Choose where the traffic comes from (in) or goes to (out)" in row_error(refused.text, 0, "remote")
    assert "Type the addresses, such as 203.0.113.0/24, or choose Anywhere." in row_error(
        refused.text, 1, "cidr"
    )
    assert row_error(refused.text, 2, "cidr") == (
        "10.0.0.1/24 is an address, not a network: did you mean 10.0.0.0/24 (its network) or 10.0.0.1?"
    )
    assert "10.0.0.300/8 is not an IPv4 network" in row_error(refused.text, 3, "cidr")
    assert "Choose where the traffic comes from" in row_error(refused.text, 4, "remote")
    assert row_error(refused.text, 5, "remote") == ""  # the spare row left as it was
    for words in API_WORDS:
        assert words not in page
    # What was typed stays, so that only the missing part needs filling in.
    assert re.search(r'<input[^>]*name="rules-0-ports"[^>]*value="22"', refused.text)
    assert chosen(refused.text, "rules-1-remote") == "cidr"
    assert stored(api, "demo", group) is None


def test_each_remote_is_saved_as_the_api_says_it_and_shown_again_as_chosen(
    site: LightPortal, api: Api, alice: requests.Session, group: str
) -> None:
    get(alice, site, NEW)
    rows = [
        {"ports": "80,443", "remote": "anywhere"},
        {"ports": "22", "remote": "cidr", "cidr": "203.0.113.0/24", "group": "default"},
        {"protocol": "any", "remote": "group", "group": "default", "cidr": "198.51.100.0/24"},
        {"protocol": "icmp", "remote": "vdc_networks"},
        {"direction": "out", "protocol": "any", "remote": "anywhere"},
    ]
    made = post(alice, site, NEW, {"name": group, **rule_rows(rows, total=6)})
    assert made.status_code == 303, made.text[:3000]
    assert rules_of(api, group) == [
        {"direction": "in", "protocol": "tcp", "ports": "80,443", "cidr": "0.0.0.0/0", "group": None,
         "vdcNetworks": False},
        {"direction": "in", "protocol": "tcp", "ports": "22", "cidr": "203.0.113.0/24", "group": None,
         "vdcNetworks": False},
        {"direction": "in", "protocol": "any", "ports": None, "cidr": None, "group": "default",
         "vdcNetworks": False},
        {"direction": "in", "protocol": "icmp", "ports": None, "cidr": None, "group": None,
         "vdcNetworks": True},
        {"direction": "out", "protocol": "any", "ports": None, "cidr": "0.0.0.0/0", "group": None,
         "vdcNetworks": False},
    ]  # fmt: skip

    edit = get(alice, site, f"/vdc/demo/security-groups/{group}/edit/").text
    assert [chosen(edit, f"rules-{i}-remote") for i in range(5)] == [
        "anywhere",
        "cidr",
        "group",
        "vdc_networks",
        "anywhere",
    ]
    assert 'value="203.0.113.0/24"' in control(edit, "rules-1-cidr")
    assert "value=" not in control(edit, "rules-0-cidr")  # anywhere is not an address to retype
    assert chosen(edit, "rules-2-group") == "default"
    # Saved again unchanged: the same rules.
    before = rules_of(api, group)
    again = {"description": "", **form_values(edit)}
    saved = post(alice, site, f"/vdc/demo/security-groups/{group}/edit/", again)
    assert saved.status_code == 303, saved.text[:3000]
    assert rules_of(api, group) == before


def form_values(page: str) -> dict[str, str]:
    """The rule rows' values as the edit page shows them (what a browser sends back unchanged)."""
    values: dict[str, str] = {}
    for tag in re.findall(r'<input[^>]*name="rules-[^"]+"[^>]*>', page):
        if 'type="checkbox"' in tag:
            continue
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        assert name is not None
        values[name.group(1)] = html.unescape(value.group(1)) if value else ""
    for found in re.finditer(r'<select name="(rules-[^"]+)"', page):
        values[found.group(1)] = chosen(page, found.group(1))
    return values


@pytest.mark.parametrize(
    ("ports", "named"),
    [
        ("80,,443", "'80,,443' has an empty entry: remove the extra comma"),
        ("8100:8000", "the range 8100:8000 runs backwards: write 8000:8100"),
        ("443, 70000", "a port is between 1 and 65535, not 70000"),
        ("80 443", "'80 443' is not a port (22), a range (8000:8100) or a list of them (80,443)"),
        (",".join(["1000:2000"] * 8), "at most 15 numbers (a range counts as two; Proxmox's limit), not 16"),
        ("22", "only tcp and udp rules have ports: leave ports empty for icmp"),
    ],
)
def test_bad_ports_are_refused_under_the_ports_of_their_row_naming_the_entry(
    site: LightPortal, api: Api, alice: requests.Session, group: str, ports: str, named: str
) -> None:
    get(alice, site, NEW)
    protocol = "icmp" if ports == "22" else "tcp"
    rows = [
        {"ports": "22", "remote": "anywhere"},
        {"protocol": protocol, "ports": ports, "remote": "anywhere"},
    ]
    refused = post(alice, site, NEW, {"name": group, **rule_rows(rows)})
    assert refused.status_code == 200
    assert named in row_error(refused.text, 1, "ports")
    assert row_error(refused.text, 0, "ports") == ""
    assert stored(api, "demo", group) is None


def test_ports_as_proxmox_users_write_them_are_saved_in_proxmoxs_syntax(
    site: LightPortal, api: Api, alice: requests.Session, group: str
) -> None:
    get(alice, site, NEW)
    rows = [
        {"ports": "80, 443", "remote": "anywhere"},
        {"ports": "8000:8100", "remote": "anywhere"},
        {"protocol": "udp", "ports": "8000-8100,9000", "remote": "anywhere"},
    ]
    made = post(alice, site, NEW, {"name": group, **rule_rows(rows)})
    assert made.status_code == 303, made.text[:3000]
    assert [r["ports"] for r in rules_of(api, group)] == ["80,443", "8000:8100", "8000:8100,9000"]
    listed = html.unescape(get(alice, site, "/vdc/demo/security-groups/").text)
    assert "80,443" in listed
