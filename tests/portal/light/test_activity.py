"""Who did what, in the portal: the admin's Activity page (filters by user, VDC and operation), a VDC's
recent activity on its dashboard (its members only), and a portal action's one audit record."""

from __future__ import annotations

import pytest
import requests

from orchestrator.services import audit
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
