"""Who did what, in the portal: the admin's Activity page (filters by user, VDC, operation and time, a page
at a time, its records as CSV), a VDC's recent activity on its dashboard (its members only), and a portal
action's one audit record."""

from __future__ import annotations

import csv
import datetime
import html
import io
import re
from urllib.parse import parse_qs

import pytest
import requests

from orchestrator.services import audit
from orchestrator.services.people import Person
from portal.activity import views
from tests.apikit import Api
from tests.kubekit import audit_records
from tests.portal.served import LightPortal
from tests.portal.sessionkit import csrf_token


@pytest.fixture(scope="module")
def sessions(site: LightPortal) -> dict[str, requests.Session]:
    return {user: site.session(user) for user in ("admin", "alice", "bob")}


def subject_of(api: Api, user: str) -> str:
    subject: str = api("{ me { subject } }", user=user).data["me"]["subject"]
    return subject


def in_demo(api: Api, user: str = "alice") -> str:
    """A record of VDC demo: alice asks for a snapshot of a VM that does not exist (NOT_FOUND)."""
    answer = api(
        'mutation { createSnapshot(vm: "zone-a/999999", name: "activity") { errors { code } } }',
        user=user,
        vdc="demo",
    )
    return answer.headers["X-Request-ID"]


def test_a_portal_action_writes_exactly_one_record(
    site: LightPortal,
    sessions: dict[str, requests.Session],
) -> None:
    alice = sessions["alice"]
    alice.get(f"{site.url}/vdc/demo/vms/", timeout=60)
    path = "/vdc/demo/vms/zone-a/999999/snapshots/new/"
    answer = alice.post(
        f"{site.url}{path}",
        data={"csrfmiddlewaretoken": csrf_token(alice, site), "name": "from-portal"},
        headers={"Referer": f"{site.url}{path}"},
        allow_redirects=False,
        timeout=60,
    )
    assert answer.status_code == 404  # no such VM: the 404 page, and a record of the attempt
    (record,) = audit_records(site.light.kube, answer.headers["X-Request-ID"])
    assert (record.operation, record.via, record.vdc) == ("createSnapshot", audit.PORTAL, "demo")
    assert (record.outcome, record.error_code) == (audit.FAILED, "NOT_FOUND")
    assert record.targets == {"vm": "zone-a/999999", "name": "from-portal"}


def test_a_vdcs_dashboard_shows_its_own_activity_to_its_members_only(
    api: Api, site: LightPortal, sessions: dict[str, requests.Session]
) -> None:
    in_demo(api)
    mine = sessions["alice"].get(f"{site.url}/vdc/demo/", timeout=60).text
    assert "data-vdc-activity" in mine
    assert 'data-operation="createSnapshot"' in mine
    assert 'data-vdc="demo"' in mine
    assert 'data-vdc="other"' not in mine
    theirs = sessions["bob"].get(f"{site.url}/vdc/other/", timeout=60).text
    assert 'data-vdc="demo"' not in theirs
    assert sessions["bob"].get(f"{site.url}/vdc/demo/", timeout=60).status_code == 404


def test_the_admins_activity_page_filters_by_user_vdc_and_operation(
    api: Api, site: LightPortal, sessions: dict[str, requests.Session]
) -> None:
    in_demo(api)
    alice = subject_of(api, "alice")
    admin = sessions["admin"]
    page = admin.get(f"{site.url}/admin/activity/", timeout=60)
    assert page.status_code == 200
    assert "data-record" in page.text
    filtered = admin.get(
        f"{site.url}/admin/activity/",
        params={"user": alice, "vdc": "demo", "operation": "createSnapshot"},
        timeout=60,
    ).text
    rows = filtered.count("data-record ")
    assert rows >= 1
    assert filtered.count(f'data-subject="{alice}"') == rows
    assert filtered.count('data-operation="createSnapshot"') == rows
    assert filtered.count('data-vdc="demo"') == rows
    nothing = admin.get(f"{site.url}/admin/activity/", params={"operation": "noSuchThing"}, timeout=60)
    assert "No activity matches." in nothing.text
    refused = admin.get(f"{site.url}/admin/activity/", params={"vdc": "Not A Slug"}, timeout=60)
    assert refused.status_code == 400


def test_the_activity_page_is_the_admins_alone(
    site: LightPortal, sessions: dict[str, requests.Session]
) -> None:
    for user in ("alice", "bob"):
        assert sessions[user].get(f"{site.url}/admin/activity/", timeout=60).status_code == 404


