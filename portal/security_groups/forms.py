"""The security-group pages' forms: a group (name, description) with its rules as a formset, and the
groups of a VM. Plain Django forms (there is no database). A rule row says where its traffic comes from
or goes to as a choice (anywhere, addresses, a group's VMs, the VDC's networks), with the field that
says which addresses or group; the form refuses a row without that in its own words, under the field.
The service checks every rule again and names the field of a bad one (``rules[2].ports``), which lands
next to that field of that row."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms

from orchestrator.errors import FlexPlaneError, ValidationFailed
from orchestrator.models.security_groups import ANYWHERE as ANYWHERE_CIDR
from orchestrator.models.security_groups import (
    MAX_DESCRIPTION_LENGTH,
    MAX_GROUP_NAME_LENGTH,
    MAX_PORTS_LENGTH,
    MAX_RULES_PER_GROUP,
    PROTOCOLS,
    Rule,
    SecurityGroup,
)
from portal.forms import choices, show_error, styled

# Blank rule rows a form offers beyond the group's rules (and adds on "More rule rows").
EXTRA_RULES = 3
RULES_PREFIX = "rules"
# Where a rule's traffic comes from (in) or goes to (out): the remote's kind, and with addresses or a
# group, the field that says which.
ANYWHERE, CIDR, GROUP, VDC_NETWORKS = "anywhere", "cidr", "group", "vdc_networks"
REMOTES = (
    ("", "Choose…"),
    (ANYWHERE, f"Anywhere ({ANYWHERE_CIDR})"),
    (CIDR, "Addresses (a CIDR)"),
    (GROUP, "A security group's VMs"),
    (VDC_NETWORKS, "The VDC's networks"),
)
DIRECTIONS = (("in", "In: to the VM"), ("out", "Out: from the VM"))
# A service's field of a rule: ``rules[2].ports``.
_RULE_FIELD = re.compile(r"rules\[(\d+)\]\.(\w+)")
# The service's rule fields -> the row's.
_ROW_FIELDS = {"vdc_networks": "remote"}
# What a spare row holds until someone fills it in.
_SPARE = {"direction": "in", "protocol": "tcp", "remote": "", "ports": "", "cidr": "", "description": ""}
CHOOSE_REMOTE = "Choose where the traffic comes from (in) or goes to (out)."
TYPE_CIDR = "Type the addresses, such as 203.0.113.0/24, or choose Anywhere."


def remote_of(rule: Rule) -> str:
    if rule.group is not None:
        return GROUP
    if rule.vdc_networks:
        return VDC_NETWORKS
    return ANYWHERE if rule.cidr == ANYWHERE_CIDR else CIDR


def cidr_error(value: str) -> str | None:
    """What is wrong with ``value`` as a rule's addresses, in the portal's words (None: nothing)."""
    try:
        ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        pass
    else:
        return None
    try:
        network = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        return f"{value} is not an IPv4 network such as 10.0.0.0/24, nor an address such as 10.0.0.7."
    address = value.partition("/")[0]
    return f"{value} is an address, not a network: did you mean {network} (its network) or {address}?"


class RuleForm(forms.Form):
    """One rule: what it lets through, and from (in) or to (out) where: anywhere, addresses (``cidr``),
    another group's VMs (``group``) or the VDC's networks. A spare row left as it was is not a rule."""

    direction = forms.ChoiceField(label="Direction", choices=DIRECTIONS, initial="in")
    protocol = forms.ChoiceField(label="Protocol", choices=[(p, p) for p in PROTOCOLS], initial="tcp")
    ports = forms.CharField(
        label="Ports",
        required=False,
        max_length=MAX_PORTS_LENGTH,
        help_text="A port (22), a list (80,443) or a range (8000:8100); empty: every port.",
    )
    remote = forms.ChoiceField(label="From / to", choices=REMOTES, required=False, initial="")
    cidr = forms.CharField(
        label="Addresses (CIDR)",
        required=False,
        max_length=43,
        help_text="Such as 203.0.113.0/24, or one address.",
    )
    group = forms.ChoiceField(label="Security group", required=False)
    description = forms.CharField(label="Note", required=False, max_length=MAX_DESCRIPTION_LENGTH)

    def __init__(self, *args: Any, groups: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices(self.fields["group"], [(g, g) for g in groups])
        self.fields["ports"].widget.attrs.update(spellcheck="false", autocomplete="off")
        self.fields["cidr"].widget.attrs.update(spellcheck="false", autocomplete="off")
        styled(self)

    @staticmethod
    def initial_of(rule: Rule) -> dict[str, Any]:
        remote = remote_of(rule)
        return {
            "direction": rule.direction,
            "protocol": rule.protocol,
            "ports": rule.ports or "",
            "remote": remote,
            "cidr": rule.cidr if remote == CIDR else "",
            "group": rule.group or "",
            "description": rule.description,
        }

    def blank(self) -> bool:
        """A row left as a spare row is (no remote chosen, nothing typed, the first direction and
        protocol): not a rule."""
        data = self.cleaned_data
        return all((data.get(k) or "").strip() == v for k, v in _SPARE.items())

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors or self.blank():
            return data
        remote = data.get("remote")
        if not remote:
            self.add_error("remote", CHOOSE_REMOTE)
        elif remote == CIDR:
            cidr = (data.get("cidr") or "").strip()
            wrong = cidr_error(cidr) if cidr else TYPE_CIDR
            if wrong:
                self.add_error("cidr", wrong)
        elif remote == GROUP and not data.get("group"):
            self.add_error("group", "Choose the security group whose VMs the rule is about.")
        return data

    def to_input(self) -> dict[str, Any]:
        """The rule as the service's input (the API's ``SecurityGroupRuleInput``)."""
        data = self.cleaned_data
        remote = data["remote"]
        cidr = ANYWHERE_CIDR if remote == ANYWHERE else data["cidr"].strip() if remote == CIDR else None
        return {
            "direction": data["direction"],
            "protocol": data["protocol"],
            "ports": data["ports"].strip() or None,
            "cidr": cidr,
            "group": data["group"] if remote == GROUP else None,
            "vdc_networks": remote == VDC_NETWORKS,
            "description": data["description"].strip(),
        }


RuleFormSet = forms.formset_factory(
    RuleForm, extra=EXTRA_RULES, can_delete=True, max_num=MAX_RULES_PER_GROUP, absolute_max=200
)


class GroupForm(forms.Form):
    """A group's own fields; its name cannot change once made."""

    name = forms.CharField(
        label="Name",
        max_length=MAX_GROUP_NAME_LENGTH,
        help_text="A DNS label: lowercase letters, digits and hyphens, starting with a letter.",
    )
    description = forms.CharField(label="Description", required=False, max_length=MAX_DESCRIPTION_LENGTH)

    def __init__(self, data: Any = None, group: SecurityGroup | None = None) -> None:
        initial = {"name": group.name, "description": group.description} if group else None
        super().__init__(data, initial=initial)
        if group is not None:
            self.fields["name"].disabled = True
            self.fields["name"].help_text = "A group's name cannot change."
        self.fields["name"].widget.attrs.update(autocomplete="off", spellcheck="false")
        styled(self)


