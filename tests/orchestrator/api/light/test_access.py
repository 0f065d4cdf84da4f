"""Access management over the API in this process, on the light world and Zitadel in memory: memberships and
roles written to Zitadel (``FakeZitadel``, the emulator's semantics) and seen in the user's next token; and
what happens while Zitadel is away (the orchestrator's own Zitadel client, pointed at an address that
answers nothing)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from devstack import seed
from devstack.identity.claims import subject_of
from orchestrator.sources.zitadel import ServiceKey, ZitadelSource
from tests.apikit import Answer
from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi, LocalIssuer, in_process
from tests.orchestrator.lightworld import LightWorld

USERS = "query($s: String!) { users(search: $s) { id username name email organization roles vdcs } }"
MEMBERS = "query($v: ID!) { vdcMembers(vdc: $v) { id username vdcs } }"
GRANT = (
    "mutation($u: ID!, $v: ID!) { grantVdcMembership(user: $u, vdc: $v) "
    "{ user { id vdcs roles } errors { field code message } } }"
)
REVOKE = (
    "mutation($u: ID!, $v: ID!) { revokeVdcMembership(user: $u, vdc: $v) "
    "{ user { id vdcs roles } errors { field code message } } }"
)
SET_ROLES = (
    "mutation($u: ID!, $r: [String!]!) { setPlatformRoles(user: $u, roles: $r) "
    "{ user { id roles vdcs } errors { field code message } } }"
)
VMS = "{ virtualMachines(first: 100) { edges { node { id vdc } } } }"
CREATE_VDC = (
    "mutation($input: VdcInput!) { createVdc(input: $input) { vdc { id } errors { field code message } } }"
)
DELETE_VDC = "mutation($id: ID!) { deleteVdc(id: $id) { errors { code message } } }"


class Served(Protocol):
    """An API of this process: ``api``, or ``without_zitadel``'s."""

    issuer: LocalIssuer

    def raw(
        self, query: str, *, headers: dict[str, str] | None = None, variables: dict[str, Any] | None = None
    ) -> Answer: ...


def fresh(served: Served, user: str, document: str, vdc: str | None = None, **variables: Any) -> Answer:
    """``document`` asked with a token issued now (the API's helper keeps each user's first token)."""
    headers = {"Authorization": f"Bearer {served.issuer.token(user)}"}
    if vdc is not None:
        headers["FlexPlane-VDC-ID"] = vdc
    return served.raw(document, headers=headers, variables=variables)


def user_id(api: InProcessApi, username: str) -> str:
    answer = api(USERS, user="admin", variables={"s": username})
    (found,) = [u for u in answer.data["users"] if u["username"] == username]
    return str(found["id"])


def vdc(ident: str, vcpus: int = 2, **extra: Any) -> dict[str, Any]:
    """createVdc's input: a VDC in zone-a offering the seeded small, standard and debian-12."""
    return {
        "id": ident,
        "zones": ["zone-a"],
        "computeProfiles": ["small"],
        "storageProfiles": ["standard"],
        "images": ["debian-12"],
        "quota": {"vcpus": vcpus, "memoryMib": 2048, "diskGb": 20, "vms": 1},
        **extra,
    }


def vdc_input(ident: str) -> dict[str, Any]:
    return vdc(ident, quota={"vcpus": 2, "memoryMib": 2048, "diskGb": 40, "vms": 2})


def test_users_lists_name_email_roles_and_vdcs(api: InProcessApi) -> None:
    answer = api(USERS, user="admin", variables={"s": "alice"})
    assert answer.errors == []
    (alice,) = answer.data["users"]
    assert alice["name"] == "Alice Example"
    assert alice["email"] == "alice@example.com"
    assert alice["roles"] == ["USER"]
    assert alice["vdcs"] == ["demo"]


