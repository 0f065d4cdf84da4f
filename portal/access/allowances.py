"""What an organization's allowance bounds, what its VDCs have of it and what is left: the lines of the
organization's card, and the room its VDC forms offer (``portal.access.forms.OrganizationVdcForm``)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.models import Usage
from orchestrator.services.organizations import AllowanceUsage


@dataclass(frozen=True)
class Limit:
    """One quota as the pages say it: the resource (``vcpus``), how it is named and its unit (``Usage``'s),
    the allowance's limit (None: the allowance does not bound it) and what the organization's VDCs have
    of it (the sum of their quotas)."""

    attr: str
    label: str
    unit: str
    limit: int | None
    given: int

    @property
    def heading(self) -> str:
        """Its name at the head of a line (``vCPUs`` stays as it is, ``public IPs`` starts with a capital)."""
        return self.label if self.label[1:2].isupper() else self.label[:1].upper() + self.label[1:]

    @property
    def left(self) -> int | None:
        """What is left of the limit (never below 0); None when not bounded."""
        return None if self.limit is None else max(self.limit - self.given, 0)


def limits(usage: AllowanceUsage, replacing: Usage | None = None) -> list[Limit]:
    """Each quota of ``usage``'s allowance, bounded or not, in ``Usage.RESOURCES``' order. ``replacing``: the
    quota of the VDC being changed, not counted as given (what is left is then that VDC's room)."""
    allowance = usage.allowance
    given = usage.allotted - replacing if replacing is not None else usage.allotted
    return [
        Limit(
            attr,
            label,
            unit,
            getattr(allowance.quota, attr) if attr in allowance.bounded else None,
            getattr(given, attr),
        )
        for attr, label, unit in Usage.RESOURCES
    ]
