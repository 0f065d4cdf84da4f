"""FakeZitadel (tests/orchestrator/fakezitadel.py) holds to the emulator's semantics: every test here runs the
same calls and assertions against the orchestrator's Zitadel client (``ZitadelSource``) on the devstack's
identity provider (``devstack/identity``) and against a ``FakeZitadel`` seeded as the devstack is.

What a user's token carries is checked the same way: a token issued now by the identity provider, and
``FakeZitadel.roles_of`` (what ``tests/orchestrator/inprocess.LocalIssuer`` puts in its tokens).
The wire (Zitadel's published API, the service user's token, a Zitadel that does not answer) is the real
client's alone: tests/orchestrator/sources/test_zitadel.py.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest

from devstack import seed
from devstack.identity.claims import (
    ORGANISATION_DOMAIN,
    ORGANISATION_ID,
    organisation_of,
    project_roles_claim,
    subject_of,
)
from devstack.identity.client import TokenRequestError, key_token, password_token
from devstack.identity.process import IdentityProvider
from devstack.net import free_port
from orchestrator.sources.protocols import ZitadelApi
from orchestrator.sources.zitadel import Organization, ServiceKey, User, ZitadelRefused, ZitadelSource
from tests import addresses
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.sources.test_zitadel import restore_seeded_organization

HOST = addresses.address(addresses.IDENTITY_SUITE, 12)
ACME, ACME_DOMAIN = organisation_of("acme")
HOME = ORGANISATION_ID
Claim = dict[str, dict[str, str]]


@dataclass
class Backend:
    """A Zitadel and the roles claim a token of it carries now (``{role: {orgId: orgDomain}}``)."""

    name: str
    source: ZitadelApi
    claim: Callable[[str], Claim]
    # The claims of the token a service account's key (its key file's JSON) gives now: sub and roles.
    key_claims: Callable[[str], dict[str, Any]]

    def roles(self, username: str) -> set[str]:
        return set(self.claim(username))

    def user(self, username: str) -> User:
        (found,) = [u for u in self.source.search_users(username) if u.username == username]
        return found


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
    with IdentityProvider.start(
        tmp_path_factory.mktemp("zitadel"), HOST, free_port(HOST), seed.USERS, project_id=seed.PROJECT_ID
    ) as provider:
        yield provider


def emulator(identity: IdentityProvider) -> Backend:
    source = ZitadelSource(
        identity.api_url, ServiceKey.from_file(identity.zitadel_key_path), seed.PROJECT_ID, timeout=5.0
    )

    def claim(username: str) -> Claim:
        claims = jwt.decode(
            password_token(identity.issuer, username, username), options={"verify_signature": False}
        )
        return dict(claims[project_roles_claim(seed.PROJECT_ID)])

    def key_claims(key_json: str) -> dict[str, Any]:
        token = key_token(identity.api_url, key_json, seed.PROJECT_ID)
        claims = jwt.decode(token, options={"verify_signature": False})
        return {"sub": claims["sub"], "roles": dict(claims[project_roles_claim(seed.PROJECT_ID)])}

    return Backend("emulator", source, claim, key_claims)


def fake() -> Backend:
    zitadel = FakeZitadel.seeded()

    def claim(username: str) -> Claim:
        (found,) = [u for u in zitadel.search_users(username) if u.username == username]
        return zitadel.roles_of(found.id)

    def key_claims(key_json: str) -> dict[str, Any]:
        key = json.loads(key_json)
        if key["keyId"] not in zitadel.machine_keys.get(key["userId"], {}):
            raise TokenRequestError(f"unknown key {key['keyId']}")
        if key["userId"] not in zitadel.jwt_machines:  # the emulator answers an opaque token: no claims
            raise jwt.DecodeError("an opaque access token")
        return {"sub": key["userId"], "roles": zitadel.roles_of(key["userId"])}

    return Backend("fake", zitadel, claim, key_claims)


def seeded_claim(username: str) -> Claim:
    user = next(u for u in seed.USERS if u["username"] == username)
    org, domain = organisation_of(user.get("organization") or "flexplane")
    return {role: {org: domain} for role in sorted(user["roles"])}


def restore_seeded(source: ZitadelApi) -> None:
    """Every seeded user's roles as seeding gave them, within their organization only (acme granted the
    project again)."""
    restore_seeded_organization(source, "acme")
    for seeded in seed.USERS:
        org = organisation_of(seeded.get("organization") or "flexplane")[0]
        (user,) = [u for u in source.search_users(seeded["username"]) if u.username == seeded["username"]]
        home = None
        for grant in source.authorizations(user_ids=[user.id]):
            if grant.organization_id == org:
                home = grant
            else:
                source.delete_authorization(grant.id)
        roles = sorted(seeded["roles"])
        if home is None:
            source.create_authorization(user.id, org, roles)
        elif sorted(home.role_keys) != roles:
            source.update_authorization(home.id, roles)


def seeded_authorizations() -> set[tuple[str, str, tuple[str, ...]]]:
    """Each seeded user's authorization: their id, organization and roles."""
    return {
        (
            subject_of(u["username"]),
            organisation_of(u.get("organization") or "flexplane")[0],
            tuple(sorted(u["roles"])),
        )
        for u in seed.USERS
    }


