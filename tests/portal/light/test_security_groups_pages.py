"""The security-group pages and a VM's groups as a browser uses them: ``requests`` sessions signed in as the
portal's login records them, the portal served from this process (tests/portal/served.py), Proxmox the light
world's fakepve, whose VM firewalls are stateful. What a page did is checked where it lands: the API's groups
(the VDC's catalog entry), the VM's tags and its firewall in the fake.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.http import QueryDict

from orchestrator.errors import ValidationFailed
from portal.security_groups.forms import GroupEditor
from tests.apikit import Api
from tests.portal.pagekit import blanked, create_form, field_error, get, post
from tests.portal.served import LightPortal
from tests.vmkit import named, present, vm_names

GROUPS = "query { securityGroups { name vdc description rules { direction protocol ports cidr group } } }"
DELETE_GROUP = "mutation($name: String!) { deleteSecurityGroup(name: $name) { errors { message } } }"


@pytest.fixture
def group(api: Api) -> Iterator[str]:
    """A name for a group of VDC demo, deleted afterwards."""
    name = f"g{uuid.uuid4().hex[:8]}"
    yield name
    api(DELETE_GROUP, user="admin", vdc="demo", variables={"name": name})


def stored(api: Api, vdc: str, name: str) -> dict[str, Any] | None:
    answer = api(GROUPS, user="admin", vdc=vdc)
    assert answer.errors == [], answer.errors
    return next((g for g in answer.data["securityGroups"] if g["name"] == name), None)


def firewall_rules(site: LightPortal, zone: str, vmid: int) -> list[dict[str, Any]]:
    """The rules of a VM's own firewall in the fake."""
    pve = site.fakes[zone].pve
    found: list[dict[str, Any]] = site.fakes.on_loop(
        lambda: [dict(r) for r in pve.firewall_config("vm", None, int(vmid))["rules"]]
    )
    return found


def rule_rows(rules: list[dict[str, str]], total: int = 3, initial: int = 0) -> dict[str, str]:
    """The group form's rule rows as sent: ``rules`` filled in, the remaining rows blank."""
    data = {
        "rules-TOTAL_FORMS": str(max(total, len(rules))),
        "rules-INITIAL_FORMS": str(initial),
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "50",
    }
    for index in range(max(total, len(rules))):
        values = {
            "direction": "in",
            "protocol": "tcp",
            "ports": "",
            "remote": "",
            "cidr": "",
            "group": "default",
            "description": "",
        }
        values.update(rules[index] if index < len(rules) else {})
        if values["cidr"] and not values["remote"]:
            values["remote"] = "cidr"  # a rule given with addresses
        data.update({f"rules-{index}-{key}": value for key, value in values.items()})
    return data


def row_error(page: str, row: int, field: str) -> str:
    return field_error(page, f"rules-{row}-{field}")


def test_the_list_shows_the_default_group_and_its_rules(site: LightPortal, alice: requests.Session) -> None:
    page = get(alice, site, "/vdc/demo/security-groups/")
    assert page.status_code == 200
    default = re.search(r'<li [^>]*data-group="default">(.*?)</li>', page.text, re.S)
    assert default is not None
    text = html.unescape(default.group(1))
    assert "from the VDC's networks" in text
    assert "to anywhere (0.0.0.0/0)" in text
    assert "/security-groups/default/delete/" not in text  # default cannot go
    assert 'href="/vdc/demo/security-groups/new/"' in page.text


def test_a_group_is_created_with_its_rules_and_blank_rows_are_not_rules(
    site: LightPortal, api: Api, alice: requests.Session, group: str
) -> None:
    form = get(alice, site, "/vdc/demo/security-groups/new/")
    assert form.status_code == 200
    assert 'data-action="security-group.create"' in form.text
    rules = [
        {"ports": "22", "cidr": "0.0.0.0/0", "description": "ssh"},
        {"direction": "in", "protocol": "any", "remote": "vdc_networks"},
    ]
    made = post(
        alice,
        site,
        "/vdc/demo/security-groups/new/",
        {"name": group, "description": "web servers", **rule_rows(rules, total=4)},
    )
    assert made.status_code == 303, made.text[:3000]
    assert made.headers["Location"] == "/vdc/demo/security-groups/"
    found = stored(api, "demo", group)
    assert found is not None
    assert found["description"] == "web servers"
    assert found["rules"] == [
        {"direction": "in", "protocol": "tcp", "ports": "22", "cidr": "0.0.0.0/0", "group": None},
        {"direction": "in", "protocol": "any", "ports": None, "cidr": None, "group": None},
    ]
    page = html.unescape(get(alice, site, "/vdc/demo/security-groups/").text)
    assert f"Security group {group} was created." in page
    assert f'data-group="{group}"' in page