def test_admin_grants_bob_demo_and_bobs_next_token_lists_demos_vms_until_revoked(api: InProcessApi) -> None:
    bob = user_id(api, "bob")
    assert fresh(api, "bob", VMS, vdc="demo").codes == ["FORBIDDEN"]
    try:
        granted = api(GRANT, user="admin", variables={"u": bob, "v": "demo"})
        assert granted.data["grantVdcMembership"]["errors"] == []
        assert granted.data["grantVdcMembership"]["user"]["vdcs"] == ["demo", "other"]

        listed = fresh(api, "bob", VMS, vdc="demo")
        assert listed.errors == []
        vms = [edge["node"] for edge in listed.data["virtualMachines"]["edges"]]
        assert vms
        assert {vm["vdc"] for vm in vms} == {"demo"}
        members = api(MEMBERS, user="admin", variables={"v": "demo"}).data["vdcMembers"]
        assert {m["username"] for m in members} >= {"alice", "bob"}
    finally:
        revoked = api(REVOKE, user="admin", variables={"u": bob, "v": "demo"})
    assert revoked.data["revokeVdcMembership"]["errors"] == []
    assert revoked.data["revokeVdcMembership"]["user"]["vdcs"] == ["other"]
    assert fresh(api, "bob", VMS, vdc="demo").codes == ["FORBIDDEN"]


def test_platform_roles_are_set_exactly_and_vdcs_stay(api: InProcessApi) -> None:
    bob = user_id(api, "bob")
    try:
        answer = api(SET_ROLES, user="admin", variables={"u": bob, "r": ["USER", "ORG_OWNER"]})
        assert answer.data["setPlatformRoles"]["user"] == {
            "id": bob,
            "roles": ["ORG_OWNER", "USER"],
            "vdcs": ["other"],
        }
        me = fresh(api, "bob", "{ me { roles } }")
        assert me.data["me"]["roles"] == ["ORG_OWNER", "USER"]
    finally:
        restored = api(SET_ROLES, user="admin", variables={"u": bob, "r": ["USER"]})
    assert restored.data["setPlatformRoles"]["user"]["roles"] == ["USER"]


@pytest.mark.parametrize(
    ("document", "variables", "code", "field"),
    [
        (GRANT, {"u": "404404404404404404", "v": "demo"}, "NOT_FOUND", None),
        (GRANT, {"u": "bob", "v": "no-such-vdc"}, "NOT_FOUND", None),
        (GRANT, {"u": "not an id!", "v": "demo"}, "INVALID", "user"),
        (GRANT, {"u": "bob", "v": "Not_A_Slug"}, "INVALID", "vdc"),
        (SET_ROLES, {"u": "bob", "r": ["ROOT"]}, "INVALID", "roles"),
        (SET_ROLES, {"u": "404404404404404404", "r": ["USER"]}, "NOT_FOUND", None),
    ],
    ids=[
        "unknown user",
        "unknown vdc",
        "malformed user",
        "malformed vdc",
        "unknown role",
        "unknown user roles",
    ],
)
def test_bad_input_is_invalid_naming_the_field_or_not_found(
    api: InProcessApi, document: str, variables: dict[str, Any], code: str, field: str | None
) -> None:
    if variables["u"] == "bob":
        variables = {**variables, "u": user_id(api, "bob")}
    answer = api(document, user="admin", variables=variables)
    (payload,) = answer.data.values()
    assert [(e["code"], e["field"]) for e in payload["errors"]] == [(code, field)]
    assert "Errors." not in payload["errors"][0]["message"]  # none of Zitadel's own text


@pytest.mark.parametrize(
    "search", ["", "   ", "x" * 101, "a\x00b"], ids=["empty", "blank", "long", "control"]
)
def test_an_empty_or_malformed_search_is_invalid_naming_search(api: InProcessApi, search: str) -> None:
    answer = api(USERS, user="admin", variables={"s": search})
    assert answer.codes == ["INVALID"]
    assert answer.errors[0]["extensions"]["field"] == "search"


def test_a_user_manages_no_access(api: InProcessApi) -> None:
    assert api(USERS, user="alice", variables={"s": "bob"}).codes == ["FORBIDDEN"]
    answer = api(GRANT, user="alice", variables={"u": "1", "v": "demo"})
    assert answer.codes == ["FORBIDDEN"]


def test_a_vdc_has_its_role_while_it_exists(api: InProcessApi, zitadel: FakeZitadel) -> None:
    made = api(CREATE_VDC, user="admin", variables={"input": vdc_input("access-role")})
    assert made.data["createVdc"]["errors"] == []
    try:
        bob = user_id(api, "bob")
        assert (
            api(GRANT, user="admin", variables={"u": bob, "v": "access-role"}).data["grantVdcMembership"][
                "errors"
            ]
            == []
        )
        assert [a.user_id for a in zitadel.authorizations(role_key="vdc:access-role")] == [bob]
    finally:
        deleted = api(DELETE_VDC, user="admin", variables={"id": "access-role"})
    assert deleted.data["deleteVdc"]["errors"] == []
    assert "vdc:access-role" not in api(USERS, user="admin", variables={"s": "bob"}).data["users"][0]["vdcs"]