def authorizations_now(source: ZitadelApi) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(a.user_id, a.organization_id, tuple(sorted(a.role_keys))) for a in source.authorizations()}


@pytest.fixture(scope="module")
def on_the_emulator(identity: IdentityProvider) -> Backend:
    return emulator(identity)


@pytest.fixture(params=["emulator", "fake"])
def zitadel(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The emulator (shared by the module's tests: each leaves it as seeded) or a fresh FakeZitadel."""
    backend = request.getfixturevalue("on_the_emulator") if request.param == "emulator" else fake()
    yield backend
    if authorizations_now(backend.source) != seeded_authorizations():  # a test that failed half-way
        restore_seeded(backend.source)
    assert authorizations_now(backend.source) == seeded_authorizations(), f"{backend.name} left changed"


def refusal(call: Callable[[], Any]) -> tuple[str, str]:
    with pytest.raises(ZitadelRefused) as refused:
        call()
    return refused.value.method, refused.value.status


# ------------------------------------------------------------------------------------ as seeded


def test_the_devstacks_users_organizations_and_roles_are_there_as_seeded(zitadel: Backend) -> None:
    source = zitadel.source
    for seeded in seed.USERS:
        user = zitadel.user(seeded["username"])
        org = organisation_of(seeded.get("organization") or "flexplane")[0]
        assert (user.name, user.email, user.organization_id, user.state) == (
            seeded["name"],
            seeded["email"],
            org,
            "USER_STATE_ACTIVE",
        )
        assert zitadel.claim(seeded["username"]) == seeded_claim(seeded["username"])
        (grant,) = source.authorizations(user_ids=[user.id])
        assert (grant.organization_id, sorted(grant.role_keys), grant.state) == (
            org,
            sorted(seeded["roles"]),
            "STATE_ACTIVE",
        )
        assert re.fullmatch(r"\d{18}", grant.id)
    assert source.project_organization() == HOME
    assert source.organization(HOME) == Organization(HOME, "flexplane")
    assert source.organization(ACME) == Organization(ACME, "acme")
    assert source.organization("999") is None
    assert zitadel.claim("olivia") == {"ORG_OWNER": {ACME: ACME_DOMAIN}, "USER": {ACME: ACME_DOMAIN}}
    assert zitadel.claim("alice") == {
        "USER": {HOME: ORGANISATION_DOMAIN},
        "vdc:demo": {HOME: ORGANISATION_DOMAIN},
    }


# ------------------------------------------------------------------------------------ users


@pytest.mark.parametrize(
    ("search", "organization", "limit", "found"),
    [
        ("ALICE", None, 50, ["alice"]),  # the user name, ignoring case
        ("owner", None, 50, ["olivia"]),  # the display name
        ("@example.com", None, 50, ["admin", "alice", "bob"]),  # the email; sorted by user name
        ("Example", None, 50, ["admin", "alice", "bob", "olivia", "oscar"]),
        ("example", None, 2, ["admin", "alice"]),  # the first of the page
        ("o", ACME, 50, ["olivia", "oscar"]),  # within one organization
        ("bob", ACME, 50, []),
        ("flexplane-orchestrator", None, 50, []),  # the service user is no human
        ("nobody-here", None, 50, []),
    ],
)
def test_a_search_matches_user_name_display_name_or_email_in_any_case_sorted_by_user_name(
    zitadel: Backend, search: str, organization: str | None, limit: int, found: list[str]
) -> None:
    users = zitadel.source.search_users(search, organization_id=organization, limit=limit)
    assert [u.username for u in users] == found


def test_users_by_id_leave_unknown_ids_out(zitadel: Backend) -> None:
    source = zitadel.source
    bob, alice = zitadel.user("bob"), zitadel.user("alice")
    assert source.users([bob.id, "000000000000000000"]) == [bob]
    assert source.users([bob.id, alice.id, bob.id]) == [alice, bob]
    assert source.users([]) == []


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda s: s.search_users(""), ("ListUsers", "invalid_argument")),
        (lambda s: s.search_users("x" * 201), ("ListUsers", "invalid_argument")),
        (lambda s: s.users([""]), ("ListUsers", "invalid_argument")),
        (lambda s: s.organization(""), ("ListOrganizations", "invalid_argument")),
        (lambda s: s.add_project_role("", "nameless", "vdc"), ("AddProjectRole", "invalid_argument")),
        (lambda s: s.add_project_role("vdc:x", "", "vdc"), ("AddProjectRole", "invalid_argument")),
        (lambda s: s.remove_project_role("r" * 201), ("RemoveProjectRole", "invalid_argument")),
        (lambda s: s.grant_project(HOME, ["USER"]), ("CreateProjectGrant", "invalid_argument")),
        (lambda s: s.grant_project("404404404", ["USER"]), ("CreateProjectGrant", "not_found")),
        (lambda s: s.grant_project(ACME, ["USER", "USER"]), ("CreateProjectGrant", "invalid_argument")),
        (lambda s: s.grant_project(ACME, ["no-such-role"]), ("CreateProjectGrant", "failed_precondition")),
        (lambda s: s.update_authorization("404404404", ["USER"]), ("UpdateAuthorization", "not_found")),
        (lambda s: s.update_authorization("", ["USER"]), ("UpdateAuthorization", "invalid_argument")),
        (lambda s: s.delete_authorization(""), ("DeleteAuthorization", "invalid_argument")),
        (lambda s: s.create_authorization("404404404", HOME, []), ("CreateAuthorization", "not_found")),
        (lambda s: s.revoke_project(""), ("DeleteProjectGrant", "invalid_argument")),
    ],
    ids=[
        "empty search",
        "long search",
        "empty user id",
        "empty organization id",
        "empty role key",
        "empty role name",
        "long role key",
        "grant to the project's own organization",
        "grant to an unknown organization",
        "grant of a role twice",
        "grant of an unknown role",
        "unknown authorization",
        "empty authorization id",
        "delete of an empty id",
        "authorization of an unknown user",
        "revoke of an empty organization id",
    ],
)
def test_what_zitadel_refuses_is_refused_naming_the_method_and_its_status(
    zitadel: Backend, call: Callable[[ZitadelApi], Any], expected: tuple[str, str]
) -> None:
    assert refusal(lambda: call(zitadel.source)) == expected


