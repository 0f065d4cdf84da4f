"""Who did what: the admin's Activity page, and a VDC's recent activity on its dashboard.

Both read the audit records the Kubernetes Events still hold (``services.audit.recent``): the newest
first, as far back as the cluster keeps Events (an hour by default). ADMIN sees every VDC's; a VDC's
dashboard shows that VDC's alone, to its members.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django import forms
from django.core.validators import RegexValidator
from django.http import HttpRequest, HttpResponse

from orchestrator.errors import Unavailable, UpstreamFailure
from orchestrator.services import audit
from orchestrator.services.audit import AuditRecord
from orchestrator.services.context import Context
from orchestrator.services.people import Person, people
from portal.admin.pages import admin_page
from portal.context import admin_view

# How many records the Activity page and a dashboard show.
PAGE_SIZE = 200
DASHBOARD_SIZE = 10
ACTIVE = "activity"


class ActivityFilterForm(forms.Form):
    """The Activity page's filters (a GET form): each one left empty keeps every record."""

    user = forms.CharField(
        required=False,
        max_length=255,
        label="User (subject)",
        validators=[RegexValidator(r"^[A-Za-z0-9@._:|-]*$", "A subject is letters, digits and @._:|-")],
    )
    vdc = forms.CharField(
        required=False,
        max_length=63,
        label="VDC",
        validators=[RegexValidator(r"^[a-z0-9-]*$", "A VDC id is a lowercase slug")],
    )
    operation = forms.CharField(
        required=False,
        max_length=128,
        label="Operation",
        validators=[RegexValidator(r"^[A-Za-z0-9:._-]*$", "An operation is a mutation's name")],
    )


@dataclass(frozen=True)
class Entry:
    """A record as a row shows it: who by name."""

    record: AuditRecord
    who: Person


@dataclass(frozen=True)
class Activity:
    """Records to show, or why they could not be read (the management cluster did not answer); their
    callers by name (``portal.people``)."""

    records: list[AuditRecord]
    problem: str | None = None
    people: Mapping[str, Person] = field(default_factory=dict)

    @property
    def entries(self) -> list[Entry]:
        return [Entry(r, self.people.get(r.subject) or Person(r.subject)) for r in self.records]


def read(
    ctx: Context,
    *,
    vdc: str | None = None,
    user: str | None = None,
    operation: str | None = None,
    limit: int = PAGE_SIZE,
) -> Activity:
    """The newest records for the filters, their callers by name (the names the records keep, the others'
    from one call to Zitadel); a cluster that does not answer is said, not raised."""
    try:
        records = audit.recent(
            ctx, vdc=vdc or None, user=user or None, operation=operation or None, limit=limit
        )
    except (Unavailable, UpstreamFailure) as exc:
        return Activity([], f"The activity could not be read: {exc.message}")
    named = {r.subject: r.name for r in records if r.name}
    return Activity(records, people=people(ctx, (r.subject for r in records), named))


def vdc_activity(ctx: Context) -> Activity:
    """The request's VDC's newest records, for its dashboard."""
    return read(ctx, vdc=ctx.vdc, limit=DASHBOARD_SIZE)


@admin_view
def activity_page(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/admin/activity/``: every VDC's recent records, filtered by user, VDC and operation."""
    form = ActivityFilterForm(request.GET or None)
    chosen = form.cleaned_data if form.is_bound and form.is_valid() else {}
    activity = (
        read(ctx, user=chosen.get("user"), vdc=chosen.get("vdc"), operation=chosen.get("operation"))
        if not form.is_bound or form.is_valid()
        else Activity([])
    )
    return admin_page(
        request,
        "portal/activity/admin.html",
        {"form": form, "activity": activity, "limit": PAGE_SIZE},
        active=ACTIVE,
        status=200 if not form.errors else 400,
    )
