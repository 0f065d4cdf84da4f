"""Security groups realised on one VM's own firewall: what it should hold, and the steps from what it
holds. Pure: the groups, the members' addresses and the VDC's networks are passed in.

What a VM's firewall holds, from the groups it is in:

- options: ``enable=1``, ``policy_in=DROP``, ``dhcp=1``; ``policy_out=DROP`` when one of its groups has
  an outbound rule (egress is then exactly what those rules allow), ``ACCEPT`` when none has (a group
  without outbound rules does not restrict egress). ``default``'s outbound rule allows everything.
  Replies to allowed traffic pass either way (Proxmox's firewall tracks connections).
- rules: one ACCEPT rule per group rule, by group name then rule order, each commented
  ``fp-sg:<group>`` so that only flex.plane's own rules are ever replaced (rules added by hand stay,
  below them);
- IP sets: ``fp-sg-<group>`` with the addresses of that group's member VMs, for each group its rules
  name, and ``fp-vdc-nets`` with the VDC's network CIDRs when a rule names the VDC's networks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from orchestrator.models.security_groups import ANYWHERE, GROUP_TAG_PREFIX, Rule, SecurityGroup
from orchestrator.sources.proxmox.firewall import FirewallOptions, FirewallRule, ipset_entry

RULE_COMMENT_PREFIX = "fp-sg:"
VDC_NETS_IPSET = "fp-vdc-nets"


def rule_comment(group: str) -> str:
    return f"{RULE_COMMENT_PREFIX}{group}"


def group_ipset(group: str) -> str:
    return f"{GROUP_TAG_PREFIX}{group}"


def is_ours(rule: FirewallRule) -> bool:
    return rule.comment.startswith(RULE_COMMENT_PREFIX)


def is_our_ipset(name: str) -> bool:
    return name == VDC_NETS_IPSET or name.startswith(GROUP_TAG_PREFIX)


@dataclass(frozen=True)
class Firewall:
    """What flex.plane keeps on a VM's firewall: its options, its own rules in order, its own IP sets."""

    options: FirewallOptions
    rules: tuple[FirewallRule, ...]
    ipsets: Mapping[str, frozenset[str]] = field(default_factory=dict)


def _remote(rule: Rule) -> str | None:
    if rule.group is not None:
        return "+" + group_ipset(rule.group)
    if rule.vdc_networks:
        return "+" + VDC_NETS_IPSET
    if rule.cidr is None or rule.cidr == ANYWHERE:
        return None
    return ipset_entry(rule.cidr)


def firewall_rule(group: str, rule: Rule) -> FirewallRule:
    """One group rule as a rule of the VM's firewall."""
    remote = _remote(rule)
    inbound = rule.direction == "in"
    return FirewallRule(
        type=rule.direction,
        action="ACCEPT",
        proto=None if rule.protocol == "any" else rule.protocol,
        dport=rule.ports,  # already Proxmox's syntax (models.security_groups.Ports)
        source=remote if inbound else None,
        dest=None if inbound else remote,
        enable=True,
        comment=rule_comment(group),
    )


def desired(
    member_of: Sequence[str],
    groups: Mapping[str, SecurityGroup],
    members: Mapping[str, Iterable[str]],
    vdc_cidrs: Iterable[str],
) -> Firewall:
    """The firewall of a VM in the groups ``member_of`` (those its VDC no longer has are left out).

    ``members``: each group's member VMs' addresses; ``vdc_cidrs``: the VDC's network CIDRs.
    """
    mine = [groups[name] for name in sorted(set(member_of)) if name in groups]
    rules = tuple(firewall_rule(g.name, rule) for g in mine for rule in g.rules)
    ipsets: dict[str, frozenset[str]] = {}
    for group in mine:
        for rule in group.rules:
            if rule.group is not None:
                ipsets[group_ipset(rule.group)] = frozenset(
                    ipset_entry(a) for a in members.get(rule.group, ())
                )
            if rule.vdc_networks:
                ipsets[VDC_NETS_IPSET] = frozenset(ipset_entry(c) for c in vdc_cidrs)
    options = FirewallOptions(
        enable=True,
        policy_in="DROP",
        policy_out="DROP" if any(g.has_egress_rules for g in mine) else "ACCEPT",
        dhcp=True,
    )
    return Firewall(options, rules, dict(sorted(ipsets.items())))


# ------------------------------------------------------------------------------------------ steps


@dataclass(frozen=True)
class Steps:
    """What to send to bring a VM's firewall to what it should be, in this order: IP sets made and
    filled first (a rule may only name an IP set that exists), then flex.plane's old rules deleted from
    the highest position down and the new ones added (each at the top: the last added is first), then
    the options, and last the IP sets no rule names any more emptied and deleted."""

    create_ipsets: tuple[str, ...] = ()
    add_entries: tuple[tuple[str, str], ...] = ()
    remove_entries: tuple[tuple[str, str], ...] = ()
    delete_rules: tuple[int, ...] = ()
    add_rules: tuple[FirewallRule, ...] = ()
    options: FirewallOptions | None = None
    empty_ipsets: tuple[tuple[str, str], ...] = ()
    delete_ipsets: tuple[str, ...] = ()

    @property
    def nothing(self) -> bool:
        return self == Steps()

    @property
    def count(self) -> int:
        """How many requests they are."""
        return sum(
            len(part)
            for part in (
                self.create_ipsets,
                self.add_entries,
                self.remove_entries,
                self.delete_rules,
                self.add_rules,
                self.empty_ipsets,
                self.delete_ipsets,
            )
        ) + (1 if self.options is not None else 0)


def steps(
    options: FirewallOptions,
    rules: Sequence[FirewallRule],
    ipsets: Mapping[str, Iterable[str]],
    want: Firewall,
    *,
    add_only: bool = False,
) -> Steps:
    """The steps from what the VM's firewall holds (``rules``: all of them, with their positions;
    ``ipsets``: flex.plane's, with their entries) to ``want``. Nothing when it holds that already.

    ``add_only``: ``want``'s IP sets may lack entries (a zone did not answer): none is removed from a
    set that stays."""
    ours = [r for r in rules if is_ours(r)]
    current = tuple(r.unplaced for r in ours)
    rules_change = current != want.rules
    held = {name: {ipset_entry(e) for e in entries} for name, entries in ipsets.items()}
    create = tuple(name for name in want.ipsets if name not in held)
    add = tuple(
        (name, entry)
        for name, entries in want.ipsets.items()
        for entry in sorted(entries - held.get(name, set()))
    )
    remove = tuple(
        (name, entry)
        for name, entries in want.ipsets.items()
        for entry in sorted(held.get(name, set()) - entries)
        if not add_only
    )
    gone = tuple(name for name in sorted(held) if name not in want.ipsets)
    return Steps(
        create_ipsets=create,
        add_entries=add,
        remove_entries=remove,
        delete_rules=tuple(sorted((r.pos for r in ours if r.pos is not None), reverse=True))
        if rules_change
        else (),
        add_rules=tuple(reversed(want.rules)) if rules_change else (),
        options=want.options if options != want.options else None,
        empty_ipsets=tuple((name, entry) for name in gone for entry in sorted(held[name])),
        delete_ipsets=gone,
    )
