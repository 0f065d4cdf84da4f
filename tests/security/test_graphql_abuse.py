"""GraphQL abuse (OWASP GraphQL cheat sheet), against the running orchestrator's /graphql over HTTP.

Each abusive document is refused before it runs (400, with the rule it broke), quickly; the time
each refusal took is in the run's summary. Batching is off: a JSON array is refused whatever its
length, so the limit on operations per request is one. Under production settings introspection
and GraphiQL are off, checked against an orchestrator process started with those settings.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.test import override_settings
from graphql import get_introspection_query, parse, validate

from orchestrator.graphql.schema import schema
from orchestrator.graphql.validation import validation_rules
from tests.apikit import Answer, GraphQL
from tests.promises import RecordFigure
from tests.security.conftest import BEHIND_THE_INGRESS, Production, ProxmoxCalls

pytestmark = pytest.mark.promise("graphql-abuse")

SUITE = "graphql-abuse"
# A refusal happens before anything runs; this leaves room for a busy machine.
QUICKLY = 2.0
VM_LIST = "{ virtualMachines(first: %s) { edges { cursor } } }"


def nested(depth: int) -> str:
    """Fields nested depth levels deep (names the schema does not have: depth is checked regardless)."""
    return "{ me " + "{ a " * (depth - 2) + "{ subject }" + " }" * (depth - 2) + " }"


def aliases(count: int) -> str:
    return "{ " + " ".join(f"a{i}: me {{ subject }}" for i in range(count)) + " }"


def fragment_chain(length: int) -> str:
    chain = "".join(f"fragment F{i} on Query {{ ...F{i + 1} }} " for i in range(length))
    return f"query {{ ...F0 }} {chain}fragment F{length} on Query {{ me {{ subject }} }}"


def fragment_diamond(levels: int) -> str:
    """Each fragment spreads the next twice: 2**levels paths through a small document."""
    steps = "".join(f"fragment D{i} on Me {{ subject ...D{i + 1} ...D{i + 1} }} " for i in range(levels))
    return f"{{ me {{ ...D0 }} }} {steps}fragment D{levels} on Me {{ name }}"


# name -> (document, what the refusal says)
REFUSED: dict[str, tuple[str, str]] = {
    "depth 12, beyond the limit of 10": (nested(12), "more than 10 levels deep"),
    "31 aliases, beyond the limit of 30": (aliases(31), "more than 30 aliases"),
    "a thousand aliases": (aliases(1000), "more than 1000 tokens"),
    "the same field 300 times": ("{ " + "me { subject } " * 300 + "}", "more than 1000 tokens"),
    "first beyond a 32-bit integer": (VM_LIST % (2**40), "Int cannot represent non 32-bit signed integer"),
    "fragments nested 300 deep": (fragment_chain(300), "more than 1000 tokens"),
    "a fragment cycle": (
        "query { ...A } fragment A on Query { ...B } fragment B on Query { me { subject } ...A }",
        "Cannot spread fragment 'A' within itself via 'B'",
    ),
    "an unknown fragment": ("query { ...Nowhere }", "Unknown fragment 'Nowhere'"),
    "an unknown field": ("{ me { subject } secrets }", "Cannot query field 'secrets' on type 'Query'"),
    "introspection nested without end": (
        "{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }",
        "Maximum introspection depth exceeded",
    ),
    "two operations, none named": ("query A { me { name } } query B { me { email } }", "operation name"),
}


def timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


@pytest.fixture(scope="module")
def refusals(record_figure: RecordFigure) -> Iterator[dict[str, float]]:
    """How long each refusal took (ms), for the summary."""
    times: dict[str, float] = {}
    yield times
    for case, ms in times.items():
        record_figure(SUITE, f"refused in (ms): {case}", round(ms, 1))


@pytest.mark.parametrize("case", list(REFUSED))
def test_an_abusive_document_is_refused_before_it_runs(
    api: GraphQL, proxmox_calls: ProxmoxCalls, refusals: dict[str, float], case: str
) -> None:
    document, reason = REFUSED[case]

    answer, elapsed = timed(lambda: api(document, user="alice"))

    assert answer.status == 400, answer.body
    assert "data" not in answer.body or answer.data is None
    assert any(reason in error["message"] for error in answer.errors), answer.errors
    assert proxmox_calls.since_mark() == []
    assert elapsed < QUICKLY
    refusals[case] = elapsed * 1000


def test_a_huge_first_is_refused_before_proxmox_is_asked(
    api: GraphQL, proxmox_calls: ProxmoxCalls, refusals: dict[str, float]
) -> None:
    answer, elapsed = timed(lambda: api(VM_LIST % 1_000_000, user="alice"))

    assert answer.data is None
    assert [(e["extensions"]["code"], e["extensions"]["field"]) for e in answer.errors] == [
        ("INVALID", "first")
    ]
    assert "'first' must be between 1 and 500" in answer.errors[0]["message"]
    assert proxmox_calls.since_mark() == []
    assert elapsed < QUICKLY
    refusals["first: 1000000, beyond the page size of 500"] = elapsed * 1000


def test_a_fragment_spread_two_to_the_thirtieth_times_costs_no_more_than_once(
    api: GraphQL, record_figure: RecordFigure
) -> None:
    """Fragments are measured and executed once per selection, not once per path through them."""
    answer, elapsed = timed(lambda: api(fragment_diamond(30), user="alice"))

    assert answer.status == 200, answer.body
    assert answer.data["me"] == {"subject": answer.data["me"]["subject"], "name": "Alice Example"}
    assert elapsed < QUICKLY
    record_figure(SUITE, "answered in (ms): a fragment spread 2**30 times", round(elapsed * 1000, 1))


@pytest.mark.parametrize("length", [2, 1000])
def test_a_batch_is_refused_whatever_its_length(
    api: GraphQL, refusals: dict[str, float], record_figure: RecordFigure, length: int
) -> None:
    """Batching is off: one operation per request, so a client cannot multiply work past the limits."""
    body = [{"query": "{ me { subject } }"}] * length

    response, elapsed = timed(
        lambda: requests.post(
            api.url, json=body, headers={"Authorization": f"Bearer {api.token('alice')}"}, timeout=30
        )
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["message"] == "The received data is not a valid JSON query."
    assert elapsed < QUICKLY
    refusals[f"a batch of {length} operations"] = elapsed * 1000
    record_figure(SUITE, "operations accepted per request (batching off)", 1)


def test_a_deep_query_of_the_schema_is_refused_when_the_limit_is_lower() -> None:
    """The depth rule on the schema's own fields (none nests past 10 today), with the limit at 3."""
    deep = parse("{ virtualMachines { edges { node { id } } } }")
    shallow = parse("{ vdcs { quota { vcpus } } }")

    with override_settings(FLEXPLANE_GRAPHQL_MAX_DEPTH=3):
        rules = validation_rules()

    assert [e.message for e in validate(schema.graphql_schema, deep, rules)] == [
        "the query nests fields more than 3 levels deep"
    ]
    assert validate(schema.graphql_schema, shallow, rules) == []


