"""One error boundary: what a hostile tenant sends never reaches them as Python's own words.

Ids and cursors are parsed strictly (ASCII digits, finite bounded integers), so ``zone-a/²²²`` and
``zone-a/`` with Arabic-Indic digits are ids of nothing, and a cursor holding ``Infinity`` is not a
cursor this API handed out. A body that is not a GraphQL request (a query that is not a string,
variables that are not an object or nest too deeply, bytes that are not UTF-8) is refused with 400
in words. Any exception nothing expected is answered as ``INTERNAL`` with a request id, its
traceback logged once under that id; the portal's page shows the id, never the exception.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from typing import Any

import pytest
import requests
from django.test import RequestFactory
from graphql import GraphQLError

from devstack.world import World
from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.graphql.view import FlexPlaneGraphQLView
from orchestrator.models.vms import parse_vm_id
from orchestrator.services.vms import decode_cursor, encode_cursor
from tests.apikit import Answer, GraphQL
from tests.portal.sessionkit import login

pytestmark = pytest.mark.promise("errors")

# Words of Python's exceptions that must never reach a client.
PYTHON_WORDS = re.compile(
    r"Traceback|invalid literal for int|cannot convert float|object has no attribute|NoneType|"
    r"unsupported operand|not subscriptable|is not iterable|unexpected keyword|positional argument|"
    r"maximum recursion|codec can't|KeyError|TypeError|ValueError|AttributeError|OverflowError|"
    r"RecursionError|Expecting value|line \d+ column \d+ \(char"
)
VM = "query($id: ID!) { virtualMachine(id: $id) { id name } }"
VMS = "query($after: String) { virtualMachines(first: 5, after: $after) { edges { node { id } } } }"
WEB_1 = "zone-a/100"  # devstack/seed.py: alice's web-1
ARABIC_100 = "zone-a/\u0661\u0660\u0660"  # str.isdigit() holds, and int() reads 100
FULLWIDTH_100 = "zone-a/\uff11\uff10\uff10"


def cursor_of(value: Any) -> str:
    """A cursor as this API's are made (base64 of JSON), holding what a tenant put in it."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


def in_words(answer: Answer | requests.Response) -> None:
    text = answer.text if isinstance(answer, requests.Response) else json.dumps(answer.body)
    assert not PYTHON_WORDS.search(text), text[:2000]


# ------------------------------------------------------------------------------------ the parsers


@pytest.mark.parametrize(
    "ident",
    [
        "zone-a/²²²",
        ARABIC_100,
        FULLWIDTH_100,
        "zone-a/0100",
        "zone-a/+100",
        "zone-a/100\n",
        "zone-a/ 100",
    ],
)
def test_a_vm_id_is_ascii_digits_only(ident: str) -> None:
    assert parse_vm_id(ident) is None


def test_a_vm_id_of_ascii_digits_is_parsed() -> None:
    assert parse_vm_id(WEB_1) == ("zone-a", 100)


@pytest.mark.parametrize(
    "held",
    [
        ["web", "zone-a", float("inf")],
        ["web", "zone-a", float("nan")],
        ["web", "zone-a", 1.5],
        ["web", "zone-a", True],
        ["web", "zone-a", 10**30],
        ["web", "zone-a", -1],
        ["web", "zone-a", "100"],
        [["web"], "zone-a", 100],
        ["web", "zone-a"],
        {"name": "web"},
    ],
)
def test_a_cursor_holds_two_strings_and_a_bounded_vmid(held: Any) -> None:
    with pytest.raises(ValidationFailed):
        decode_cursor(cursor_of(held))


def test_a_cursor_too_deep_or_too_long_is_refused() -> None:
    for cursor in (cursor_of([[[[[]]]]] * 2), base64.urlsafe_b64encode(b"[" * 100_000).decode(), "é" * 10):
        with pytest.raises(ValidationFailed):
            decode_cursor(cursor)


def test_a_cursor_this_api_made_is_read_back() -> None:
    assert decode_cursor(encode_cursor(("web-1", "zone-a", 100))) == ("web-1", "zone-a", 100)


# ------------------------------------------------------------------------------------ the boundary


