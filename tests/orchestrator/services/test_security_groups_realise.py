"""Security groups realised on a VM's firewall, and the steps from what it holds: pure, no world."""

from __future__ import annotations

from dataclasses import replace

from orchestrator.models.security_groups import Rule, SecurityGroup, default_group
from orchestrator.services.security_groups.realise import (
    VDC_NETS_IPSET,
    Firewall,
    Steps,
    desired,
    firewall_rule,
    steps,
)
from orchestrator.sources.proxmox.firewall import FirewallOptions, FirewallRule

WEB = SecurityGroup(
    "web",
    rules=(
        Rule("in", "tcp", "443", cidr="0.0.0.0/0"),
        Rule("in", "tcp", "8000-8080", group="db"),
        Rule("in", "icmp", cidr="10.1.2.3/32"),
    ),
)
DB = SecurityGroup(
    "db", rules=(Rule("in", "tcp", "5432", group="web"), Rule("out", "udp", "53", cidr="10.9.0.0/16"))
)
GROUPS = {"default": default_group(), "web": WEB, "db": DB}
MEMBERS = {"web": ["10.0.0.5", "10.0.0.6"], "db": ["10.0.0.9"], "default": ["10.0.0.2"]}
CIDRS = ["10.0.0.0/24", "10.0.1.0/24"]


def test_a_rule_renders_as_an_accept_of_the_vms_firewall_commented_with_its_group() -> None:
    assert firewall_rule("web", WEB.rules[1]) == FirewallRule(
        type="in", action="ACCEPT", proto="tcp", dport="8000:8080", source="+fp-sg-db", comment="fp-sg:web"
    )
    assert firewall_rule("db", DB.rules[1]) == FirewallRule(
        type="out", action="ACCEPT", proto="udp", dport="53", dest="10.9.0.0/16", comment="fp-sg:db"
    )
    anywhere = firewall_rule("web", WEB.rules[0])
    assert anywhere.source is None
    assert anywhere.dest is None
    assert firewall_rule("web", WEB.rules[2]).source == "10.1.2.3"  # an address, as Proxmox keeps it


def test_the_default_group_allows_all_egress_and_inbound_from_the_vdcs_networks_only() -> None:
    fw = desired(["default"], GROUPS, MEMBERS, CIDRS)
    assert fw.options == FirewallOptions(enable=True, policy_in="DROP", policy_out="DROP", dhcp=True)
    assert fw.rules == (
        FirewallRule("in", "ACCEPT", source="+fp-vdc-nets", comment="fp-sg:default"),
        FirewallRule("out", "ACCEPT", comment="fp-sg:default"),
    )
    assert fw.ipsets == {VDC_NETS_IPSET: frozenset(CIDRS)}


def test_a_vm_in_groups_without_egress_rules_keeps_all_egress() -> None:
    fw = desired(["web"], GROUPS, MEMBERS, CIDRS)
    assert fw.options.policy_out == "ACCEPT"
    assert fw.options.policy_in == "DROP"


def test_rules_come_by_group_name_and_ip_sets_hold_the_named_groups_members() -> None:
    fw = desired(["web", "db"], GROUPS, MEMBERS, CIDRS)
    assert [r.comment for r in fw.rules] == ["fp-sg:db"] * 2 + ["fp-sg:web"] * 3
    assert fw.options.policy_out == "DROP"  # db lists its egress
    assert fw.ipsets == {
        "fp-sg-db": frozenset({"10.0.0.9"}),
        "fp-sg-web": frozenset({"10.0.0.5", "10.0.0.6"}),
    }


def test_a_group_the_vdc_no_longer_has_is_left_out() -> None:
    assert desired(["gone"], GROUPS, MEMBERS, CIDRS).rules == ()


# ------------------------------------------------------------------------------------------ steps


def placed(rules: tuple[FirewallRule, ...], start: int = 0) -> list[FirewallRule]:
    return [replace(rule, pos=pos) for pos, rule in enumerate(rules, start)]


HAND = FirewallRule("in", "ACCEPT", "tcp", "9100", comment="monitoring, by hand")