# ------------------------------------------------------------------------------------ roles


def test_a_role_is_added_once_and_removed_from_every_authorization_that_has_it(zitadel: Backend) -> None:
    source = zitadel.source
    assert source.add_project_role("vdc:contract", "VDC contract", "vdc") is True
    assert source.add_project_role("vdc:contract", "VDC contract", "vdc") is False
    bob = zitadel.user("bob")
    (grant,) = source.authorizations(user_ids=[bob.id])
    source.update_authorization(grant.id, [*grant.role_keys, "vdc:contract"])
    assert [a.user_id for a in source.authorizations(role_key="vdc:contract")] == [bob.id]
    assert zitadel.claim("bob")["vdc:contract"] == {HOME: ORGANISATION_DOMAIN}
    source.remove_project_role("vdc:contract")
    assert source.authorizations(role_key="vdc:contract") == []
    assert source.authorizations(user_ids=[bob.id])[0].role_keys == grant.role_keys
    assert "vdc:contract" not in zitadel.roles("bob")
    source.remove_project_role("vdc:contract")  # none left: no error
    assert refusal(lambda: source.update_authorization(grant.id, ["vdc:contract"])) == (
        "UpdateAuthorization",
        "failed_precondition",
    )


def test_a_grant_shows_in_the_users_next_token_and_a_revoke_takes_it_away(zitadel: Backend) -> None:
    source = zitadel.source
    bob = source.search_users("bob@example.com")[0]
    source.add_project_role("vdc:granted", "VDC granted", "vdc")
    grant = source.authorizations(user_ids=[bob.id])[0]
    source.update_authorization(grant.id, [*grant.role_keys, "vdc:granted"])
    assert "vdc:granted" in zitadel.roles("bob")
    source.remove_project_role("vdc:granted")
    assert "vdc:granted" not in zitadel.roles("bob")


