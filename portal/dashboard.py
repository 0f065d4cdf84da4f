"""The VDC dashboard ``/vdc/<vdc>/``: usage against each quota, VMs by status, recent tasks.

Everything comes from the same service calls the API makes: the VDC's definition and usage
(``services.vdcs``: ``vdc``), its VMs (``services.vms``: ``virtualMachines``) and its recent tasks
(``services.tasks``: ``tasks``); one ``/cluster/resources`` per zone for the three, and one
``/nodes/{node}/tasks`` per node its VMs run on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from orchestrator.models import Usage, Vdc
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import tasks, vdcs, vms
from orchestrator.services.context import Context
from portal.activity.views import vdc_activity
from portal.context import vdc_view
from portal.vms.forms import STATUSES

RECENT_TASKS = 10
# Amounts shown as a share of their quota: the bar turns to a warning from this share on.
HIGH = 0.9


@dataclass(frozen=True)
class QuotaLine:
    """One quota'd resource: how much is used of how much is allowed."""

    label: str
    unit: str
    used: int
    limit: int

    @property
    def none_allowed(self) -> bool:
        """A limit of 0: said in words, as a share of nothing is no number."""
        return self.limit <= 0

    @property
    def percent(self) -> int | None:
        """Used as a share of the limit, in percent (capped at 999); None when nothing is allowed."""
        if self.none_allowed:
            return None
        return min(999, round(self.used * 100 / self.limit))

    @property
    def scale(self) -> int:
        """The meter's maximum: the limit; with none allowed, what is used (a full bar past the limit)."""
        return self.limit if self.limit > 0 else max(self.used, 1)

    @property
    def high(self) -> float:
        """From here on the meter warns; with none allowed, anything used is past the limit (red)."""
        return self.limit * HIGH if self.limit > 0 else 0.5

    @property
    def over(self) -> bool:
        return self.used > self.limit


def quota_lines(vdc: Vdc, used: Usage) -> list[QuotaLine]:
    return [
        QuotaLine(label, unit.strip(), getattr(used, attr), getattr(vdc.quota, attr))
        for attr, label, unit in Usage.RESOURCES
    ]


def all_vms(ctx: Context) -> list[VirtualMachine]:
    """Every VM of the request's VDC, page after page (the pages share one read per zone)."""
    found: list[VirtualMachine] = []
    after: str | None = None
    while True:
        page = vms.list_vms(ctx, first=settings.FLEXPLANE_PAGE_SIZE_MAX, after=after)
        found.extend(page.items)
        if not page.has_next:
            return found
        after = page.end_cursor


@dataclass(frozen=True)
class StatusCount:
    """How many of the VDC's VMs Proxmox reports in one status, and of those, how many are busy with
    each lock (a clone, a migration, a backup...)."""

    status: str
    count: int
    busy: tuple[tuple[str, int], ...] = ()

    @property
    def filter(self) -> str | None:
        """The VM list's status filter that shows exactly these VMs; None when the list has none."""
        return self.status if self.status in STATUSES else None


def _busy(machines: list[VirtualMachine]) -> tuple[tuple[str, int], ...]:
    """``((lock, count), ...)`` of the VMs under a Proxmox lock, by lock."""
    return tuple(sorted(Counter(vm.lock for vm in machines if vm.lock).items()))


def counts_by_status(machines: list[VirtualMachine]) -> list[StatusCount]:
    """The VMs counted by status as the VM list filters them, most common first, with their locks."""
    counted = Counter(vm.status for vm in machines)
    return [
        StatusCount(status, count, _busy([vm for vm in machines if vm.status == status]))
        for status, count in sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    ]


@vdc_view
def dashboard(request: HttpRequest, ctx: Context) -> HttpResponse:
    assert ctx.vdc is not None
    vdc = vdcs.get_vdc(ctx, ctx.vdc)
    machines = all_vms(ctx)
    return render(
        request,
        "portal/dashboard/dashboard.html",
        {
            "vdc": vdc,
            "quotas": quota_lines(vdc, vdcs.usage(ctx, vdc.id)),
            "vm_total": len(machines),
            "vm_counts": counts_by_status(machines),
            "tasks": tasks.recent_tasks(ctx, first=RECENT_TASKS),
            "activity": vdc_activity(ctx),
        },
    )
