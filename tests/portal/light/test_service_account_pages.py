"""The service-account pages as a browser uses them: ``requests`` sessions signed in as the portal's login
records them, the portal served from this process (tests/portal/served.py), Zitadel in memory
(tests/orchestrator/fakezitadel.py).

What a page did is checked where it lands: the machine users Zitadel holds, and the audit records. The key is
answered once: the page of the POST that made it shows it (``no-store``), and no later page, nor the signed
session, holds it.
"""

from __future__ import annotations

import datetime
import html
import json
import re
import uuid
from collections.abc import Callable, Iterator

import pytest
import requests

from orchestrator.services import audit
from orchestrator.services.service_accounts import PREFIX
from tests.kubekit import audit_records
from tests.orchestrator.api.light.test_service_accounts import create
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi
from tests.portal.pagekit import field_error, get, post
from tests.portal.served import LightPortal
from tests.portal.sessionkit import portal_session

LIST = "query($v: ID) { serviceAccounts(vdc: $v) { id name } }"
REVOKE = "mutation($id: ID!) { revokeServiceAccount(id: $id) { errors { code } } }"
ROW = re.compile(r'<tr data-service-account="([^"]+)">')
KEY = re.compile(r"<textarea [^>]*data-key>(.*?)</textarea>", re.S)


@pytest.fixture
def names(api: InProcessApi) -> Iterator[Callable[[str], str]]:
    """Fresh account names for the test (``names("ci")``: ``ci-<hex>``); whatever of them is left in any
    VDC is revoked afterwards."""
    made: list[str] = []

    def name(base: str) -> str:
        made.append(f"{base}-{uuid.uuid4().hex[:8]}")
        return made[-1]

    yield name
    for account in api(LIST, user="admin").data["serviceAccounts"]:
        if account["name"] in made:
            api(REVOKE, user="admin", variables={"id": account["id"]})


def listed(session: requests.Session, site: LightPortal, vdc: str = "demo") -> list[str]:
    page = get(session, site, f"/vdc/{vdc}/service-accounts/")
    assert page.status_code == 200, page.text[:2000]
    return ROW.findall(page.text)


def new_account(
    session: requests.Session, site: LightPortal, name: str, expires: datetime.date | None = None
) -> requests.Response:
    """The create form sent as the browser sends it (the expiry: the form's default of 90 days)."""
    get(session, site, "/vdc/demo/service-accounts/new/")
    day = expires or datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=90)
    return post(session, site, "/vdc/demo/service-accounts/new/", {"name": name, "expires": day.isoformat()})


def machines_named(zitadel: FakeZitadel, vdc: str, name: str) -> list[str]:
    return [m.id for m in zitadel.machines.values() if m.username == f"{PREFIX}{vdc}.{name}"]