# ---------------------------------------------------------------------------------- Zitadel away


@dataclass
class Replica:
    """The API as a replica whose Zitadel API answers nothing serves it: the same issuer (tokens are still
    checked, with the roles Zitadel held when it was up), management cluster and zones, and for Zitadel the
    orchestrator's own client of an address where nothing listens. Each request is served under its own
    ``in_process``, so that ``api`` keeps its Zitadel between them."""

    issuer: LocalIssuer
    light: LightWorld
    tenant_clusters: FakeClusterApi
    zitadel: ZitadelSource

    def raw(
        self, query: str, *, headers: dict[str, str] | None = None, variables: dict[str, Any] | None = None
    ) -> Answer:
        light = self.light
        with in_process(self.issuer, light.kube, light.proxmox, self.tenant_clusters, self.zitadel) as api:
            return api.raw(query, headers=headers, variables=variables)


@pytest.fixture(scope="module")
def without_zitadel(
    issuer: LocalIssuer, light: LightWorld, tenant_clusters: FakeClusterApi
) -> Iterator[Replica]:
    """A replica whose Zitadel API address answers nothing (tokens are still checked)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
        host, port = closed.getsockname()
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
        key = ServiceKey(key_id="1", user_id=subject_of("flexplane-orchestrator"), private_key=pem)
        source = ZitadelSource(f"http://{host}:{port}", key, seed.PROJECT_ID, timeout=1.0)
        yield Replica(issuer, light, tenant_clusters, source)


def test_without_zitadel_reads_keep_working_from_the_tokens_claims(
    api: InProcessApi, without_zitadel: Replica
) -> None:
    answer = fresh(without_zitadel, "alice", VMS, vdc="demo")
    assert answer.errors == []
    assert answer.data["virtualMachines"]["edges"]
    assert fresh(without_zitadel, "alice", "{ vdcs { id } }").data["vdcs"] == [{"id": "demo"}]


def test_without_zitadel_access_writes_are_unavailable_naming_zitadel(
    api: InProcessApi, without_zitadel: Replica
) -> None:
    bob = user_id(api, "bob")
    granted = fresh(without_zitadel, "admin", GRANT, u=bob, v="demo")
    (error,) = granted.data["grantVdcMembership"]["errors"]
    assert error["code"] == "UNAVAILABLE"
    assert "Zitadel" in error["message"]
    listed = fresh(without_zitadel, "admin", USERS, s="bob")
    assert listed.codes == ["UNAVAILABLE"]
    assert "Zitadel" in listed.errors[0]["message"]
    assert api(USERS, user="admin", variables={"s": "bob"}).data["users"][0]["vdcs"] == ["other"]


def test_without_zitadel_no_vdc_is_left_behind(
    api: InProcessApi, light: LightWorld, without_zitadel: Replica
) -> None:
    made = fresh(without_zitadel, "admin", CREATE_VDC, input=vdc_input("access-down"))
    (error,) = made.data["createVdc"]["errors"]
    assert error["code"] == "UNAVAILABLE"
    assert "Zitadel" in error["message"]
    assert api('{ vdc(id: "access-down") { id } }', user="admin").codes == ["NOT_FOUND"]
    pools = light.fakes.on_loop(lambda pve: set(pve.pools), light.fakes["zone-a"].pve)
    assert "fp-access-down" not in pools


def test_without_zitadel_a_vdc_is_not_deleted_and_stays_whole(
    api: InProcessApi, light: LightWorld, without_zitadel: Replica
) -> None:
    made = api(CREATE_VDC, user="admin", variables={"input": vdc_input("access-keep")})
    assert made.data["createVdc"]["errors"] == []
    try:
        refused = fresh(without_zitadel, "admin", DELETE_VDC, id="access-keep")
        (error,) = refused.data["deleteVdc"]["errors"]
        assert error["code"] == "UNAVAILABLE"
        assert "Zitadel" in error["message"]
        assert api('{ vdc(id: "access-keep") { id } }', user="admin").data["vdc"] == {"id": "access-keep"}
        pools = light.fakes.on_loop(lambda pve: set(pve.pools), light.fakes["zone-a"].pve)
        assert "fp-access-keep" in pools
    finally:
        deleted = api(DELETE_VDC, user="admin", variables={"id": "access-keep"})
    assert deleted.data["deleteVdc"]["errors"] == []
