"""The Access section's forms: plain Django forms, checked again by the services."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms

from orchestrator.models import Usage
from orchestrator.services.access_admin.users import PLATFORM_ROLES, SEARCH_MAX
from orchestrator.services.organizations import Allowance, AllowanceUsage
from portal.admin.forms import VdcForm
from portal.forms import choices

ALLOWANCE_QUOTAS = ("vcpus", "memory_mib", "disk_gb", "vms", "networks", "public_ips")


class SearchForm(forms.Form):
    search = forms.CharField(
        label="Find users", max_length=SEARCH_MAX, help_text="Part of a name, user name or email."
    )


class GrantForm(forms.Form):
    vdc = forms.ChoiceField(label="VDC")

    def __init__(self, *args: Any, vdcs: Iterable[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices(self.fields["vdc"], [(v, v) for v in vdcs])


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
    """A VDC of an organization: its offerings chosen among the organization's allowance. Given ``usage``
    (an edit), each quota the allowance bounds says its limit and what the organization's VDCs have."""

    def __init__(
        self, *args: Any, allowance: Allowance, usage: AllowanceUsage | None = None, **kwargs: Any
    ) -> None:
        self.allowance = allowance
        super().__init__(*args, **kwargs)
        if usage is not None:
            self.show_limits(usage)

    def show_limits(self, usage: AllowanceUsage) -> None:
        allowance = usage.allowance
        for attr, label, unit in Usage.RESOURCES:
            field = self.fields.get(f"quota_{attr}")
            if field is None or attr not in allowance.bounded:
                continue
            limit, given = getattr(allowance.quota, attr), getattr(usage.allotted, attr)
            field.help_text = (
                f"Organization {allowance.name}'s allowance: {limit}{unit} {label} in all; "
                f"its VDCs have {given}{unit}, this one's included."
            )

    def add_fields(self) -> None:
        super().add_fields()
        for name in self.ALLOWED:
            allowed = set(getattr(self.allowance, name))
            field = self.fields[name]
            field.choices = [(v, v) for v, _ in field.choices if v in allowed]  # type: ignore[attr-defined]  # a MultipleChoiceField