def test_the_standard_introspection_query_passes_the_limits_where_introspection_is_on(api: GraphQL) -> None:
    """GraphiQL and code generators send it: the limits must not break them outside production."""
    answer = api(get_introspection_query(), user="alice")

    assert answer.status == 200, answer.errors
    assert answer.data["__schema"]["queryType"]["name"] == "Query"


# ------------------------------------------------------------------------------- production


@pytest.fixture(scope="module")
def production(production_orchestrator: Production) -> str:
    """/graphql of the orchestrator under flexplane.settings.production (tests/security/conftest.py)."""
    return f"{production_orchestrator.url}/graphql"


def post(url: str, token: str, query: str) -> Answer:
    response = requests.post(
        url,
        json={"query": query},
        headers={"Authorization": f"Bearer {token}", **BEHIND_THE_INGRESS},
        timeout=30,
    )
    return Answer(response.status_code, response.json(), response.headers)


@pytest.mark.parametrize(
    "query", ["{ __schema { types { name } } }", '{ __type(name: "Query") { fields { name } } }']
)
def test_introspection_is_off_in_production(api: GraphQL, production: str, query: str) -> None:
    answer = post(production, api.token("alice"), query)

    assert answer.status == 400, answer.body
    assert any("introspection is disabled" in e["message"].lower() for e in answer.errors), answer.errors


def test_production_still_answers_queries(api: GraphQL, production: str) -> None:
    """The control: the production process refuses introspection, not everything."""
    answer = post(production, api.token("alice"), "{ me { name } }")

    assert answer.status == 200, answer.body
    assert answer.data == {"me": {"name": "Alice Example"}}


def test_graphiql_is_off_in_production_and_on_in_development(api: GraphQL, production: str) -> None:
    headers = {"Accept": "text/html", "Authorization": f"Bearer {api.token('alice')}"}

    in_production = requests.get(production, headers={**headers, **BEHIND_THE_INGRESS}, timeout=10)
    in_development = requests.get(api.url, headers=headers, timeout=10)

    assert "graphiql" not in in_production.text.lower()
    assert in_production.headers["Content-Type"].startswith("application/json")
    assert in_development.status_code == 200
    assert "graphiql" in in_development.text.lower()