def test_a_bad_rule_is_said_next_to_its_field_in_its_row(
    site: LightPortal, api: Api, alice: requests.Session, group: str
) -> None:
    get(alice, site, "/vdc/demo/security-groups/new/")
    rules = [{"ports": "22", "cidr": "0.0.0.0/0"}, {"ports": "70000", "cidr": "10.0.0.0/8"}]
    bad_port = post(alice, site, "/vdc/demo/security-groups/new/", {"name": group, **rule_rows(rules)})
    assert bad_port.status_code == 200
    assert "a port is between 1 and 65535, not 70000" in row_error(bad_port.text, 1, "ports")
    assert row_error(bad_port.text, 0, "ports") == ""
    assert re.search(r'<input[^>]*name="rules-1-ports"[^>]*value="70000"', bad_port.text)

    rules = [{"cidr": "10.0.0.300/8"}]
    garbage = post(alice, site, "/vdc/demo/security-groups/new/", {"name": group, **rule_rows(rules)})
    assert "10.0.0.300/8 is not an IPv4 network" in html.unescape(row_error(garbage.text, 0, "cidr"))

    bad_name = post(alice, site, "/vdc/demo/security-groups/new/", {"name": "Bad_Name", **rule_rows([])})
    assert "is not a DNS label" in field_error(bad_name.text, "name")
    assert stored(api, "demo", group) is None


def test_more_rule_rows_shows_the_form_again_with_blank_rows_and_saves_nothing(
    site: LightPortal, api: Api, alice: requests.Session, group: str
) -> None:
    get(alice, site, "/vdc/demo/security-groups/new/")
    data = {"name": group, "more": "1", **rule_rows([{"ports": "443", "cidr": "0.0.0.0/0"}])}
    more = post(alice, site, "/vdc/demo/security-groups/new/", data)
    assert more.status_code == 200
    assert 'name="rules-5-ports"' in more.text
    assert re.search(r'<input[^>]*name="rules-0-ports"[^>]*value="443"', more.text)
    assert stored(api, "demo", group) is None


