from __future__ import annotations

from tests.apikit import GraphQL


def test_me_describes_the_caller_from_the_token(api: GraphQL) -> None:
    answer = api("{ me { subject name email roles vdcs } }", user="alice")
    me = answer.data["me"]
    assert me["name"] == "Alice Example"
    assert me["email"] == "alice@example.com"
    assert me["roles"] == ["USER"]
    assert me["vdcs"] == ["demo"]
    assert me["subject"]


def test_admin_has_the_admin_role(api: GraphQL) -> None:
    assert api("{ me { roles vdcs } }", user="admin").data["me"] == {"roles": ["ADMIN"], "vdcs": []}
