"""The Access section's forms: plain Django forms, checked again by the services."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django import forms

from orchestrator.models import Usage, Vdc
from orchestrator.models.vdcs import VDC_INPUTS
from orchestrator.services.access_admin.users import PLATFORM_ROLES, SEARCH_MAX
from orchestrator.services.organizations import Allowance, AllowanceUsage
from portal.access.allowances import Limit, limits
from portal.admin.forms import VdcForm
from portal.forms import CONTROL, choices

# The platform default a quota's declared help names: this form says its own, within the allowance.
_EMPTY = re.compile(r" \(empty: [^)]*\)")
ALLOWANCE_QUOTAS = ("vcpus", "memory_mib", "disk_gb", "vms", "networks", "public_ips")


class SearchForm(forms.Form):
    search = forms.CharField(
        label="Find users", max_length=SEARCH_MAX, help_text="Part of a name, user name or email."
    )


class GrantForm(forms.Form):
    """The VDC a user is made a member of, among ``vdcs`` (those they may join), each by its name."""

    vdc = forms.ChoiceField(
        label="VDC", widget=forms.Select(attrs={"aria-describedby": "grant-help", "class": f"mt-1 {CONTROL}"})
    )

    def __init__(self, *args: Any, vdcs: Iterable[Vdc], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices(self.fields["vdc"], [(v.id, v.label) for v in vdcs])


class RolesForm(forms.Form):
    roles = forms.MultipleChoiceField(
        label="Platform roles",
        required=False,
        choices=[(r, r) for r in PLATFORM_ROLES],
        widget=forms.CheckboxSelectMultiple,
    )


class AllowanceForm(VdcForm):
    """An organization's allowance: the offerings its VDCs may use (the catalog's) and their totals."""

    # A VDC's fields but for its id, name and description (Django drops a field set to None).
    id = None  # removes VdcForm's field
    name = None  # removes VdcForm's field
    description = None  # removes VdcForm's field
    organization = forms.CharField(label="Organization id", max_length=63, help_text="Its id in Zitadel.")
    quota_vcpus = forms.IntegerField(label="vCPUs, in all", min_value=0)
    quota_memory_mib = forms.IntegerField(label="Memory, in all (MiB)", min_value=0)
    quota_disk_gb = forms.IntegerField(label="Disk, in all (GiB)", min_value=0)
    quota_vms = forms.IntegerField(label="VMs, in all", min_value=0)
    quota_networks = forms.IntegerField(
        label="Networks, in all", min_value=0, required=False, help_text="Empty: not bounded."
    )
    quota_public_ips = forms.IntegerField(
        label="Public IPs, in all", min_value=0, required=False, help_text="Empty: not bounded."
    )

    key_fields = ("organization",)

    def to_data(self) -> dict[str, Any]:
        data = {k: v for k, v in self.cleaned_data.items() if k != "organization"}
        quota = {q: data.pop(f"quota_{q}") for q in ALLOWANCE_QUOTAS}
        data["quota"] = {q: v for q, v in quota.items() if v is not None}
        return data

    @classmethod
    def of(cls, allowance: Allowance) -> dict[str, Any]:
        initial: dict[str, Any] = {
            "organization": allowance.organization,
            "zones": list(allowance.zones),
            "compute_profiles": list(allowance.compute_profiles),
            "storage_profiles": list(allowance.storage_profiles),
            "images": list(allowance.images),
        }
        for q in ALLOWANCE_QUOTAS:
            initial[f"quota_{q}"] = getattr(allowance.quota, q) if q in allowance.bounded else None
        return initial


class OrganizationVdcForm(VdcForm):
    """A VDC of an organization: its offerings chosen among the organization's allowance, its quota within
    what the allowance has left. Given ``usage`` (what the organization's VDCs have; on an edit,
    ``replacing``: this VDC's quota, which is room for it), each quota the allowance bounds says what is
    left, is refused above it next to its field, and a new VDC's starts inside it: at what is left, the
    networks' and public IPs' at their default when less. Left empty, those two take that default."""

    def __init__(
        self,
        *args: Any,
        allowance: Allowance,
        usage: AllowanceUsage | None = None,
        replacing: Usage | None = None,
        **kwargs: Any,
    ) -> None:
        self.allowance = allowance
        shown = limits(usage, replacing) if usage is not None else []
        self.room = {limit.attr: limit for limit in shown if limit.limit is not None}
        super().__init__(*args, **kwargs)
        for attr, limit in self.room.items():
            field = self.fields.get(f"quota_{attr}")
            if field is None:
                continue
            empty = _default(attr) is not None and not self.editing  # an empty field takes a default
            said = (
                _EMPTY.sub("", str(field.help_text)),  # what the quota is, without the platform's default
                f"{self._left(limit)}.",
                f"Empty: {_start(limit)}." if empty else "",
            )
            field.help_text = " ".join(part for part in said if part)
            if not self.editing and not self.is_bound:
                self.initial[f"quota_{attr}"] = _start(limit)
        if not self.editing and not self.is_bound:
            for name in self.ALLOWED:  # a new VDC may use all the allowance offers
                self.initial.setdefault(name, list(getattr(self.allowance, name)))

    def _left(self, limit: Limit) -> str:
        """What is left of one quota (for this VDC, on an edit), said with the allowance's figures."""
        org = self.allowance.name or self.allowance.organization
        most, limit_in_all, given = (
            f"{limit.left}{limit.unit}",
            f"{limit.limit}{limit.unit} {limit.label} in all",
            f"{limit.given}{limit.unit}",
        )
        if self.editing:
            return (
                f"At most {most} for this VDC: organization {org}'s allowance has {limit_in_all}, "
                f"its other VDCs {given}"
            )
        return (
            f"At most {most}: what is left of organization {org}'s allowance ({limit_in_all}; "
            f"its VDCs have {given})"
        )

    def _over(self, limit: Limit, value: int) -> str:
        """Why ``value`` is refused: more than what is left (for this VDC, on an edit)."""
        org = self.allowance.name or self.allowance.organization
        left = f"{limit.left}{limit.unit}"
        where = "this VDC may have within" if self.editing else "left of"
        return f"{value}{limit.unit} is more than the {left} {where} organization {org}'s allowance."

    def add_fields(self) -> None:
        super().add_fields()
        for name in self.ALLOWED:
            allowed = set(getattr(self.allowance, name))
            field = self.fields[name]
            field.choices = [(v, v) for v, _ in field.choices if v in allowed]  # type: ignore[attr-defined]  # a MultipleChoiceField

    def clean(self) -> dict[str, Any]:
        """Each bounded quota within what is left (said next to it); a new VDC's empty networks or public
        IPs take their default, within what is left."""
        cleaned = super().clean() or {}
        for attr, limit in self.room.items():
            name = f"quota_{attr}"
            if name not in cleaned:  # refused already (its own error), or not on the form
                continue
            value = cleaned[name]
            if value is None and _default(attr) is not None and not self.editing:
                cleaned[name] = _start(limit)
            elif value is not None and value > (limit.left or 0):
                self.add_error(name, self._over(limit, value))
        return cleaned


def _default(attr: str) -> int | None:
    """The quota a VDC is given when its create leaves it out (networks, public IPs); None: none."""
    declared = VDC_INPUTS[f"quota_{attr}"]
    return None if declared.required else int(declared.default)


def _start(limit: Limit) -> int:
    """A new VDC's quota, inside the allowance: what is left of it, or the platform's default when less."""
    left, default = limit.left or 0, _default(limit.attr)
    return left if default is None else min(default, left)
