from __future__ import annotations

from tests.apikit import Api


def test_me_describes_the_caller_from_the_token(api: Api) -> None:
    answer = api("{ me { subject name email roles vdcs } }", user="alice")
    me = answer.data["me"]
    assert me["name"] == "Alice Example"
    assert me["email"] == "alice@example.com"
    assert me["roles"] == ["USER"]
    assert me["vdcs"] == ["demo"]
    assert me["subject"]


def test_admin_has_the_admin_role(api: Api) -> None:
    assert api("{ me { roles vdcs } }", user="admin").data["me"] == {"roles": ["ADMIN"], "vdcs": []}
