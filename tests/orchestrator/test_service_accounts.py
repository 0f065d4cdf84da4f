"""Service accounts at the identity provider: a machine user with a JWT profile key, as Zitadel keeps one.

The orchestrator's Zitadel client creates the machine user, grants it USER in one VDC and adds a key
on the devstack's identity provider; the key's token is then checked by the orchestrator's own
``TokenValidator``, as every API call's token is: its subject is the machine user (so the audit log
names it) and its roles are that VDC's only. Deleting the user refuses its next token. One test goes
through the devstack's world: the API makes the account, its key's token drives the API, revoking ends it.
"""

from __future__ import annotations

import datetime
import json
import time

import pytest

from devstack import seed
from devstack.identity.claims import ORGANISATION_ID
from devstack.identity.client import TokenRequestError, key_token
from devstack.identity.process import IdentityProvider
from devstack.world import World
from orchestrator.auth import TokenValidator
from orchestrator.sources.zitadel import ZitadelRefused, ZitadelSource
from tests import addresses
from tests.apikit import GraphQL
from tests.identitykit import identity_fixture, zitadel_fixture

HOST = addresses.address(addresses.IDENTITY_SUITE, 13)
VDC_ROLE = "vdc:sa-suite"


identity = identity_fixture(HOST)
zitadel = zitadel_fixture(VDC_ROLE, "service account suite")


@pytest.fixture(scope="module")
def validator(identity: IdentityProvider) -> TokenValidator:
    return TokenValidator(
        identity.issuer, seed.PROJECT_ID, seed.PROJECT_ID, ["RS256"], access_token_type="at+jwt"
    )


def _tomorrow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)


def test_a_service_accounts_key_gives_tokens_as_itself_with_its_vdcs_role_only(
    identity: IdentityProvider, zitadel: ZitadelSource, validator: TokenValidator
) -> None:
    user_id = zitadel.create_machine_user(ORGANISATION_ID, "sa-suite-ci", "ci", "the CI pipeline")
    zitadel.use_jwt_access_tokens(user_id, ORGANISATION_ID, "ci", "the CI pipeline")
    zitadel.create_authorization(user_id, ORGANISATION_ID, ["USER", VDC_ROLE])
    key_json = zitadel.add_machine_key(user_id, _tomorrow())
    assert json.loads(key_json)["userId"] == user_id

    principal = validator.validate(key_token(identity.api_url, key_json, seed.PROJECT_ID))

    assert principal.subject == user_id
    assert principal.roles == frozenset({"USER", VDC_ROLE})
    assert principal.vdcs == frozenset({"sa-suite"})
    assert principal.organization == ORGANISATION_ID


def test_a_deleted_service_account_gets_no_next_token(
    identity: IdentityProvider, zitadel: ZitadelSource, validator: TokenValidator
) -> None:
    user_id = zitadel.create_machine_user(ORGANISATION_ID, "sa-suite-revoked", "revoked")
    zitadel.use_jwt_access_tokens(user_id, ORGANISATION_ID, "revoked", "")
    zitadel.create_authorization(user_id, ORGANISATION_ID, ["USER", VDC_ROLE])
    key_json = zitadel.add_machine_key(user_id, _tomorrow())
    assert validator.validate(key_token(identity.api_url, key_json, seed.PROJECT_ID)).subject == user_id

    zitadel.delete_user(user_id)

    with pytest.raises(TokenRequestError, match="unknown key"):
        key_token(identity.api_url, key_json, seed.PROJECT_ID)
    with pytest.raises(ZitadelRefused, match="not_found"):
        zitadel.delete_user(user_id)


def test_a_key_that_expired_before_it_was_made_is_refused(zitadel: ZitadelSource) -> None:
    user_id = zitadel.create_machine_user(ORGANISATION_ID, "sa-suite-past", "past")
    yesterday = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)

    with pytest.raises(ZitadelRefused, match="invalid_argument"):
        zitadel.add_machine_key(user_id, yesterday)


def test_a_user_name_is_taken_once(zitadel: ZitadelSource) -> None:
    zitadel.create_machine_user(ORGANISATION_ID, "sa-suite-twice", "twice")

    with pytest.raises(ZitadelRefused, match="already_exists"):
        zitadel.create_machine_user(ORGANISATION_ID, "sa-suite-twice", "twice")


def test_a_machine_user_is_listed_as_a_machine(zitadel: ZitadelSource) -> None:
    user_id = zitadel.create_machine_user(ORGANISATION_ID, "sa-suite-listed", "listed")

    answer = zitadel.call(
        "zitadel.user.v2.UserService",
        "ListUsers",
        {"queries": [{"typeQuery": {"type": "TYPE_MACHINE"}}, {"inUserIdsQuery": {"userIds": [user_id]}}]},
    )

    (listed,) = answer["result"]
    assert listed["machine"]["name"] == "listed"
    assert "human" not in listed


# ------------------------------------------------------------------------------------ over the devstack

CREATE = (
    "mutation($v: ID!, $n: String!, $e: DateTime!) { createServiceAccount(vdc: $v, name: $n, expiresAt: $e) "
    "{ key serviceAccount { id } errors { field code message } } }"
)
REVOKE = "mutation($id: ID!) { revokeServiceAccount(id: $id) { errors { code } } }"


def test_on_the_devstack_a_key_the_api_made_drives_the_api_as_its_vdcs_user_until_revoked(
    world: World, api: GraphQL
) -> None:
    name = f"world-{time.monotonic_ns() % 10**8}"
    made = api(CREATE, user="alice", variables={"v": "demo", "n": name, "e": _tomorrow().isoformat()})
    payload = made.data["createServiceAccount"]
    assert payload["errors"] == []
    account_id = payload["serviceAccount"]["id"]
    try:
        token = key_token(world.identity.api_url, payload["key"], seed.PROJECT_ID)
        bearer = {"Authorization": f"Bearer {token}"}

        me = api.raw("{ me { subject name roles vdcs } }", headers=bearer).data["me"]
        assert me == {"subject": account_id, "name": name, "roles": ["USER"], "vdcs": ["demo"]}
        other = api.raw("{ networks { id } }", headers={**bearer, "FlexPlane-VDC-ID": "other"})
        assert other.codes == ["FORBIDDEN"]
    finally:
        revoked = api(REVOKE, user="alice", variables={"id": account_id})
    assert revoked.data["revokeServiceAccount"]["errors"] == []
    with pytest.raises(TokenRequestError, match="unknown key"):
        key_token(world.identity.api_url, payload["key"], seed.PROJECT_ID)