# ------------------------------------------------------------------------------------ authorizations


def test_authorizations_are_narrowed_to_users_an_organization_or_a_role(zitadel: Backend) -> None:
    source = zitadel.source
    ids = {u["username"]: zitadel.user(u["username"]).id for u in seed.USERS}
    assert sorted(a.user_id for a in source.authorizations()) == sorted(ids.values())
    assert [a.user_id for a in source.authorizations(role_key="vdc:demo")] == [ids["alice"]]
    assert [a.user_id for a in source.authorizations(role_key="vdc")] == []  # equal, not contained
    assert sorted(a.user_id for a in source.authorizations(organization_id=ACME)) == sorted(
        [ids["olivia"], ids["oscar"]]
    )
    assert sorted(a.user_id for a in source.authorizations(user_ids=[ids["alice"], ids["bob"]])) == sorted(
        [ids["alice"], ids["bob"]]
    )
    assert source.authorizations(user_ids=[ids["bob"]], organization_id=ACME) == []
    assert [a.user_id for a in source.authorizations(organization_id=HOME, role_key="USER")] == [
        a.user_id for a in source.authorizations(role_key="USER") if a.organization_id == HOME
    ]


def test_one_authorization_per_user_and_organization_with_roles_that_exist(zitadel: Backend) -> None:
    source = zitadel.source
    bob = zitadel.user("bob")
    (existing,) = source.authorizations(user_ids=[bob.id], organization_id=HOME)
    assert refusal(lambda: source.create_authorization(bob.id, HOME, [])) == (
        "CreateAuthorization",
        "already_exists",
    )
    assert refusal(lambda: source.create_authorization(bob.id, "404404404", [])) == (
        "CreateAuthorization",
        "not_found",
    )
    assert refusal(lambda: source.update_authorization(existing.id, ["USER", "USER"])) == (
        "UpdateAuthorization",
        "invalid_argument",
    )
    assert refusal(lambda: source.update_authorization(existing.id, ["no-such-role"])) == (
        "UpdateAuthorization",
        "failed_precondition",
    )
    source.delete_authorization(existing.id)
    source.delete_authorization(existing.id)  # gone already: no error
    assert source.authorizations(user_ids=[bob.id]) == []
    assert zitadel.claim("bob") == {}
    assert refusal(lambda: source.create_authorization(bob.id, HOME, ["no-such-role"])) == (
        "CreateAuthorization",
        "failed_precondition",
    )
    ident = source.create_authorization(bob.id, HOME, list(existing.role_keys))
    assert re.fullmatch(r"\d{18}", ident)
    assert ident != existing.id
    assert zitadel.claim("bob") == seeded_claim("bob")