class GroupEditor:
    """A group's form and its rules' formset together: built from the request, or from the group."""

    def __init__(
        self,
        groups: Sequence[str],
        data: Mapping[str, Any] | None = None,
        group: SecurityGroup | None = None,
        *,
        more: bool = False,
    ) -> None:
        if data is not None and more:  # "More rule rows": the same rows, and a few blank ones
            key = f"{RULES_PREFIX}-TOTAL_FORMS"
            rows = data.get(key) or "0"
            copied: Any = data.copy()  # type: ignore[attr-defined]  # a QueryDict: copy() is a mutable one
            copied[key] = str((int(rows) if rows.isdigit() else 0) + EXTRA_RULES)
            data = copied
        self.group = GroupForm(data, group)
        rules = [RuleForm.initial_of(r) for r in group.rules] if group else []
        self.rules = RuleFormSet(
            data, initial=rules, prefix=RULES_PREFIX, form_kwargs={"groups": list(groups)}
        )
        # The formset's row of each rule sent, in order: the index the service's errors give.
        self.sent: list[int] = []

    def is_valid(self) -> bool:
        group_ok = self.group.is_valid()
        return self.rules.is_valid() and group_ok

    def rule_inputs(self) -> list[dict[str, Any]]:
        self.sent = []
        inputs = []
        for row, form in enumerate(self.rules.forms):
            if not form.has_changed() and row >= self.rules.initial_form_count():
                continue
            if form.cleaned_data.get("DELETE"):
                continue
            if form.blank():
                continue
            self.sent.append(row)
            inputs.append(form.to_input())
        return inputs

    def values(self) -> dict[str, Any]:
        """The service's input: name, description and every rule."""
        data = self.group.cleaned_data
        return {"name": data["name"], "description": data["description"].strip(), "rules": self.rule_inputs()}

    def show_error(self, exc: FlexPlaneError) -> None:
        """The service's error on the form it is about (:func:`portal.forms.show_error`): a rule's field in
        its row (counted among the rules sent), anything else on the group's form."""
        found = _RULE_FIELD.fullmatch(exc.field or "") if isinstance(exc, ValidationFailed) else None
        if found is not None and int(found.group(1)) < len(self.sent):
            field = _ROW_FIELDS.get(found.group(2), found.group(2))
            show_error(self.rules.forms[self.sent[int(found.group(1))]], exc, lambda _: field)
        else:
            show_error(self.group, exc)


class AssignForm(forms.Form):
    """``assignSecurityGroups``' input: exactly the groups the VM is to be in."""

    groups = forms.MultipleChoiceField(
        label="Security groups",
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs={"class": "mt-1 h-4 w-4"}),
        help_text="The VM is in exactly the groups ticked (at least one).",
    )

    def __init__(self, groups: Sequence[SecurityGroup], current: Sequence[str], data: Any = None) -> None:
        super().__init__(data, initial={"groups": list(current)})
        field = self.fields["groups"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(g.name, f"{g.name}: {g.description}" if g.description else g.name) for g in groups]
