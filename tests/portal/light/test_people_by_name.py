"""People and organizations by name (issue 37, item 2): the Activity page and a VDC's recent activity say
who by name, join tokens by whom they were made, an organization's pages and the API's refusals name it
and its users; the ids stay where an admin needs them (a title, small text, the filter). Names come from
what is recorded (an audit record's, a token's) and else from one call to Zitadel per page; when Zitadel
does not answer, the page is served with the ids.

Served from this process on the light world, with Zitadel in memory (``tests/orchestrator/fakezitadel.py``).
"""

from __future__ import annotations

import datetime
import html
import re
from collections.abc import Iterable

import pytest
import requests

from devstack.identity.claims import subject_of
from orchestrator.auth import ADMIN
from orchestrator.errors import Unavailable
from orchestrator.services import audit, enrollment
from orchestrator.sources.zitadel import User
from tests.orchestrator.api.light.test_access import vdc as vdc_input
from tests.orchestrator.api.light.test_organizations import (
    user,
)
from tests.orchestrator.fakekube import context_on
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi
from tests.portal.pagekit import get
from tests.portal.served import LightPortal

ACTIVITY = "/admin/activity/"
CREATE_VDC = "mutation($input: VdcInput!) { createVdc(input: $input) { errors { field code message } } }"
GRANT = "mutation($u: ID!, $v: ID!) { grantVdcMembership(user: $u, vdc: $v) { errors { code message } } }"
JOIN_TOKEN = 'mutation { createHostJoinToken(host: "named-node", zone: "zone-a") { errors { code } } }'


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture
def asked(zitadel: FakeZitadel, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of each ``users`` call made to Zitadel during the test."""
    calls: list[list[str]] = []
    real = zitadel.users

    def users(user_ids: Iterable[str]) -> list[User]:
        ids = list(user_ids)
        calls.append(ids)
        return real(ids)

    monkeypatch.setattr(zitadel, "users", users)
    return calls


# ------------------------------------------------------------------------------------------ helpers


def text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))).strip()


def who(page: str, subject: str) -> list[str]:
    """The words of each Who cell of the person ``subject``."""
    cells = re.findall(r'<td data-label="Who"[^>]*>(.*?)</td>', page, flags=re.S)
    return [text(c) for c in cells if f'data-person="{subject}"' in c]


def heading(page: str) -> str:
    found = re.search(r"<h1[^>]*>(.*?)</h1>", page, flags=re.S)
    assert found is not None
    return text(found.group(1))


def unnamed_record(site: LightPortal, username: str, vdc: str = "demo") -> None:
    """A record of ``username`` written before records kept their caller's name (none in it)."""
    subject = subject_of(username)
    ctx = context_on(site.light.kube, ADMIN, subject=subject)
    audit.write(
        ctx,
        audit.AuditRecord(
            time=datetime.datetime.now(datetime.UTC),
            subject=subject,
            roles=(ADMIN,),
            vdc=vdc,
            operation="startVirtualMachine",
            targets={"vm": "zone-a/999998"},
            outcome=audit.FAILED,
            error_code="NOT_FOUND",
            request_id=f"people-{username}",
            client=None,
            via=audit.API,
        ),
    )


def alice_did_something(api: InProcessApi) -> None:
    answer = api(
        'mutation { createSnapshot(vm: "zone-a/999999", name: "named") { errors { code } } }',
        user="alice",
        vdc="demo",
    )
    assert answer.data["createSnapshot"]["errors"] == [{"code": "NOT_FOUND"}]


# ------------------------------------------------------------------------------------------ activity


def test_a_record_keeps_its_callers_name_from_their_token(api: InProcessApi, site: LightPortal) -> None:
    alice_did_something(api)
    alice = subject_of("alice")
    records = [r for r in audit.recent(context_on(site.light.kube, ADMIN), user=alice) if r.via == audit.API]
    assert records[0].name == "Alice Example"


def test_the_activity_page_names_each_caller_asking_zitadel_once_and_keeps_their_id(
    api: InProcessApi, site: LightPortal, admin: requests.Session, asked: list[list[str]]
) -> None:
    alice_did_something(api)
    unnamed_record(site, "oscar")
    unnamed_record(site, "bob", vdc="other")
    page = get(admin, site, ACTIVITY)
    assert page.status_code == 200
    alice, oscar, bob = subject_of("alice"), subject_of("oscar"), subject_of("bob")
    assert who(page.text, alice)[0] == "Alice Example"  # the name, the id in its title
    assert who(page.text, oscar)[0] == "Oscar Acme oscar"  # Zitadel's name and user name
    assert who(page.text, bob)[0] == "Bob Example bob"
    assert f'title="Their records (user id {alice})"' in page.text
    # One call for the page, for the callers whose records keep no name (alice's keeps hers).
    assert len(asked) == 1
    assert {oscar, bob} <= set(asked[0])
    assert alice not in asked[0]
    # The name leads to the person's records: the filter by their id.
    assert f'href="?user={oscar}"' in page.text


def test_a_vdcs_dashboard_names_who_did_what_to_its_members(
    api: InProcessApi, site: LightPortal, alice: requests.Session, asked: list[list[str]]
) -> None:
    alice_did_something(api)
    unnamed_record(site, "oscar")
    page = get(alice, site, "/vdc/demo/")
    assert page.status_code == 200
    assert who(page.text, subject_of("alice"))[0] == "Alice Example"
    assert who(page.text, subject_of("oscar"))[0] == "Oscar Acme oscar"
    assert len(asked) <= 1


def test_without_zitadel_the_activity_is_served_with_the_ids_of_the_unnamed(
    api: InProcessApi,
    site: LightPortal,
    admin: requests.Session,
    zitadel: FakeZitadel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def away(user_ids: Iterable[str]) -> list[User]:
        raise Unavailable("Zitadel", "Zitadel did not answer ListUsers within 5s")

    monkeypatch.setattr(zitadel, "users", away)
    alice_did_something(api)
    unnamed_record(site, "oscar")
    page = get(admin, site, ACTIVITY)
    assert page.status_code == 200
    oscar = subject_of("oscar")
    assert who(page.text, oscar)[0] == oscar
    assert who(page.text, subject_of("alice"))[0].startswith("Alice Example")


# ------------------------------------------------------------------------------------------ join tokens


def test_join_tokens_name_who_made_them(
    api: InProcessApi, site: LightPortal, admin: requests.Session, asked: list[list[str]]
) -> None:
    made = api(JOIN_TOKEN, user="admin")
    assert made.data["createHostJoinToken"]["errors"] == [], made.body
    # One made before tokens kept their creator's name: named by Zitadel.
    ctx = context_on(site.light.kube, ADMIN, subject=subject_of("oscar"))  # named by their id alone
    enrollment.create_join_token(ctx, "zone-a", "older-node", "http://orchestrator.example")
    page = get(admin, site, "/admin/hosts/")
    assert page.status_code == 200
    cells = [text(c) for c in re.findall(r'<td data-label="Created by"[^>]*>(.*?)</td>', page.text, re.S)]
    assert "Platform Admin" in cells
    assert "Oscar Acme oscar" in cells
    assert not any(re.fullmatch(r"\d{10,}", c) for c in cells)
    assert f'title="User id {subject_of("admin")}"' in page.text
    assert len(asked) == 1


# ------------------------------------------------------------------------------------------ organizations


def test_an_owners_new_vdc_page_names_the_organization_with_or_without_an_allowance(
    api: InProcessApi, site: LightPortal, olivia: requests.Session
) -> None:
    org = str(user(api, "olivia")["organization"])
    page = get(olivia, site, f"/admin/access/organizations/{org}/vdcs/new/")
    assert page.status_code == 200
    assert heading(page.text) == "New VDC of organization acme"  # Zitadel's name: no allowance yet


def test_the_organization_pages_name_it(
    api: InProcessApi, site: LightPortal, olivia: requests.Session, admin: requests.Session, acme: str
) -> None:
    assert heading(get(olivia, site, f"/admin/access/organizations/{acme}/vdcs/new/").text) == (
        "New VDC of organization acme"
    )
    assert heading(get(admin, site, f"/admin/access/organizations/{acme}/allowance/").text) == (
        "Allowance of organization acme"
    )
    made = api(CREATE_VDC, user="olivia", variables={"input": vdc_input("acme-named", vcpus=1)})
    assert made.data["createVdc"]["errors"] == [], made.body
    edit = get(olivia, site, f"/admin/access/organizations/{acme}/vdcs/acme-named/edit/")
    assert heading(edit.text) == "VDC acme-named of organization acme"


def test_a_refused_membership_names_the_user_and_the_organization(api: InProcessApi, acme: str) -> None:
    made = api(CREATE_VDC, user="olivia", variables={"input": vdc_input("acme-members", vcpus=1)})
    assert made.data["createVdc"]["errors"] == [], made.body
    alice = user(api, "alice")["id"]
    refused = api(GRANT, user="admin", variables={"u": alice, "v": "acme-members"})
    (error,) = refused.data["grantVdcMembership"]["errors"]
    assert error["message"] == (
        f"Alice Example (alice) is not of organization acme ({acme}), whose VDC 'acme-members' is: "
        "only its own users can be members"
    )
    over = api(CREATE_VDC, user="olivia", variables={"input": vdc_input("acme-over", vcpus=99)})
    (quota,) = {e["message"] for e in over.data["createVdc"]["errors"]}
    assert f"would take the VDCs of organization acme ({acme}) past its allowance" in quota