# ------------------------------------------------------------------------------------ project grants


def test_a_role_is_given_in_another_organization_only_within_the_project_granted_to_it(
    zitadel: Backend,
) -> None:
    source = zitadel.source
    oscar = source.search_users("oscar")[0]
    (grant,) = source.authorizations(user_ids=[oscar.id])
    with pytest.raises(ZitadelRefused) as refused:
        source.update_authorization(grant.id, [*grant.role_keys, "ADMIN"])  # acme was not granted ADMIN
    assert refused.value.status == "failed_precondition"
    source.add_project_role("vdc:acme-granted", "VDC acme-granted", "vdc")
    source.grant_project(oscar.organization_id, ["USER", "ORG_OWNER", "vdc:acme-granted"])
    source.update_authorization(grant.id, [*grant.role_keys, "vdc:acme-granted"])
    assert zitadel.roles("oscar") == {"USER", "vdc:acme-granted"}
    source.grant_project(oscar.organization_id, ["USER", "ORG_OWNER"])  # taken from the grant: from oscar too
    assert zitadel.roles("oscar") == {"USER"}
    source.remove_project_role("vdc:acme-granted")


def test_a_user_holds_roles_within_each_organization_that_gave_them(zitadel: Backend) -> None:
    source = zitadel.source
    bob = zitadel.user("bob")
    ident = source.create_authorization(bob.id, ACME, ["USER"])  # acme is granted USER
    try:
        assert zitadel.claim("bob") == {
            "USER": {HOME: ORGANISATION_DOMAIN, ACME: ACME_DOMAIN},
            "vdc:other": {HOME: ORGANISATION_DOMAIN},
        }
        assert sorted(a.organization_id for a in source.authorizations(user_ids=[bob.id])) == sorted(
            [HOME, ACME]
        )
    finally:
        source.delete_authorization(ident)
    assert zitadel.claim("bob") == seeded_claim("bob")


def test_taking_the_project_away_from_an_organization_takes_its_users_roles_there_too(
    zitadel: Backend,
) -> None:
    source = zitadel.source
    acme = organisation_of("acme")[0]
    assert zitadel.roles("olivia") == {"USER", "ORG_OWNER"}
    try:
        assert source.revoke_project(acme) is True
        assert zitadel.roles("olivia") == set()
        assert source.authorizations(organization_id=acme) == []
        assert source.revoke_project(acme) is False  # none left: no error
        olivia = zitadel.user("olivia")
        assert refusal(lambda: source.create_authorization(olivia.id, acme, ["USER"])) == (
            "CreateAuthorization",
            "failed_precondition",
        )
        assert refusal(lambda: source.create_authorization(olivia.id, acme, [])) == (
            "CreateAuthorization",
            "failed_precondition",
        )
        assert source.revoke_project(HOME) is False  # the owner is granted nothing
    finally:
        restore_seeded_organization(source, "acme")
    assert zitadel.roles("olivia") == {"USER", "ORG_OWNER"}
    assert zitadel.roles("oscar") == {"USER"}


# ------------------------------------------------------------------------------------ service accounts


def _tomorrow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)


def test_a_service_account_is_a_machine_user_listed_by_prefix_and_not_among_the_people(
    zitadel: Backend,
) -> None:
    source = zitadel.source
    ident = source.create_machine_user(HOME, "sa.contract.ci", "ci", '{"vdc": "contract"}')
    try:
        assert refusal(lambda: source.create_machine_user(HOME, "sa.contract.ci", "ci")) == (
            "CreateUser",
            "already_exists",
        )
        (listed,) = source.machine_users("sa.contract.")
        assert (listed.id, listed.name, listed.description, listed.organization_id) == (
            ident,
            "ci",
            '{"vdc": "contract"}',
            HOME,
        )
        assert source.machine_users("sa.other.") == []
        assert source.search_users("sa.contract") == []
    finally:
        source.delete_user(ident)
    assert source.machine_users("sa.contract.") == []
    assert refusal(lambda: source.delete_user(ident)) == ("DeleteUser", "not_found")


