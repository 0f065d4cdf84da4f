"""Security groups as callers give them, checked: pure, no world."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models.security_groups import (
    DEFAULT_GROUP,
    Rule,
    SecurityGroup,
    default_group,
    group_tag,
    groups_from_spec,
    groups_in,
    groups_to_spec,
    with_groups,
)
from orchestrator.services.security_groups.rules import parse_group, parse_membership

GROUPS = {"default", "web", "db"}


def group(*rules: dict[str, Any], name: str = "web") -> SecurityGroup:
    return parse_group({"name": name, "description": "front ends", "rules": list(rules)}, GROUPS)


def refused(*rules: dict[str, Any], name: str = "web") -> ValidationFailed:
    with pytest.raises(ValidationFailed) as caught:
        group(*rules, name=name)
    return caught.value


SSH = {"direction": "in", "protocol": "tcp", "ports": "22", "cidr": "10.0.0.0/8"}


def test_a_group_with_good_rules_is_taken_as_given() -> None:
    made = group(
        SSH,
        {"direction": "in", "protocol": "tcp", "ports": "8000-8080", "group": "db"},
        {"direction": "out", "protocol": "any", "cidr": "0.0.0.0/0"},
        {"direction": "in", "protocol": "icmp", "vdc_networks": True, "description": "ping"},
    )
    assert made.name == "web"
    assert made.rules == (
        Rule("in", "tcp", "22", cidr="10.0.0.0/8"),
        Rule("in", "tcp", "8000:8080", group="db"),
        Rule("out", "any", cidr="0.0.0.0/0"),
        Rule("in", "icmp", vdc_networks=True, description="ping"),
    )


def test_an_address_is_a_cidr_of_one_address() -> None:
    assert group({**SSH, "cidr": "192.168.1.7"}).rules[0].cidr == "192.168.1.7/32"


@pytest.mark.parametrize(
    ("ports", "named"),
    [
        ("0", "not 0"),
        ("70000", "not 70000"),
        ("65536", "not 65536"),
        ("8080-8000", "8080-8000 runs backwards: write 8000:8080"),
        ("80,8080:8000", "8080:8000 runs backwards"),
        ("22-", "'22-'"),
        ("-22", "'-22'"),
        ("22:", "'22:'"),
        ("abc", "'abc'"),
        ("ssh", "'ssh'"),
        ("22,,80", "empty entry"),
        ("22,80,", "empty entry"),
        ("22;80", "'22;80'"),
        ("22 80", "'22 80'"),
        ("+22", "'+22'"),
        ("\uff12\uff12", "is not a port"),  # fullwidth digits are not ASCII ones
        (",".join(["1:2"] * 7 + ["3", "4"]), "not 16"),
        ("1" * 121, "at most 120 characters"),
    ],
)
def test_bad_ports_are_invalid_naming_the_rule_the_field_and_the_entry(ports: str, named: str) -> None:
    error = refused(SSH, {**SSH, "ports": ports})
    assert error.field == "rules[1].ports"
    assert named in error.message, error.message


@pytest.mark.parametrize(
    ("ports", "stored"),
    [
        ("22", "22"),
        ("80,443", "80,443"),
        ("8000:8100", "8000:8100"),
        ("8000-8100", "8000:8100"),
        (" 80, 443 ,8000-8100 ", "80,443,8000:8100"),
        ("1,65535", "1,65535"),
        ("22:22", "22"),
        ("022", "22"),
        (",".join(["1:2"] * 7 + ["3"]), ",".join(["1:2"] * 7 + ["3"])),  # 15 numbers: Proxmox's most
        ("", None),
    ],
)
def test_ports_are_lists_and_ranges_stored_as_proxmox_writes_them(ports: str, stored: str | None) -> None:
    assert group({**SSH, "ports": ports}).rules[0].ports == stored


def test_a_range_stored_before_lists_reads_as_proxmox_writes_it() -> None:
    spec = {
        "name": "web",
        "rules": [{"direction": "in", "protocol": "tcp", "ports": "8000-8080", "cidr": "10.0.0.0/8"}],
    }
    assert SecurityGroup.from_spec(spec).rules[0].ports == "8000:8080"


def test_ports_on_a_protocol_without_ports_are_invalid() -> None:
    assert refused({**SSH, "protocol": "icmp"}).field == "rules[0].ports"


@pytest.mark.parametrize(
    "cidr", ["10.0.0.0/33", "10.0.0.1/24", "garbage", "10.0.0", "fe80::/64", "", "10.0.0.0/8/8"]
)
def test_cidr_garbage_is_invalid_naming_the_field(cidr: str) -> None:
    error = refused(SSH, SSH, {**SSH, "cidr": cidr})
    assert error.field in ("rules[2].cidr",), error.field


def test_an_unknown_group_is_invalid_naming_the_field() -> None:
    error = refused({"direction": "in", "protocol": "any", "group": "elsewhere"})
    assert error.field == "rules[0].group"
    assert "elsewhere" in error.message


def test_a_rule_names_exactly_one_remote() -> None:
    assert refused({**SSH, "group": "db"}).field == "rules[0].group"
    assert refused({"direction": "in", "protocol": "any"}).field == "rules[0].cidr"


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({**SSH, "direction": "sideways"}, "rules[0].direction"),
        ({**SSH, "protocol": "sctp"}, "rules[0].protocol"),
        ({**SSH, "colour": "red"}, "rules[0].colour"),
        ({**SSH, "description": "two\nlines"}, "rules[0].description"),
    ],
)
def test_other_bad_values_are_invalid_naming_the_field(rule: dict[str, Any], field: str) -> None:
    assert refused(rule).field == field


@pytest.mark.parametrize("name", ["Web", "-web", "web-", "9web", "a" * 33, "", "web_1", "fp.sg"])
def test_a_group_name_is_a_short_dns_label(name: str) -> None:
    assert refused(SSH, name=name).field == "name"


def test_a_group_may_name_itself() -> None:
    made = group({"direction": "in", "protocol": "any", "group": "web"})
    assert made.referenced_groups == {"web"}


def test_membership_names_groups_of_the_vdc_and_another_vdcs_is_missing() -> None:
    assert parse_membership(["web", "db", "web"], GROUPS) == ["web", "db"]
    with pytest.raises(NotFound):
        parse_membership(["theirs"], GROUPS)
    with pytest.raises(ValidationFailed):
        parse_membership([], GROUPS)


def test_groups_round_trip_through_the_vdc_spec() -> None:
    made = group(SSH, {"direction": "in", "protocol": "any", "vdc_networks": True})
    spec = {"id": "demo", "securityGroups": groups_to_spec([made])}
    groups = groups_from_spec(spec)
    assert set(groups) == {DEFAULT_GROUP, "web"}
    assert groups["web"].rules == made.rules
    assert groups["web"].vdc == "demo"
    assert groups[DEFAULT_GROUP] == default_group("demo")


def test_a_vm_without_group_tags_is_in_default() -> None:
    assert groups_in(["fp-vdc-demo", "fp-cp-small"]) == [DEFAULT_GROUP]
    tags = with_groups(["fp-vdc-demo", "fp-sg-old"], ["web", "db"])
    assert tags == ["fp-vdc-demo", group_tag("web"), group_tag("db")]
    assert groups_in(tags) == ["web", "db"]
