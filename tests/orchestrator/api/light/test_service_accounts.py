"""Service accounts over the API in this process, on the light world and Zitadel in memory: made, listed and
revoked by a VDC's member, their tokens USER of that VDC only and audited under their own id.

The token a service account's key gives is minted here with the roles Zitadel holds for it then (as the
identity provider issues it: tests/orchestrator/test_service_accounts.py exchanges a real key there)."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest

from devstack import seed
from devstack.identity.claims import project_roles_claim, subject_of
from orchestrator.auth import RESOURCE_OWNER_CLAIM
from tests.apikit import Answer
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import AUDIENCE, InProcessApi

CREATE = (
    "mutation($v: ID!, $n: String!, $e: DateTime!) { createServiceAccount(vdc: $v, name: $n, expiresAt: $e) "
    "{ key serviceAccount { id name vdc created expires createdBy } errors { field code message } } }"
)
LIST = "query($v: ID) { serviceAccounts(vdc: $v) { id name vdc expires createdBy } }"
REVOKE = "mutation($id: ID!) { revokeServiceAccount(id: $id) { serviceAccount { id name } errors { code } } }"
ME = "{ me { subject roles vdcs } }"
VMS = "{ virtualMachines(first: 100) { edges { node { id vdc } } } }"
AUDIT = "query($u: String!) { auditRecords(user: $u) { subject operation outcome } }"


def _in(days: float) -> str:
    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)).isoformat()


def create(api: InProcessApi, user: str, vdc: str, name: str, days: float = 30) -> Answer:
    return api.raw(CREATE, headers=_bearer(api.token(user)), variables={"v": vdc, "n": name, "e": _in(days)})


def _bearer(token: str, vdc: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"FlexPlane-VDC-ID": vdc} if vdc else {})}


def machine_token(api: InProcessApi, zitadel: FakeZitadel, user_id: str) -> str:
    """The access token the account's key gives now: its subject, its roles as Zitadel holds them."""
    machine = zitadel.machines[user_id]
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": api.issuer.url,
        "aud": [AUDIENCE, user_id],
        "sub": user_id,
        "iat": now,
        "exp": now + 300,
        "name": machine.name,
        RESOURCE_OWNER_CLAIM: machine.organization_id,
        project_roles_claim(seed.PROJECT_ID): zitadel.roles_of(user_id),
    }
    return jwt.encode(claims, api.issuer.key, algorithm="RS256", headers={"kid": api.issuer.kid})


@pytest.fixture
def made(api: InProcessApi) -> Iterator[dict[str, Any]]:
    """A service account of demo, made by alice; revoked afterwards if the test left it."""
    answer = create(api, "alice", "demo", f"ci-{time.monotonic_ns() % 10**8}")
    payload = answer.data["createServiceAccount"]
    assert payload["errors"] == []
    yield payload
    api.raw(REVOKE, headers=_bearer(api.token("admin")), variables={"id": payload["serviceAccount"]["id"]})


def test_a_member_makes_a_service_account_and_gets_its_key_once(
    api: InProcessApi, made: dict[str, Any]
) -> None:
    account = made["serviceAccount"]
    key = json.loads(made["key"])
    assert key["userId"] == account["id"]
    assert key["type"] == "serviceaccount"
    assert account["vdc"] == "demo"
    assert account["createdBy"] == subject_of("alice")

    listed = api(LIST, user="alice", variables={"v": "demo"})
    assert listed.errors == []
    (shown,) = [a for a in listed.data["serviceAccounts"] if a["id"] == account["id"]]
    assert shown["name"] == account["name"]
    assert "key" not in json.dumps(listed.body)


def test_its_token_is_user_of_its_vdc_only_and_its_calls_are_audited_as_itself(
    api: InProcessApi, zitadel: FakeZitadel, made: dict[str, Any]
) -> None:
    account_id = made["serviceAccount"]["id"]
    assert account_id in zitadel.jwt_machines  # Zitadel was told to issue it JWTs, which the API checks
    token = machine_token(api, zitadel, account_id)

    me = api.raw(ME, headers=_bearer(token)).data["me"]
    assert me == {"subject": account_id, "roles": ["USER"], "vdcs": ["demo"]}
    vms = api.raw(VMS, headers=_bearer(token, "demo"))
    assert vms.errors == []
    assert {e["node"]["vdc"] for e in vms.data["virtualMachines"]["edges"]} <= {"demo"}
    assert api.raw(VMS, headers=_bearer(token, "other")).codes == ["FORBIDDEN"]
    elsewhere = api.raw(CREATE, headers=_bearer(token), variables={"v": "other", "n": "x", "e": _in(1)})
    assert elsewhere.data["createServiceAccount"]["errors"][0]["code"] == "NOT_FOUND"

    records = api(AUDIT, user="admin", variables={"u": account_id}).data["auditRecords"]
    assert {"subject": account_id, "operation": "createServiceAccount", "outcome": "failed"} in [
        {k: r[k] for k in ("subject", "operation", "outcome")} for r in records
    ]