def test_the_activity_page_shows_a_page_at_a_time_with_the_filters_kept_from_page_to_page(
    api: Api, site: LightPortal, sessions: dict[str, requests.Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(views, "PAGE_SIZE", 2)
    sent = {in_demo(api) for _ in range(5)}
    admin = sessions["admin"]
    filters = {"vdc": "demo", "operation": "createSnapshot"}
    first = admin.get(f"{site.url}/admin/activity/", params=filters, timeout=60).text
    total = int(re.search(r"Records 1\u20132 of (\d+)", first).group(1))  # type: ignore[union-attr]
    assert total >= 5
    assert first.count("data-record ") == 2
    assert 'rel="prev"' not in first
    older = html.unescape(re.search(r'href="([^"]+)" rel="next"', first).group(1))  # type: ignore[union-attr]
    assert parse_qs(older.lstrip("?")) == {"vdc": ["demo"], "operation": ["createSnapshot"], "page": ["2"]}
    second = admin.get(f"{site.url}/admin/activity/{older}", timeout=60).text
    assert f"Records 3\u20134 of {total}" in second
    assert 'rel="prev"' in second
    ids = [set(re.findall(r'data-request="([^"]+)"', page)) for page in (first, second)]
    assert ids[0]
    assert ids[1]
    assert not ids[0] & ids[1]  # no record on both pages
    assert sent & (ids[0] | ids[1])
    beyond = admin.get(f"{site.url}/admin/activity/", params={**filters, "page": "999"}, timeout=60).text
    assert 'rel="next"' not in beyond  # the last page
    assert admin.get(f"{site.url}/admin/activity/", params={"page": "0"}, timeout=60).status_code == 400


def test_the_activity_page_keeps_the_records_of_a_time_window(
    api: Api, site: LightPortal, sessions: dict[str, requests.Session]
) -> None:
    in_demo(api)
    admin = sessions["admin"]
    now = datetime.datetime.now(datetime.UTC)
    window = {"vdc": "demo", "since": (now - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")}
    assert "data-record " in admin.get(f"{site.url}/admin/activity/", params=window, timeout=60).text
    later = {"since": (now + datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")}
    assert "No activity matches." in admin.get(f"{site.url}/admin/activity/", params=later, timeout=60).text
    earlier = {"until": (now - datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")}
    assert "No activity matches." in admin.get(f"{site.url}/admin/activity/", params=earlier, timeout=60).text
    swapped = {"since": "2026-12-06T10:00", "until": "2026-12-06T09:00"}
    refused = admin.get(f"{site.url}/admin/activity/", params=swapped, timeout=60)
    assert refused.status_code == 400
    assert "Until is before From: swap them" in refused.text
    bad = admin.get(f"{site.url}/admin/activity/", params={"since": "yesterday"}, timeout=60)
    assert bad.status_code == 400
    assert 'id="id_since-error"' in bad.text


def test_the_activity_exports_the_filtered_records_as_csv(
    api: Api, site: LightPortal, sessions: dict[str, requests.Session]
) -> None:
    request_id = in_demo(api)
    admin = sessions["admin"]
    page = admin.get(f"{site.url}/admin/activity/", params={"vdc": "demo"}, timeout=60).text
    link = html.unescape(re.search(r'href="([^"]+)" download data-export', page).group(1))  # type: ignore[union-attr]
    assert link == "/admin/activity.csv?vdc=demo"
    export = admin.get(f"{site.url}{link}", timeout=60)
    assert export.status_code == 200
    assert export.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="flexplane-activity-\d{8}T\d{6}Z\.csv"', export.headers["Content-Disposition"]
    )
    rows = list(csv.DictReader(io.StringIO(export.text)))
    assert list(rows[0]) == list(views.CSV_COLUMNS)
    assert {row["vdc"] for row in rows} == {"demo"}
    (mine,) = [row for row in rows if row["request_id"] == request_id]
    assert (mine["operation"], mine["outcome"], mine["error_code"]) == (
        "createSnapshot",
        "failed",
        "NOT_FOUND",
    )
    assert mine["user"] == "Alice Example"
    assert mine["targets"] == "vm=zone-a/999999; name=activity"
    refused = admin.get(f"{site.url}/admin/activity.csv", params={"vdc": "Not A Slug"}, timeout=60)
    assert refused.status_code == 400
    assert refused.text.startswith("Bad filter: vdc:")
    for user in ("alice", "bob"):
        assert sessions[user].get(f"{site.url}/admin/activity.csv", timeout=60).status_code == 404


def test_a_cell_of_the_export_is_never_a_spreadsheets_formula() -> None:
    record = audit.AuditRecord(
        time=datetime.datetime(2026, 12, 6, 12, 0, tzinfo=datetime.UTC),
        subject="=HYPERLINK(1)",
        roles=(),
        vdc=None,
        operation="createVdc",
        targets={"name": "+x"},
        outcome="failed",
        error_code="-1",
        request_id="@id",
        client=None,
        via="api",
        name="Mallory",
    )
    mallory = Person(record.subject, "Mallory")
    (row,) = list(views._rows(views.Activity([record], people={record.subject: mallory})))[1:]
    assert row[1] == "'=HYPERLINK(1)"
    assert row[2] == "Mallory"
    assert row[5] == "name=+x"  # the cell starts with the key
    assert (row[7], row[10]) == ("'-1", "'@id")