def test_a_group_is_edited_a_rule_removed_and_its_vms_firewall_follows(
    site: LightPortal, api: Api, alice: requests.Session, group: str
) -> None:
    get(alice, site, "/vdc/demo/security-groups/new/")
    first = [{"ports": "22", "cidr": "0.0.0.0/0"}, {"protocol": "udp", "ports": "53", "cidr": "10.0.0.0/8"}]
    made = post(alice, site, "/vdc/demo/security-groups/new/", {"name": group, **rule_rows(first)})
    assert made.status_code == 303, made.text[:3000]

    with vm_names(api, site) as names:
        vm_name = names("grouped")
        created = post(alice, site, "/vdc/demo/vms/new/", create_form(name=vm_name, idempotency_key=vm_name))
        assert created.status_code == 303, created.text[:3000]
        ((zone, vmid),) = named(site, vm_name)
        vm_page = f"/vdc/demo/vms/{zone}/{vmid}/"
        page = get(alice, site, vm_page).text
        assert re.search(rf'<input[^>]*name="groups"[^>]*value="{group}"', page)
        assigned = post(alice, site, f"{vm_page}security-groups/assign/", {"groups": [group, "default"]})
        assert assigned.status_code == 303, assigned.text[:3000]
        assert f"fp-sg-{group}" in present(site, f"{zone}/{vmid}")["config"]["tags"]
        assert f"In: {group}, default" in html.unescape(get(alice, site, vm_page).text)

        edit = f"/vdc/demo/security-groups/{group}/edit/"
        form = get(alice, site, edit).text
        assert 'data-action="security-group.update"' in form
        assert re.search(r'<input[^>]*name="rules-1-ports"[^>]*value="53"', form)
        name_input = re.search(r'<input[^>]*name="name"[^>]*>', form)
        assert name_input is not None
        assert "disabled" in name_input.group(0)  # a group's name cannot change
        changed = rule_rows([*first, {"ports": "8080", "cidr": "192.168.0.0/16"}], total=4, initial=2)
        changed["rules-1-DELETE"] = "on"
        saved = post(alice, site, edit, {"description": "changed", **changed})
        assert saved.status_code == 303, saved.text[:3000]
        found = stored(api, "demo", group)
        assert found is not None
        assert [r["ports"] for r in found["rules"]] == ["22", "8080"]
        assert found["description"] == "changed"
        # The member VM's own firewall in the fake followed: the group's rules, without the removed one.
        dports = {rule.get("dport") for rule in firewall_rules(site, zone, vmid)}
        assert {"22", "8080"} <= dports
        assert "53" not in dports

        refused = post(alice, site, f"/vdc/demo/security-groups/{group}/delete/", {"confirm": "yes"})
        assert refused.status_code == 409
        assert vm_name in html.unescape(refused.text)
        assert stored(api, "demo", group) is not None

        none = post(alice, site, f"{vm_page}security-groups/assign/", {})
        assert none.status_code == 200
        assert "at least one security group" in html.unescape(none.text)
        back = post(alice, site, f"{vm_page}security-groups/assign/", {"groups": ["default"]})
        assert back.status_code == 303

    confirm = get(alice, site, f"/vdc/demo/security-groups/{group}/delete/")
    assert f"Delete security group {group}?" in confirm.text
    deleted = post(alice, site, f"/vdc/demo/security-groups/{group}/delete/", {"confirm": "yes"})
    assert deleted.status_code == 303
    assert stored(api, "demo", group) is None


def test_bob_gets_the_page_of_a_missing_group_for_alices(
    site: LightPortal, alice: requests.Session, bob: requests.Session, group: str
) -> None:
    get(alice, site, "/vdc/demo/security-groups/new/")
    made = post(alice, site, "/vdc/demo/security-groups/new/", {"name": group, **rule_rows([])})
    assert made.status_code == 303
    assert get(bob, site, "/vdc/demo/security-groups/").status_code == 404
    assert group not in get(bob, site, "/vdc/other/security-groups/").text
    for page in ("edit", "delete"):
        alices = get(bob, site, f"/vdc/other/security-groups/{group}/{page}/")
        missing = get(bob, site, f"/vdc/other/security-groups/no-such-group/{page}/")
        assert alices.status_code == missing.status_code == 404
        assert blanked(alices.text, group) == blanked(missing.text, "no-such-group")


# ------------------------------------------------------------------------------------------ the form's rules


def test_blank_and_removed_rows_are_not_sent_and_a_rules_error_lands_in_its_row() -> None:
    data = QueryDict(mutable=True)
    data.update({"name": "web", "description": ""})
    rows = rule_rows(
        [
            {"ports": "22", "cidr": "0.0.0.0/0"},
            {"ports": "80", "cidr": "0.0.0.0/0"},
            {},  # blank
            {"protocol": "any", "remote": "vdc_networks"},
        ],
        total=5,
        initial=2,
    )
    rows["rules-1-DELETE"] = "on"
    data.update(rows)
    editor = GroupEditor(["default", "web"], data)
    assert editor.is_valid(), (editor.group.errors, editor.rules.errors)
    values = editor.values()
    assert [(r["ports"], r["cidr"], r["vdc_networks"]) for r in values["rules"]] == [
        ("22", "0.0.0.0/0", False),
        (None, None, True),
    ]
    editor.show_error(ValidationFailed("rules[1].vdc_networks", "no"))
    assert editor.rules.forms[3].errors["remote"] == ["no"]
    editor.show_error(ValidationFailed("name", "taken"))
    assert editor.group.errors["name"] == ["taken"]


def test_more_rule_rows_adds_blank_rows_to_what_was_sent() -> None:
    data = QueryDict(mutable=True)
    data.update({"name": "web", **rule_rows([{"ports": "22", "cidr": "0.0.0.0/0"}], total=3)})
    editor = GroupEditor(["default"], data, more=True)
    assert len(editor.rules.forms) == 6