def test_a_bare_firewall_gets_ip_sets_first_then_rules_in_reverse_then_options() -> None:
    want = desired(["web"], GROUPS, MEMBERS, CIDRS)
    todo = steps(FirewallOptions(), [], {}, want)
    assert todo.create_ipsets == ("fp-sg-db",)
    assert todo.add_entries == (("fp-sg-db", "10.0.0.9"),)
    assert todo.delete_rules == ()
    assert todo.add_rules == tuple(reversed(want.rules))  # each lands on top: the last added is first
    assert todo.options == want.options
    assert todo.delete_ipsets == ()


def test_a_firewall_as_it_should_be_needs_nothing() -> None:
    want = desired(["web", "db"], GROUPS, MEMBERS, CIDRS)
    todo = steps(want.options, [*placed(want.rules), replace(HAND, pos=5)], want.ipsets, want)
    assert todo == Steps()
    assert todo.nothing
    assert todo.count == 0


def test_changed_rules_replace_only_flex_planes_own_from_the_highest_position_down() -> None:
    old = desired(["web"], GROUPS, MEMBERS, CIDRS)
    new_web = SecurityGroup("web", rules=(Rule("in", "tcp", "80", cidr="0.0.0.0/0"),))
    want = desired(["web"], {**GROUPS, "web": new_web}, MEMBERS, CIDRS)
    held = [*placed(old.rules), replace(HAND, pos=3)]
    todo = steps(old.options, held, old.ipsets, want)
    assert todo.delete_rules == (2, 1, 0)  # the hand-made rule at 3 stays
    assert todo.add_rules == want.rules
    assert todo.options is None
    # fp-sg-db is named by no rule any more: emptied, then deleted, after the rules that named it went.
    assert todo.empty_ipsets == (("fp-sg-db", "10.0.0.9"),)
    assert todo.delete_ipsets == ("fp-sg-db",)


def test_membership_changes_only_touch_the_ip_set_entries() -> None:
    old = desired(["db"], GROUPS, MEMBERS, CIDRS)
    want = desired(["db"], GROUPS, {**MEMBERS, "web": ["10.0.0.6", "10.0.0.7"]}, CIDRS)
    todo = steps(old.options, placed(old.rules), {"fp-sg-web": ["10.0.0.5/32", "10.0.0.6"]}, want)
    assert todo.add_entries == (("fp-sg-web", "10.0.0.7"),)
    assert todo.remove_entries == (("fp-sg-web", "10.0.0.5"),)
    assert todo.delete_rules == ()
    assert todo.add_rules == ()
    assert todo.options is None


def test_steps_applied_to_the_firewall_they_were_made_for_leave_nothing_to_do() -> None:
    want = desired(["web", "db"], GROUPS, MEMBERS, CIDRS)
    rules = [HAND, *placed(desired(["default"], GROUPS, MEMBERS, CIDRS).rules, 1)]
    rules[0] = replace(HAND, pos=0)
    ipsets: dict[str, set[str]] = {VDC_NETS_IPSET: set(CIDRS)}
    options = FirewallOptions()
    todo = steps(options, rules, ipsets, want)
    # Play the steps as Proxmox would.
    for name in todo.create_ipsets:
        ipsets[name] = set()
    for name, entry in todo.add_entries:
        ipsets[name].add(entry)
    for name, entry in (*todo.remove_entries, *todo.empty_ipsets):
        ipsets[name].discard(entry)
    held = [r.unplaced for r in rules]
    for pos in todo.delete_rules:
        del held[pos]
    for rule in todo.add_rules:
        held.insert(0, rule)
    for name in todo.delete_ipsets:
        assert not ipsets.pop(name)
    assert todo.options is not None
    after = Firewall(
        todo.options, tuple(held), {name: frozenset(entries) for name, entries in ipsets.items()}
    )
    assert steps(after.options, placed(tuple(held)), after.ipsets, want) == Steps()
    assert held[-1] == HAND.unplaced  # the hand-made rule is still there, below flex.plane's


def test_with_a_zone_missing_no_ip_set_entry_is_removed() -> None:
    old = desired(["db"], GROUPS, MEMBERS, CIDRS)
    partial = desired(["db"], GROUPS, {**MEMBERS, "web": ["10.0.0.7"]}, CIDRS)
    todo = steps(
        old.options, placed(old.rules), {"fp-sg-web": ["10.0.0.5", "10.0.0.6"]}, partial, add_only=True
    )
    assert todo.add_entries == (("fp-sg-web", "10.0.0.7"),)
    assert todo.remove_entries == ()
