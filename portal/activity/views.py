"""Who did what: the admin's Activity page (and its CSV export), and a VDC's recent activity on its dashboard.

Both read the audit records the Kubernetes Events still hold (``services.audit.recent``): the newest
first, as far back as the cluster keeps Events (an hour by default). ADMIN sees every VDC's, a page of
them at a time, filtered by who, VDC, operation and time, and can take the filtered records away as CSV;
a VDC's dashboard shows that VDC's alone, to its members.
"""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

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

# How many records a page of the Activity page and a dashboard show; how many the page and its export read.
PAGE_SIZE = 50
DASHBOARD_SIZE = 10
READ_AT_MOST = audit.MAX_READ
# The export's columns, in order.
CSV_COLUMNS = (
    "time",
    "user_id",
    "user",
    "vdc",
    "operation",
    "targets",
    "outcome",
    "error_code",
    "via",
    "client",
    "request_id",
)
# A cell a spreadsheet would take for a formula (OWASP's CSV injection) starts with one of these.
FORMULA = ("=", "+", "-", "@", "\t", "\r")
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
    since = forms.DateTimeField(
        required=False,
        label="From (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    until = forms.DateTimeField(
        required=False,
        label="Until (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    page = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            self.add_error("until", "Until is before From: swap them")
        return cleaned

    def chosen(self) -> dict[str, Any]:
        """What a valid form was sent (nothing, unsent)."""
        return self.cleaned_data if self.is_bound else {}

    def filters(self) -> dict[str, Any]:
        """The chosen filters, as ``read`` takes them (none chosen: every record)."""
        return {key: self.chosen().get(key) or None for key in ("user", "vdc", "operation", "since", "until")}

    def query(self, **changed: Any) -> str:
        """The filters' query string as they were sent, with ``changed`` (a page number)."""
        sent = (
            {k: v for k, v in self.data.items() if k in self.fields and k != "page" and v}
            if self.is_bound
            else {}
        )
        sent.update({k: str(v) for k, v in changed.items()})
        return urlencode(sent)


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


@dataclass(frozen=True)
class Page:
    """One page of the records a filter keeps: its number (from 1), the first and last record's position
    (from 1), how many the filter keeps, and the links to the newer and the older page (None: none)."""

    number: int
    first: int
    last: int
    total: int
    newer: str | None
    older: str | None


def _kept(ctx: Context, limit: int, **filters: Any) -> list[AuditRecord] | str:
    """The newest ``limit`` records the filters keep, or why they could not be read (the management
    cluster did not answer: said, not raised)."""
    try:
        return audit.recent(ctx, **filters, limit=limit)
    except (Unavailable, UpstreamFailure) as exc:
        return f"The activity could not be read: {exc.message}"


def _named(ctx: Context, records: list[AuditRecord]) -> Activity:
    """``records`` with their callers by name (the names the records keep, the others' from one call to
    Zitadel)."""
    named = {r.subject: r.name for r in records if r.name}
    return Activity(records, people=people(ctx, (r.subject for r in records), named))


def read(ctx: Context, *, limit: int = PAGE_SIZE, **filters: Any) -> Activity:
    """The newest ``limit`` records for the filters (``vdc``, ``user``, ``operation``, ``since``, ``until``:
    ``services.audit.recent``'s), their callers by name."""
    kept = _kept(ctx, limit, **filters)
    return Activity([], kept) if isinstance(kept, str) else _named(ctx, kept)


def vdc_activity(ctx: Context) -> Activity:
    """The request's VDC's newest records, for its dashboard."""
    return read(ctx, vdc=ctx.vdc, limit=DASHBOARD_SIZE)


def paged(form: ActivityFilterForm, ctx: Context) -> tuple[Activity, Page | None]:
    """The page of records the form asks for (its callers by name), and where it sits among all the filter
    keeps (None: they could not be read)."""
    kept = _kept(ctx, READ_AT_MOST, **form.filters())
    if isinstance(kept, str):
        return Activity([], kept), None
    total = len(kept)
    pages = max(1, -(-total // PAGE_SIZE))
    number = min(form.chosen().get("page") or 1, pages)
    start = (number - 1) * PAGE_SIZE
    shown = _named(ctx, kept[start : start + PAGE_SIZE])
    return shown, Page(
        number=number,
        first=start + 1 if total else 0,
        last=start + len(shown.records),
        total=total,
        newer=f"?{form.query(page=number - 1)}" if number > 1 else None,
        older=f"?{form.query(page=number + 1)}" if number < pages else None,
    )


@admin_view
def activity_page(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/admin/activity/``: every VDC's recent records, a page at a time, filtered by user, VDC,
    operation and time; the filtered records' CSV linked."""
    form = ActivityFilterForm(request.GET or None)
    valid = not form.is_bound or form.is_valid()
    activity, page = paged(form, ctx) if valid else (Activity([]), None)
    return admin_page(
        request,
        "portal/activity/admin.html",
        {
            "form": form,
            "activity": activity,
            "page": page,
            "export": f"?{form.query()}" if valid else None,
            "read_at_most": READ_AT_MOST,
        },
        active=ACTIVE,
        status=200 if valid else 400,
    )


def _cell(value: str) -> str:
    """``value`` as a spreadsheet shows it, never run as a formula."""
    return f"'{value}" if value.startswith(FORMULA) else value


def _rows(activity: Activity) -> Iterator[list[str]]:
    yield list(CSV_COLUMNS)
    for entry in activity.entries:
        record = entry.record
        targets = "; ".join(f"{key}={value}" for key, value in record.targets.items())
        row = [
            record.time.isoformat(),
            record.subject,
            entry.who.name or entry.who.username,
            record.vdc or "",
            record.operation,
            targets,
            record.outcome,
            record.error_code or "",
            record.via,
            record.client or "",
            record.request_id or "",
        ]
        yield [_cell(value) for value in row]


@admin_view
def activity_csv(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/admin/activity.csv``: every record the Activity page's filters keep (as many as it reads), newest
    first, as CSV (UTF-8, a header row); a bad filter answers 400 naming it."""
    form = ActivityFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        said = "; ".join(f"{name}: {' '.join(map(str, errors))}" for name, errors in form.errors.items())
        return HttpResponse(f"Bad filter: {said}\n", status=400, content_type="text/plain; charset=utf-8")
    activity = read(ctx, **form.filters(), limit=READ_AT_MOST)
    if activity.problem:
        return HttpResponse(activity.problem + "\n", status=503, content_type="text/plain; charset=utf-8")
    out = io.StringIO()
    csv.writer(out).writerows(_rows(activity))
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="flexplane-activity-{stamp}.csv"'
    return response