def test_a_service_accounts_key_gives_tokens_with_its_roles_until_it_is_deleted(zitadel: Backend) -> None:
    source = zitadel.source
    source.add_project_role("vdc:contract-sa", "VDC contract-sa", "vdc")
    ident = source.create_machine_user(HOME, "sa.contract-sa.ci", "ci")
    try:
        source.create_authorization(ident, HOME, ["USER", "vdc:contract-sa"])
        key_json = source.add_machine_key(ident, _tomorrow())
        assert json.loads(key_json)["userId"] == ident
        with pytest.raises(jwt.DecodeError):  # Zitadel's machine users get opaque tokens until told
            zitadel.key_claims(key_json)
        source.use_jwt_access_tokens(ident, HOME, "ci", "the CI pipeline")
        assert source.machine_users("sa.contract-sa.")[0].description == "the CI pipeline"
        assert zitadel.key_claims(key_json) == {
            "sub": ident,
            "roles": {"USER": {HOME: ORGANISATION_DOMAIN}, "vdc:contract-sa": {HOME: ORGANISATION_DOMAIN}},
        }
    finally:
        source.delete_user(ident)
        source.remove_project_role("vdc:contract-sa")
    assert source.authorizations(user_ids=[ident]) == []
    with pytest.raises(TokenRequestError, match="unknown key"):
        zitadel.key_claims(key_json)


def test_a_removed_key_gives_no_token_and_the_accounts_other_key_still_does(zitadel: Backend) -> None:
    """A key renewed in place (``clusters.identity.renew_keys``): the old one removed, the new one kept."""
    source = zitadel.source
    ident = source.create_machine_user(HOME, "sa.contract.renewed", "renewed")
    try:
        source.use_jwt_access_tokens(ident, HOME, "renewed", "")
        old, new = source.add_machine_key(ident, _tomorrow()), source.add_machine_key(ident, _tomorrow())
        old_id = json.loads(old)["keyId"]
        source.remove_machine_key(ident, old_id)
        with pytest.raises(TokenRequestError, match="unknown key"):
            zitadel.key_claims(old)
        assert zitadel.key_claims(new)["sub"] == ident
        assert refusal(lambda: source.remove_machine_key(ident, old_id)) == ("RemoveKey", "not_found")
        assert refusal(lambda: source.remove_machine_key("100000000000000009", old_id)) == (
            "RemoveKey",
            "not_found",
        )
    finally:
        source.delete_user(ident)


def test_a_key_must_expire_in_the_future(zitadel: Backend) -> None:
    source = zitadel.source
    ident = source.create_machine_user(HOME, "sa.contract.past", "past")
    try:
        yesterday = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)
        assert refusal(lambda: source.add_machine_key(ident, yesterday)) == ("AddKey", "invalid_argument")
        assert refusal(lambda: source.add_machine_key("100000000000000009", _tomorrow())) == (
            "AddKey",
            "not_found",
        )
    finally:
        source.delete_user(ident)


def test_only_a_machine_users_token_type_is_changed_and_only_to_a_known_type(zitadel: Backend) -> None:
    source = zitadel.source
    alice = zitadel.user("alice")

    assert refusal(lambda: source.use_jwt_access_tokens(alice.id, HOME, "alice", "")) == (
        "UpdateMachine",
        "not_found",
    )
    assert refusal(lambda: source.use_jwt_access_tokens("100000000000000009", HOME, "x", "")) == (
        "UpdateMachine",
        "not_found",
    )
