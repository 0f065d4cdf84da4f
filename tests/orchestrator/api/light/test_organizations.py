"""Organizations over the API in this process, on the light world and Zitadel in memory: ADMIN gives
organization acme an allowance; its ORG_OWNER (olivia) creates VDCs within it and manages their members among
acme's users (oscar); nothing of another organization is hers to see or touch."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jwt
import pytest

from devstack import seed
from tests.orchestrator.api.light.test_access import SET_ROLES, Replica, fresh, vdc, without_zitadel
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer
from tests.orchestrator.sources.test_zitadel import restore_seeded_organization

__all__ = ["without_zitadel"]  # a fixture of this module's too

OWNER, MEMBER_OF_ACME = "olivia", "oscar"
ALLOWANCE = (
    "mutation($o: ID!, $input: OrganizationAllowanceInput!) { setOrganizationAllowance(organization: $o, "
    "input: $input) { allowance { organization vdcs allotted { vcpus } quota { vcpus networks } } "
    "errors { field code message } } }"
)
DELETE_ALLOWANCE = (
    "mutation($o: ID!) { deleteOrganizationAllowance(organization: $o) "
    "{ organization errors { code message } } }"
)
ORGANIZATIONS = "{ organizations { organization name vdcs allotted { vcpus vms } quota { vcpus } } }"
CREATE = (
    "mutation($input: VdcInput!) { createVdc(input: $input) { vdc { id organization } "
    "errors { field code message } } }"
)
UPDATE = (
    "mutation($id: ID!, $input: VdcUpdateInput!) { updateVdc(id: $id, input: $input) { vdc { id } "
    "errors { field code message } } }"
)
DELETE = "mutation($id: ID!) { deleteVdc(id: $id) { errors { code message } } }"
USERS = "query($s: String!) { users(search: $s) { id username organization vdcs } }"
GRANT = (
    "mutation($u: ID!, $v: ID!) { grantVdcMembership(user: $u, vdc: $v) { user { vdcs } "
    "errors { field code message } } }"
)
MEMBERS = "query($v: ID!) { vdcMembers(vdc: $v) { username } }"


def user(api: InProcessApi, username: str) -> dict[str, Any]:
    (found,) = [
        u
        for u in api(USERS, user="admin", variables={"s": username}).data["users"]
        if u["username"] == username
    ]
    return dict(found)


def payload(answer: Any, name: str) -> dict[str, Any]:
    assert answer.errors == [], answer.body
    return dict(answer.data[name])


def roles_now(issuer: LocalIssuer, username: str) -> set[str]:
    """The roles in a token issued to the user now."""
    claims = jwt.decode(issuer.token(username), options={"verify_signature": False})
    return set(claims.get(f"urn:zitadel:iam:org:project:{seed.PROJECT_ID}:roles") or {})


# Acme's allowance while this module runs: 5 vCPUs and 3 VMs in zone-a.
ACME_ALLOWANCE = {
    "zones": ["zone-a"],
    "computeProfiles": ["small"],
    "storageProfiles": ["standard"],
    "images": ["debian-12"],
    "quota": {"vcpus": 5, "memoryMib": 8192, "diskGb": 100, "vms": 3},
}


def give_acme_its_allowance(api: InProcessApi, org: str) -> None:
    given = api(ALLOWANCE, user="admin", variables={"o": org, "input": ACME_ALLOWANCE})
    assert payload(given, "setOrganizationAllowance")["errors"] == []


@pytest.fixture(scope="module")
def acme(api: InProcessApi, zitadel: FakeZitadel) -> Iterator[str]:
    """Organization acme's id, with an allowance of 5 vCPUs and 3 VMs in zone-a; its VDCs removed after, its
    allowance too, and acme then as seeding left it (the allowance's end takes its users' roles away)."""
    org = str(user(api, OWNER)["organization"])
    give_acme_its_allowance(api, org)
    yield org
    for listed in api(ORGANIZATIONS, user="admin").data["organizations"]:
        for ident in listed["vdcs"] if listed["organization"] == org else []:
            api(DELETE, user="admin", variables={"id": ident})
    api(DELETE_ALLOWANCE, user="admin", variables={"o": org})
    restore_seeded_organization(zitadel, "acme")


def test_an_org_owner_creates_a_vdc_within_the_allowance_and_a_second_over_it_is_refused_naming_the_resource(
    api: InProcessApi, acme: str
) -> None:
    made = payload(api(CREATE, user=OWNER, variables={"input": vdc("acme-web", vcpus=3)}), "createVdc")
    assert made["errors"] == []
    assert made["vdc"] == {"id": "acme-web", "organization": acme}
    try:
        over = payload(api(CREATE, user=OWNER, variables={"input": vdc("acme-db", vcpus=3)}), "createVdc")
        assert [e["code"] for e in over["errors"]] == ["QUOTA_EXCEEDED"]
        assert "vCPUs (6 > 5 allowed)" in over["errors"][0]["message"]
        assert api('{ vdc(id: "acme-db") { id } }', user="admin").codes == ["NOT_FOUND"]
        assert [v["id"] for v in api("{ vdcs { id } }", user=OWNER).data["vdcs"]] == ["acme-web"]
        (mine,) = api(ORGANIZATIONS, user=OWNER).data["organizations"]
        assert (mine["vdcs"], mine["allotted"]["vcpus"]) == (["acme-web"], 3)
        grown = payload(
            api(UPDATE, user=OWNER, variables={"id": "acme-web", "input": {"quota": {"vcpus": 6}}}),
            "updateVdc",
        )
        assert [e["code"] for e in grown["errors"]] == ["QUOTA_EXCEEDED"]
    finally:
        assert payload(api(DELETE, user=OWNER, variables={"id": "acme-web"}), "deleteVdc")["errors"] == []


def test_concurrent_creates_never_take_an_organization_past_its_allowance(
    api: InProcessApi, acme: str
) -> None:
    names = [f"acme-race-{n}" for n in range(4)]
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        answers = list(
            pool.map(lambda n: api(CREATE, user=OWNER, variables={"input": vdc(n, vcpus=2)}), names)
        )
    made = [n for n, a in zip(names, answers, strict=True) if a.data["createVdc"]["errors"] == []]
    refused = [e["code"] for a in answers for e in a.data["createVdc"]["errors"]]
    assert 1 <= len(made) <= 2  # 2 vCPUs each of 5: two fit, never three
    assert set(refused) <= {"QUOTA_EXCEEDED", "CONFLICT"}, [a.data["createVdc"]["errors"] for a in answers]
    (mine,) = api(ORGANIZATIONS, user=OWNER).data["organizations"]
    assert sorted(mine["vdcs"]) == sorted(made)
    assert mine["allotted"]["vcpus"] <= mine["quota"]["vcpus"]
    for ident in made:
        api(DELETE, user=OWNER, variables={"id": ident})


def test_an_owners_concurrent_vdcs_hold_no_more_networks_than_the_allowance(
    api: InProcessApi, acme: str
) -> None:
    """A zone's network ids are shared by every tenant: VDCs made at once hold a default network only
    where their quota has room for one, so the organization holds what its allowance says and no more.
    (A gateway's uplink address counts in publicIps likewise: tests/orchestrator/graphql/test_gateways.py.)"""
    quota = {"vcpus": 5, "memoryMib": 8192, "diskGb": 100, "vms": 3, "networks": 2, "publicIps": 1}
    given = api(ALLOWANCE, user="admin", variables={"o": acme, "input": {**ACME_ALLOWANCE, "quota": quota}})
    assert payload(given, "setOrganizationAllowance")["errors"] == []
    names = [f"acme-bare-{n}" for n in range(4)]
    networks = dict(zip(names, (1, 1, 0, 0), strict=True))  # the allowance's 2, in all

    def make(ident: str) -> Any:
        limits = {"vcpus": 1, "memoryMib": 1024, "diskGb": 10, "vms": 0, "publicIps": 0}
        limits["networks"] = networks[ident]
        return api(CREATE, user=OWNER, variables={"input": vdc(ident) | {"quota": limits}})

    try:
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            answers = list(pool.map(make, names))
        assert [payload(a, "createVdc")["errors"] for a in answers] == [[]] * len(names)
        held = [n["vdc"] for n in api("{ networks { vdc } }", user="admin").data["networks"]]
        assert sorted(v for v in held if v in names) == ["acme-bare-0", "acme-bare-1"]
    finally:
        for ident in names:
            api(DELETE, user="admin", variables={"id": ident})
        give_acme_its_allowance(api, acme)


def test_an_org_owner_manages_members_among_the_organizations_users_only(
    api: InProcessApi, acme: str
) -> None:
    assert (
        payload(api(CREATE, user=OWNER, variables={"input": vdc("acme-team", vcpus=1)}), "createVdc")[
            "errors"
        ]
        == []
    )
    try:
        oscar, bob = user(api, MEMBER_OF_ACME), user(api, "bob")
        granted = payload(
            api(GRANT, user=OWNER, variables={"u": oscar["id"], "v": "acme-team"}), "grantVdcMembership"
        )
        assert granted["user"] == {"vdcs": ["acme-team"]}
        assert granted["errors"] == []
        assert [
            m["username"] for m in api(MEMBERS, user=OWNER, variables={"v": "acme-team"}).data["vdcMembers"]
        ] == [MEMBER_OF_ACME]
        # bob is of another organization: to olivia, as one that does not exist.
        theirs = payload(
            api(GRANT, user=OWNER, variables={"u": bob["id"], "v": "acme-team"}), "grantVdcMembership"
        )
        assert [e["code"] for e in theirs["errors"]] == ["NOT_FOUND"]
        # An admin may not make bob a member either: the VDC is acme's.
        mixed = payload(
            api(GRANT, user="admin", variables={"u": bob["id"], "v": "acme-team"}), "grantVdcMembership"
        )
        assert [(e["code"], e["field"]) for e in mixed["errors"]] == [("INVALID", "user")]
        found = api(USERS, user=OWNER, variables={"s": "o"}).data["users"]
        assert {u["organization"] for u in found} == {acme}
    finally:
        api(DELETE, user=OWNER, variables={"id": "acme-team"})


def test_another_organizations_vdcs_are_to_an_org_owner_as_missing_ones(api: InProcessApi, acme: str) -> None:
    assert api('{ vdc(id: "demo") { id } }', user=OWNER).codes == ["NOT_FOUND"]
    for document, variables, name in (
        (DELETE, {"id": "demo"}, "deleteVdc"),
        (UPDATE, {"id": "demo", "input": {"name": "mine"}}, "updateVdc"),
        (GRANT, {"u": user(api, MEMBER_OF_ACME)["id"], "v": "demo"}, "grantVdcMembership"),
    ):
        errors = payload(api(document, user=OWNER, variables=variables), name)["errors"]
        missing = payload(
            api(document, user=OWNER, variables={**variables, "id": "no-such", "v": "no-such"}), name
        )
        assert [e["code"] for e in errors] == ["NOT_FOUND"]
        assert errors[0]["message"].replace("demo", "no-such") == missing["errors"][0]["message"]
    other_org = payload(
        api(CREATE, user=OWNER, variables={"input": vdc("acme-x", organization="100000001")}), "createVdc"
    )
    assert [e["code"] for e in other_org["errors"]] == ["NOT_FOUND"]
    assert api(MEMBERS, user=OWNER, variables={"v": "demo"}).codes == ["NOT_FOUND"]


@pytest.mark.parametrize(
    ("who", "document", "variables", "expected"),
    [
        (
            "admin",
            ALLOWANCE,
            {"o": "404404404", "input": {"quota": {"vcpus": 1, "memoryMib": 1, "diskGb": 1, "vms": 1}}},
            ("NOT_FOUND", None),
        ),
        (
            "admin",
            ALLOWANCE,
            {"o": "bad id!", "input": {"quota": {"vcpus": 1, "memoryMib": 1, "diskGb": 1, "vms": 1}}},
            ("INVALID", "organization"),
        ),
        (
            "admin",
            ALLOWANCE,
            {
                "o": "ACME",
                "input": {"zones": ["nowhere"], "quota": {"vcpus": 1, "memoryMib": 1, "diskGb": 1, "vms": 1}},
            },
            ("INVALID", "zones"),
        ),
        (OWNER, CREATE, {"input": vdc("acme-far", zones=["zone-b"])}, ("INVALID", "zones")),
    ],
    ids=["unknown organization", "malformed organization", "unknown zone", "zone outside the allowance"],
)
def test_bad_input_is_invalid_naming_the_field_or_not_found(
    api: InProcessApi,
    acme: str,
    who: str,
    document: str,
    variables: dict[str, Any],
    expected: tuple[str, str | None],
) -> None:
    if variables.get("o") == "ACME":
        variables = {**variables, "o": acme}
    (result,) = api(document, user=who, variables=variables).data.values()
    assert [(e["code"], e["field"]) for e in result["errors"]] == [expected]


def test_an_allowance_is_not_lowered_below_what_its_vdcs_have(api: InProcessApi, acme: str) -> None:
    assert (
        payload(api(CREATE, user=OWNER, variables={"input": vdc("acme-keep", vcpus=2)}), "createVdc")[
            "errors"
        ]
        == []
    )
    try:
        lower = {
            "zones": ["zone-a"],
            "computeProfiles": ["small"],
            "storageProfiles": ["standard"],
            "images": ["debian-12"],
            "quota": {"vcpus": 1, "memoryMib": 8192, "diskGb": 100, "vms": 3},
        }
        refused = payload(
            api(ALLOWANCE, user="admin", variables={"o": acme, "input": lower}), "setOrganizationAllowance"
        )
        assert [e["code"] for e in refused["errors"]] == ["QUOTA_EXCEEDED"]
        assert "vCPUs" in refused["errors"][0]["message"]
        busy = payload(
            api(DELETE_ALLOWANCE, user="admin", variables={"o": acme}), "deleteOrganizationAllowance"
        )
        assert [e["code"] for e in busy["errors"]] == ["CONFLICT"]
    finally:
        api(DELETE, user=OWNER, variables={"id": "acme-keep"})


def test_a_user_sees_no_allowance_and_sets_none(api: InProcessApi, acme: str) -> None:
    assert api(ORGANIZATIONS, user="alice").codes == ["FORBIDDEN"]
    assert api(
        ALLOWANCE,
        user=OWNER,
        variables={"o": acme, "input": {"quota": {"vcpus": 9, "memoryMib": 1, "diskGb": 1, "vms": 1}}},
    ).codes == ["FORBIDDEN"]


def test_without_zitadel_an_allowance_is_not_taken_away_and_the_delete_is_unavailable_naming_zitadel(
    api: InProcessApi, acme: str, without_zitadel: Replica
) -> None:
    refused = fresh(without_zitadel, "admin", DELETE_ALLOWANCE, o=acme)
    (error,) = refused.data["deleteOrganizationAllowance"]["errors"]
    assert error["code"] == "UNAVAILABLE"
    assert "Zitadel" in error["message"]
    assert [o["organization"] for o in api(ORGANIZATIONS, user="admin").data["organizations"]] == [acme]
    assert roles_now(api.issuer, OWNER) == {"USER", "ORG_OWNER"}


def test_taking_the_allowance_away_takes_the_project_grant_away_and_its_users_roles_in_acme(
    api: InProcessApi, zitadel: FakeZitadel, acme: str
) -> None:
    assert roles_now(api.issuer, MEMBER_OF_ACME) == {"USER"}
    try:
        taken = payload(
            api(DELETE_ALLOWANCE, user="admin", variables={"o": acme}), "deleteOrganizationAllowance"
        )
        assert taken == {"organization": acme, "errors": []}
        assert zitadel.authorizations(organization_id=acme) == []
        assert roles_now(api.issuer, OWNER) == set()
        assert roles_now(api.issuer, MEMBER_OF_ACME) == set()
    finally:
        restore_seeded_organization(zitadel, "acme")
    assert roles_now(api.issuer, OWNER) == {"USER", "ORG_OWNER"}


def test_an_owner_is_given_back_through_the_api_after_the_allowance_went_with_the_owners_roles(
    api: InProcessApi, zitadel: FakeZitadel, acme: str
) -> None:
    owner = str(user(api, OWNER)["id"])
    give_acme_its_allowance(api, acme)  # whatever the tests before left
    try:
        taken = api(DELETE_ALLOWANCE, user="admin", variables={"o": acme})
        assert payload(taken, "deleteOrganizationAllowance")["errors"] == []
        assert roles_now(api.issuer, OWNER) == set()

        # Acme has no allowance now: its owner is given back all the same, and is acme's owner.
        given = payload(
            api(SET_ROLES, user="admin", variables={"u": owner, "r": ["ORG_OWNER"]}), "setPlatformRoles"
        )
        assert given["errors"] == []
        assert given["user"]["roles"] == ["ORG_OWNER"]
        assert roles_now(api.issuer, OWNER) == {"ORG_OWNER"}
        assert [g.role_keys for g in zitadel.authorizations(user_ids=[owner])] == [("ORG_OWNER",)]
        assert [g.organization_id for g in zitadel.authorizations(user_ids=[owner])] == [acme]
        # Her token makes her acme's owner; she makes VDCs once acme has an allowance again.
        early = fresh(api, OWNER, CREATE, input=vdc("acme-early"))
        (error,) = early.data["createVdc"]["errors"]
        assert error["code"] == "QUOTA_EXCEEDED"
        assert error["message"] == f"organization {acme} has no allowance yet: an ADMIN gives it one first"
    finally:
        api(ALLOWANCE, user="admin", variables={"o": acme, "input": ACME_ALLOWANCE})
        restore_seeded_organization(zitadel, "acme")
    assert roles_now(api.issuer, OWNER) == {"USER", "ORG_OWNER"}