def test_the_list_shows_the_vdcs_accounts_and_not_another_vdcs(
    api: InProcessApi, site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    ours, theirs = names("ours"), names("theirs")
    assert create(api, "alice", "demo", ours).data["createServiceAccount"]["errors"] == []
    assert create(api, "bob", "other", theirs).data["createServiceAccount"]["errors"] == []
    shown = listed(alice, site)
    assert ours in shown
    assert theirs not in shown
    page = get(alice, site, "/vdc/demo/service-accounts/").text
    assert "Alice Example" in page  # who made it, by name
    assert 'href="/vdc/demo/service-accounts/"' in page  # the navigation's entry


def test_creating_shows_the_key_once_and_keeps_it_nowhere(
    site: LightPortal, alice: requests.Session, zitadel: FakeZitadel, names: Callable[[str], str]
) -> None:
    name = names("ci")
    made = new_account(alice, site, name)
    assert made.status_code == 200, field_error(made.text, "name") or made.text[:2000]
    assert made.headers["Cache-Control"] == "no-store"
    (text,) = KEY.findall(made.text)
    key = json.loads(html.unescape(text))
    assert machines_named(zitadel, "demo", name) == [key["userId"]]
    assert f'download="{name}-key.json"' in made.text
    assert f"flexplane login --service-account-key {name}-key.json" in made.text
    (record,) = audit_records(site.light.kube, made.headers["X-Request-ID"])
    assert (record.operation, record.via, record.vdc, record.outcome) == (
        "createServiceAccount",
        audit.PORTAL,
        "demo",
        audit.SUCCEEDED,
    )
    assert key["keyId"] not in json.dumps(record.targets)
    # Looked at again: the account is listed, its key is on no page and not in the session.
    again = get(alice, site, "/vdc/demo/service-accounts/")
    assert name in ROW.findall(again.text)
    form = get(alice, site, "/vdc/demo/service-accounts/new/")
    for page in (again, form):
        assert key["keyId"] not in page.text
        assert "data-key" not in page.text
    assert key["keyId"] not in json.dumps(dict(portal_session(alice, site).items()), default=str)


def test_a_name_taken_in_the_vdc_is_said_next_to_the_name(
    api: InProcessApi, site: LightPortal, alice: requests.Session, names: Callable[[str], str]
) -> None:
    name = names("taken")
    assert create(api, "alice", "demo", name).data["createServiceAccount"]["errors"] == []
    again = new_account(alice, site, name)
    assert again.status_code == 200
    assert "already has a service account named" in field_error(again.text, "name")
    assert "data-key" not in again.text


def test_an_invalid_name_and_an_expiry_out_of_range_are_said_next_to_their_fields(
    site: LightPortal, alice: requests.Session, zitadel: FakeZitadel
) -> None:
    bad = new_account(alice, site, "Not-A-Label")
    assert "lowercase letters, digits" in field_error(bad.text, "name")
    today = datetime.datetime.now(datetime.UTC).date()
    for day, said in ((today, "not in the future"), (today + datetime.timedelta(days=400), "at most 365")):
        refused = new_account(alice, site, f"late-{uuid.uuid4().hex[:6]}", day)
        assert said in field_error(refused.text, "expires"), refused.text[:2000]
        assert "data-key" not in refused.text
    assert not machines_named(zitadel, "demo", "Not-A-Label")


def test_revoking_asks_first_then_the_account_is_gone_and_recorded(
    api: InProcessApi,
    site: LightPortal,
    alice: requests.Session,
    zitadel: FakeZitadel,
    names: Callable[[str], str],
) -> None:
    name = names("gone")
    assert create(api, "alice", "demo", name).data["createServiceAccount"]["errors"] == []
    path = f"/vdc/demo/service-accounts/{name}/revoke/"
    asked = get(alice, site, path)
    assert asked.status_code == 200
    assert f"Revoke service account {name}?" in asked.text
    assert machines_named(zitadel, "demo", name)  # asking changes nothing
    done = post(alice, site, path, {"confirm": "yes"})
    assert done.status_code == 303
    assert done.headers["Location"] == "/vdc/demo/service-accounts/"
    assert name not in listed(alice, site)
    assert not machines_named(zitadel, "demo", name)
    (record,) = audit_records(site.light.kube, done.headers["X-Request-ID"])
    assert (record.operation, record.vdc, record.outcome) == ("revokeServiceAccount", "demo", audit.SUCCEEDED)
    assert record.targets["name"] == name
    assert get(alice, site, path).status_code == 404  # nothing left to revoke


def test_a_user_without_the_vdc_gets_the_not_found_page(
    api: InProcessApi, site: LightPortal, bob: requests.Session, names: Callable[[str], str]
) -> None:
    name = names("hidden")
    assert create(api, "alice", "demo", name).data["createServiceAccount"]["errors"] == []
    for path in ("", "new/", f"{name}/revoke/"):
        assert get(bob, site, f"/vdc/demo/service-accounts/{path}").status_code == 404
    listed(bob, site, "other")  # bob's own VDC's page is served
    # Another VDC's account through one's own VDC's page: the same 404 as a missing one.
    theirs = f"/vdc/other/service-accounts/{name}/revoke/"
    assert get(bob, site, theirs).status_code == 404
    assert post(bob, site, theirs, {"confirm": "yes"}).status_code == 404
    assert name in listed(site.session("alice"), site)


def test_the_forms_refuse_a_post_without_the_csrf_token(
    api: InProcessApi,
    site: LightPortal,
    alice: requests.Session,
    zitadel: FakeZitadel,
    names: Callable[[str], str],
) -> None:
    kept, tried = names("kept"), names("forged")
    assert create(api, "alice", "demo", kept).data["createServiceAccount"]["errors"] == []
    get(alice, site, "/vdc/demo/service-accounts/new/")
    day = (datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=30)).isoformat()
    for path, data in (
        ("new/", {"name": tried, "expires": day}),
        (f"{kept}/revoke/", {"confirm": "yes"}),
    ):
        url = f"{site.url}/vdc/demo/service-accounts/{path}"
        answer = alice.post(url, data=data, headers={"Referer": url}, allow_redirects=False, timeout=60)
        assert answer.status_code == 403
    assert not machines_named(zitadel, "demo", tried)
    assert machines_named(zitadel, "demo", kept)