def test_a_service_account_may_list_its_vdcs_accounts_but_neither_make_nor_revoke_one(
    api: InProcessApi, zitadel: FakeZitadel, made: dict[str, Any]
) -> None:
    """A leaked key that could mint keys of its own would outlive its own revocation."""
    account_id = made["serviceAccount"]["id"]
    token = machine_token(api, zitadel, account_id)
    listed = api.raw(LIST, headers=_bearer(token), variables={"v": "demo"})
    assert account_id in [a["id"] for a in listed.data["serviceAccounts"]]
    more = api.raw(CREATE, headers=_bearer(token), variables={"v": "demo", "n": "minted", "e": _in(1)})
    assert more.codes == ["FORBIDDEN"]
    gone = api.raw(REVOKE, headers=_bearer(token), variables={"id": account_id})
    assert gone.codes == ["FORBIDDEN"]
    assert "minted" not in [
        a["name"] for a in api(LIST, user="alice", variables={"v": "demo"}).data["serviceAccounts"]
    ]


def test_another_vdcs_member_sees_no_account_of_demo_and_cannot_revoke_one(
    api: InProcessApi, made: dict[str, Any]
) -> None:
    account_id = made["serviceAccount"]["id"]

    assert api(LIST, user="bob", variables={"v": "demo"}).codes == ["NOT_FOUND"]
    assert account_id not in {a["id"] for a in api(LIST, user="bob").data["serviceAccounts"]}
    revoked = api(REVOKE, user="bob", variables={"id": account_id})
    made_up = api(REVOKE, user="bob", variables={"id": "404404404404404404"})
    assert revoked.data["revokeServiceAccount"]["errors"] == [{"code": "NOT_FOUND"}]
    # alice's account answers bob exactly as one that does not exist (tests/security/test_isolation_ids.py)
    assert json.dumps(revoked.body).replace(account_id, "<id>") == json.dumps(made_up.body).replace(
        "404404404404404404", "<id>"
    )
    assert account_id in {a["id"] for a in api(LIST, user="admin").data["serviceAccounts"]}


def test_a_revoked_account_has_no_roles_in_its_next_token(
    api: InProcessApi, zitadel: FakeZitadel, made: dict[str, Any]
) -> None:
    account_id = made["serviceAccount"]["id"]

    revoked = api(REVOKE, user="alice", variables={"id": account_id})

    assert revoked.data["revokeServiceAccount"]["errors"] == []
    assert account_id not in zitadel.machines
    assert zitadel.roles_of(account_id) == {}
    assert account_id not in {
        a["id"] for a in api(LIST, user="alice", variables={"v": "demo"}).data["serviceAccounts"]
    }


@pytest.mark.parametrize(
    ("name", "days", "field"),
    [("ok-name", -1, "expiresAt"), ("ok-name", 400, "expiresAt"), ("Not A Name", 1, "name")],
    ids=["an expiry in the past", "an expiry beyond a year", "a name that is no label"],
)
def test_what_cannot_be_made_is_invalid_naming_the_field(
    api: InProcessApi, name: str, days: float, field: str
) -> None:
    errors = create(api, "alice", "demo", name, days).data["createServiceAccount"]["errors"]

    assert [(e["field"], e["code"]) for e in errors] == [(field, "INVALID")]


def test_a_name_is_taken_once_per_vdc(api: InProcessApi, made: dict[str, Any]) -> None:
    again = create(api, "alice", "demo", made["serviceAccount"]["name"]).data["createServiceAccount"]

    assert [e["code"] for e in again["errors"]] == ["CONFLICT"]


def test_an_unknown_vdc_answers_as_missing(api: InProcessApi) -> None:
    errors = create(api, "admin", "no-such-vdc", "ci").data["createServiceAccount"]["errors"]

    assert [e["code"] for e in errors] == ["NOT_FOUND"]
