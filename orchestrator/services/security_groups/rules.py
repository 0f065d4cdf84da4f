"""A security group as the caller gives it, checked: every bad value is a ``ValidationFailed`` naming its
field as the API does (``rules[2].ports``). Pure: the VDC's other groups are passed in."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models.security_groups import (
    ANYWHERE,
    DIRECTIONS,
    MAX_DESCRIPTION_LENGTH,
    MAX_GROUP_NAME_LENGTH,
    MAX_GROUPS_PER_VM,
    MAX_PORT_NUMBERS,
    MAX_PORTS_LENGTH,
    MAX_RULES_PER_GROUP,
    PORT_PROTOCOLS,
    PROTOCOLS,
    Rule,
    SecurityGroup,
)
from orchestrator.services.catalog import Fields, check_fields

GROUP_FIELDS = ("name", "description", "rules")
RULE_FIELDS = ("direction", "protocol", "ports", "cidr", "group", "vdc_networks", "description")
_NAME = re.compile(rf"[a-z](?:[a-z0-9-]{{0,{MAX_GROUP_NAME_LENGTH - 2}}}[a-z0-9])?")
NAME_RULE = (
    f"a DNS label of at most {MAX_GROUP_NAME_LENGTH} characters: lowercase letters, digits and '-', "
    "starting with a letter, not ending with '-'"
)
# One entry of a rule's ports: a port, or a range written first:last (Proxmox's) or first-last.
_PORT_ENTRY = re.compile(r"([0-9]+)(?:[:-]([0-9]+))?", re.ASCII)
PORTS_RULE = "a port (22), a range (8000:8100) or a list of them (80,443)"


def is_group_name(value: object) -> bool:
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def group_name(value: object, field: str = "name") -> str:
    if not is_group_name(value):
        raise ValidationFailed(field, f"{value!r} is not {NAME_RULE}")
    assert isinstance(value, str)
    return value


def _description(f: Fields) -> str:
    text = f.text("description", MAX_DESCRIPTION_LENGTH)
    if "\n" in text or "\t" in text:
        raise f.fail("description", "description must be one line")
    return text


def parse_ports(f: Fields, protocol: str) -> str | None:
    """A rule's ports as Proxmox's firewall takes them (its ``dport``), for tcp and udp only; None (left
    out or empty): every port. A comma list of ports (1 to 65535) and ranges (``8000:8100``, first <=
    last; ``8000-8100`` is read the same), at most :data:`MAX_PORT_NUMBERS` numbers (a range counts as
    two), returned in Proxmox's syntax without spaces: ``80, 443,8000-8100`` -> ``80,443,8000:8100``.
    A bad value is ``ValidationFailed`` on ``ports`` naming the entry."""
    value = f.values.get("ports")
    if value is None:
        return None
    if not isinstance(value, str):
        raise f.fail("ports", f"ports must be text: {PORTS_RULE}")
    if len(value) > MAX_PORTS_LENGTH:
        raise f.fail("ports", f"ports is at most {MAX_PORTS_LENGTH} characters: {PORTS_RULE}")
    if not value.strip():
        return None
    if protocol not in PORT_PROTOCOLS:
        raise f.fail("ports", f"only tcp and udp rules have ports: leave ports empty for {protocol}")
    entries = []
    numbers = 0
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            raise f.fail("ports", f"{value.strip()!r} has an empty entry: remove the extra comma")
        found = _PORT_ENTRY.fullmatch(entry)
        if found is None:
            raise f.fail("ports", f"{entry!r} is not {PORTS_RULE}")
        first = int(found.group(1))
        last = int(found.group(2) or first)
        for port in (first, last):
            if not 1 <= port <= 65535:
                raise f.fail("ports", f"a port is between 1 and 65535, not {port}")
        if first > last:
            raise f.fail("ports", f"the range {entry} runs backwards: write {last}:{first}")
        entries.append(str(first) if first == last else f"{first}:{last}")
        numbers += 1 if first == last else 2
    if numbers > MAX_PORT_NUMBERS:
        raise f.fail(
            "ports",
            f"ports name at most {MAX_PORT_NUMBERS} numbers (a range counts as two; Proxmox's limit), "
            f"not {numbers}: split the rule in two",
        )
    return ",".join(entries)


def parse_cidr(f: Fields) -> str:
    """An IPv4 network (``10.0.0.0/24``, or an address: ``/32``) without host bits, as its canonical text."""
    value = f.string("cidr")
    try:
        network = ipaddress.IPv4Network(value.strip(), strict=True)
    except ValueError as exc:
        raise f.fail(
            "cidr", f"cidr must be an IPv4 network such as 10.0.0.0/24, not {value!r} ({exc})"
        ) from exc
    return str(network)


def parse_rule(values: Any, index: int, groups: Collection[str]) -> Rule:
    """One rule, ``rules[index]`` of its group; ``groups``: the names a rule may name (its VDC's)."""
    prefix = f"rules[{index}]"
    if not isinstance(values, Mapping):
        raise ValidationFailed(prefix, "a rule must be an object")
    check_fields({f"{prefix}.{k}": v for k, v in values.items()}, (f"{prefix}.{k}" for k in RULE_FIELDS))
    f = Fields(values, prefix=f"{prefix}.")
    direction = f.choice("direction", DIRECTIONS)
    protocol = f.choice("protocol", PROTOCOLS)
    ports = parse_ports(f, protocol)
    remotes = [k for k in ("cidr", "group") if values.get(k) not in (None, "")]
    if values.get("vdc_networks"):
        remotes.append("vdc_networks")
    if len(remotes) != 1:
        field = remotes[1] if len(remotes) > 1 else "cidr"
        raise f.fail(
            field,
            f"a rule names exactly one remote: cidr (use {ANYWHERE} for anywhere), group, or vdcNetworks",
        )
    cidr = parse_cidr(f) if remotes == ["cidr"] else None
    group = None
    if remotes == ["group"]:
        group = group_name(values["group"], f.path("group"))
        if group not in groups:
            raise f.fail("group", f"there is no security group {group!r} in this VDC")
    return Rule(
        direction=direction,
        protocol=protocol,
        ports=ports,
        cidr=cidr,
        group=group,
        vdc_networks=remotes == ["vdc_networks"],
        description=_description(f),
    )


def parse_group(values: Mapping[str, Any], groups: Collection[str]) -> SecurityGroup:
    """A group from its input (name, description, rules); ``groups``: the VDC's groups after the change
    (the group itself among them, so that its rules may name it)."""
    check_fields(values, GROUP_FIELDS)
    f = Fields(values)
    name = group_name(values.get("name"))
    rules = values.get("rules") or []
    if isinstance(rules, str | bytes) or not isinstance(rules, Iterable):
        raise ValidationFailed("rules", "rules must be a list")
    rules = list(rules)
    if len(rules) > MAX_RULES_PER_GROUP:
        raise ValidationFailed("rules", f"a group has at most {MAX_RULES_PER_GROUP} rules, not {len(rules)}")
    return SecurityGroup(
        name=name,
        description=_description(f),
        rules=tuple(parse_rule(rule, index, groups) for index, rule in enumerate(rules)),
    )


def parse_membership(value: Any, groups: Collection[str], field: str = "groups") -> list[str]:
    """The groups a VM is to be in: at least one, without duplicates, each a group of its VDC (another
    VDC's is ``NotFound``, as one that does not exist)."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ValidationFailed(field, "groups must be a list of security group names")
    names = list(dict.fromkeys(value))
    if not names:
        raise ValidationFailed(field, "a VM is in at least one security group (default, if no other)")
    if len(names) > MAX_GROUPS_PER_VM:
        raise ValidationFailed(field, f"a VM is in at most {MAX_GROUPS_PER_VM} security groups")
    for name in names:
        if not isinstance(name, str) or name not in groups:
            raise NotFound("security group", str(name))
    return names