def test_an_unexpected_exception_in_a_resolver_is_internal_with_a_request_id_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    view = FlexPlaneGraphQLView()
    try:
        int("²")
    except ValueError as exc:
        raised = GraphQLError(str(exc), path=["virtualMachine"], original_error=exc)

    with caplog.at_level(logging.ERROR):
        answered = view._expected(raised)
        again = view._expected(GraphQLError("x", path=["tasks"], original_error=KeyError("upid")))

    assert answered.extensions is not None
    assert answered.extensions["code"] == "INTERNAL"
    request_id = answered.extensions["requestId"]
    assert request_id in answered.message
    assert "invalid literal" not in answered.message
    assert answered.path == ["virtualMachine"]
    assert again.extensions is not None
    assert again.extensions["requestId"] == request_id  # one request, one id
    logged = [r for r in caplog.records if request_id in r.getMessage()]
    assert len(logged) == 2
    assert all(r.exc_info for r in logged)
    assert "invalid literal" in str(logged[0].exc_info[1])  # type: ignore[index]


def test_a_domain_error_and_graphqls_own_errors_pass_the_boundary_as_they_are() -> None:
    view = FlexPlaneGraphQLView()
    domain = GraphQLError(
        "no", path=["task"], original_error=NotFound("task", "x"), extensions={"code": "NOT_FOUND"}
    )
    syntax = GraphQLError("Syntax Error: Unexpected Name 'x'.")
    assert view._expected(domain) is domain
    assert view._expected(syntax) is syntax


def test_the_portals_page_of_an_unexpected_exception_shows_its_request_id_not_its_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from portal.errors import internal_error_page  # here: a test of the page alone

    request = RequestFactory().get("/vdc/demo/vms/")
    try:
        int("²")
    except ValueError as exc:
        with caplog.at_level(logging.ERROR):
            page = internal_error_page(request, exc)

    text = page.content.decode()
    assert page.status_code == 500
    found = re.search(r"data-request-id>([0-9a-f]+)<", text)
    assert found is not None, text
    assert not PYTHON_WORDS.search(text), text
    assert len([r for r in caplog.records if found.group(1) in r.getMessage() and r.exc_info]) == 1


# ------------------------------------------------------------------------------------ over HTTP


@pytest.mark.parametrize("ident", ["zone-a/²²²", ARABIC_100, "zone-a/0100"])
def test_a_vm_id_of_other_digits_is_not_found_over_graphql(api: GraphQL, ident: str) -> None:
    answer = api(VM, user="alice", vdc="demo", variables={"id": ident})
    in_words(answer)
    assert answer.codes == ["NOT_FOUND"], answer.body


def test_a_cursor_holding_infinity_is_invalid_over_graphql(api: GraphQL) -> None:
    for held in (["web", "zone-a", float("inf")], ["web", "zone-a", 1e300], ["web", "zone-a", [1]]):
        answer = api(VMS, user="alice", vdc="demo", variables={"after": cursor_of(held)})
        in_words(answer)
        assert answer.codes == ["INVALID"], answer.body


def test_a_cursor_holding_infinity_is_a_form_error_in_the_portal(world: World) -> None:
    session, _ = login(world, "alice")
    page = session.get(
        f"{world.url}/vdc/demo/vms/", params={"after": cursor_of(["web", "zone-a", float("inf")])}, timeout=30
    )
    in_words(page)
    assert page.status_code < 500, page.text[:2000]
    assert "is not a cursor this API handed out" in page.text


@pytest.mark.parametrize(
    "body",
    [
        {"query": 5},
        {"query": ["{ me { subject } }"]},
        {"query": {"a": 1}},
        {"query": "{ me { subject } }", "variables": 5},
        {"query": "{ me { subject } }", "variables": [1, 2]},
        {"query": "{ me { subject } }", "operationName": 7},
        {"query": VM, "variables": {"id": json.loads("[" * 200 + "]" * 200)}},
    ],
    ids=[
        "query-number",
        "query-list",
        "query-object",
        "variables-number",
        "variables-list",
        "name-number",
        "deep",
    ],
)
def test_a_body_that_is_no_graphql_request_is_refused_in_words(api: GraphQL, body: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {api.token('alice')}", "FlexPlane-VDC-ID": "demo"}
    response = requests.post(api.url, json=body, headers=headers, timeout=30)
    assert response.status_code == 400, response.text[:2000]
    in_words(response)
    assert response.json()["errors"][0]["message"]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"query": "{ me { subject } }", "variables": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b"\xff\xfe{}",
    ],
    ids=["nested-beyond-the-stack", "not-utf8"],
)
def test_a_body_beyond_the_parser_is_refused_in_words(api: GraphQL, raw: bytes) -> None:
    headers = {
        "Authorization": f"Bearer {api.token('alice')}",
        "FlexPlane-VDC-ID": "demo",
        "Content-Type": "application/json",
    }
    response = requests.post(api.url, data=raw, headers=headers, timeout=30)
    assert response.status_code == 400, response.text[:2000]
    in_words(response)
