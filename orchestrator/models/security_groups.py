"""Security groups: a VDC's named sets of firewall rules, and which of its VMs are in which.

A VDC's groups are stored with its catalog entry (the VDC ConfigMap's spec, under ``securityGroups``).
Which groups a VM is in is stored on the VM itself, in Proxmox, as tags ``fp-sg-<group>``: tags travel
in ``/cluster/resources``, so membership is read with one call per zone. A VM with no such tag is in
``default``, which every VDC has: stored once changed, implicit until then.

A rule lets traffic through: inbound (``in``) from, or outbound (``out``) to, one remote, which is a
CIDR, another group of the same VDC (its member VMs' addresses), or the VDC's own networks. Values
are frozen pydantic dataclasses, declared once: their fields are what is stored, in camelCase
(``models.specs``); a rule is stored without what it leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic.dataclasses import dataclass

from orchestrator.models.specs import SPEC_CONFIG, Stored, load

DEFAULT_GROUP = "default"
GROUP_TAG_PREFIX = "fp-sg-"
DIRECTIONS = ("in", "out")
PROTOCOLS = ("tcp", "udp", "icmp", "any")
# The protocols a rule may name ports of.
PORT_PROTOCOLS = ("tcp", "udp")
# A group's name is a DNS label this long at most: ``fp-sg-<name>`` is a Proxmox tag and an IP set name.
MAX_GROUP_NAME_LENGTH = 32
MAX_GROUPS_PER_VDC = 50
MAX_RULES_PER_GROUP = 50
MAX_GROUPS_PER_VM = 10
MAX_DESCRIPTION_LENGTH = 200
ANYWHERE = "0.0.0.0/0"
# Proxmox's limit on a firewall rule's ports (``dport``): at most 15 numbers, a range counting as two.
MAX_PORT_NUMBERS = 15
# The longest ports a rule is given as (15 numbers of 5 digits and their separators, and some spaces).
MAX_PORTS_LENGTH = 120


def _unset(value: Any) -> bool:
    return value is None or value is False or value == ""


def _proxmox_ports(value: Any) -> Any:
    """Ports as Proxmox writes them: a range stored as ``8000-8080`` before lists came reads ``8000:8080``."""
    return value.replace("-", ":") if isinstance(value, str) else value


# A rule's ports, in Proxmox's firewall syntax (its ``dport``): a comma list of ports and ranges.
Ports = Annotated[str | None, BeforeValidator(_proxmox_ports)]


@dataclass(frozen=True, config=SPEC_CONFIG)
class Rule(Stored):
    """What one rule lets through. Exactly one of ``cidr``, ``group`` and ``vdc_networks`` is its remote;
    ``ports`` only with tcp or udp, None for every port: as Proxmox's firewall takes them, a comma list of
    ports and ranges (``"22"``, ``"80,443"``, ``"8000:8100"``), which the VM's firewall rule is given as
    its ``dport``."""

    direction: str
    protocol: str
    ports: Ports = Field(default=None, exclude_if=_unset)
    cidr: str | None = Field(default=None, exclude_if=_unset)
    group: str | None = Field(default=None, exclude_if=_unset)
    vdc_networks: bool = Field(default=False, exclude_if=_unset)
    description: str = Field(default="", exclude_if=_unset)


@dataclass(frozen=True, config=SPEC_CONFIG)
class SecurityGroup(Stored):
    """A named set of rules of one VDC."""

    name: str
    description: str = ""
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    # The VDC it is of (not stored: it is stored in that VDC's entry).
    vdc: str = Field(default="", exclude=True)

    @property
    def referenced_groups(self) -> frozenset[str]:
        """The groups its rules name as their remote."""
        return frozenset(rule.group for rule in self.rules if rule.group is not None)

    @property
    def has_egress_rules(self) -> bool:
        return any(rule.direction == "out" for rule in self.rules)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], vdc: str = "") -> SecurityGroup:
        return load(cls, {**spec, "vdc": vdc})


def default_group(vdc: str = "") -> SecurityGroup:
    """The ``default`` group of a VDC that has not changed it: all egress, inbound only from the VDC's
    own networks."""
    return SecurityGroup(
        DEFAULT_GROUP,
        "Every VM's group unless it is given others: all egress, inbound from the VDC's own networks.",
        (
            Rule("in", "any", vdc_networks=True, description="anything from the VDC's networks"),
            Rule("out", "any", cidr=ANYWHERE, description="anything anywhere"),
        ),
        vdc,
    )


def groups_from_spec(vdc_spec: Mapping[str, Any]) -> dict[str, SecurityGroup]:
    """A VDC's groups by name, ``default`` among them (implicit when not stored)."""
    vdc = str(vdc_spec.get("id") or "")
    stored = [SecurityGroup.from_spec(g, vdc) for g in vdc_spec.get("securityGroups") or []]
    groups = {g.name: g for g in stored}
    groups.setdefault(DEFAULT_GROUP, default_group(vdc))
    return dict(sorted(groups.items()))


def groups_to_spec(groups: Iterable[SecurityGroup]) -> list[dict[str, Any]]:
    return [g.to_spec() for g in sorted(groups, key=lambda g: g.name)]


# ------------------------------------------------------------------------------------------ membership


def group_tag(group: str) -> str:
    """The Proxmox tag that puts a VM in ``group``."""
    return f"{GROUP_TAG_PREFIX}{group}"


def groups_in(tags: Iterable[str]) -> list[str]:
    """The groups a VM with these tags is in, in tag order (``default`` when it has no group tag)."""
    found = [
        t[len(GROUP_TAG_PREFIX) :] for t in tags if t.startswith(GROUP_TAG_PREFIX) and t != GROUP_TAG_PREFIX
    ]
    return list(dict.fromkeys(found)) or [DEFAULT_GROUP]


def with_groups(tags: Iterable[str], groups: Iterable[str]) -> list[str]:
    """The tags with the VM's group tags replaced by those of ``groups``, the others kept in order."""
    kept = [t for t in tags if not t.startswith(GROUP_TAG_PREFIX)]
    return [*kept, *(group_tag(g) for g in dict.fromkeys(groups))]
