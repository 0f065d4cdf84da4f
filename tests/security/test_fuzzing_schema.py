"""Fuzzing driven by the schema (hypothesis-graphql): queries and their arguments generated from the
committed ``schema.graphql``, valid ones and ones with one violation of the schema, sent to the world
as alice (a member of VDC demo) and as admin.

Whatever is asked, the answer is GraphQL's: never a 500, never Python's own words (an exception's
text, a traceback), every error raised while running a field coded (``extensions.code``), and never
``INTERNAL``: each one would be an exception nothing expected, a bug to fix. Only queries: generated
mutations would change the world the other suites share.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import graphql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import Mode, queries

from tests.apikit import Answer, GraphQL
from tests.promises import RecordFigure
from tests.security.test_error_boundary import PYTHON_WORDS

pytestmark = pytest.mark.promise("fuzzing")

SUITE = "fuzzing"
SCHEMA = graphql.build_schema((Path(__file__).resolve().parents[2] / "schema.graphql").read_text())
FUZZ = settings(
    max_examples=25,
    deadline=None,
    database=None,  # no example database written into the work tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# The codes a field's error may carry (orchestrator/errors.py), INTERNAL left out on purpose.
CODES = {"UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "INVALID", "QUOTA_EXCEEDED", "CONFLICT"} | {
    "UNAVAILABLE",
    "UPSTREAM_FAILURE",
}
SCALARS = {
    "DateTime": st.datetimes(timezones=st.just(UTC)).map(
        lambda t: graphql.StringValueNode(value=t.isoformat())
    ),
    "BigInt": st.integers(min_value=-(2**70), max_value=2**70).map(
        lambda n: graphql.IntValueNode(value=str(n))
    ),
}
DOCUMENTS = st.one_of(
    queries(SCHEMA, custom_scalars=SCALARS, mode=Mode.POSITIVE),
    queries(SCHEMA, custom_scalars=SCALARS, mode=Mode.NEGATIVE),
)
USERS = {"alice": "demo", "admin": None}


@pytest.fixture(scope="module")
def tally(record_figure: RecordFigure) -> Iterator[Counter[str]]:
    outcomes: Counter[str] = Counter()
    yield outcomes
    for name, count in sorted(outcomes.items()):
        record_figure(SUITE, f"schema-driven: {name}", count)


def judged(answer: Answer) -> str:
    """How the answer ended ("data", "refused", or the first field error's code); fails on a 500, on
    Python's words, on an uncoded field error and on INTERNAL."""
    text = json.dumps(answer.body)
    assert answer.status < 500 or answer.status == 503, (answer.status, text[:2000])
    assert not PYTHON_WORDS.search(text), text[:2000]
    for error in answer.errors:
        code = error.get("extensions", {}).get("code")
        assert code != "INTERNAL", error
        if error.get("path"):
            assert code in CODES, f"a field's error without a known code: {error}"
    if answer.status == 400:
        return "refused"
    return answer.codes[0] if answer.errors and answer.codes[0] else "data"


@pytest.mark.parametrize("user", sorted(USERS))
@FUZZ
@given(document=DOCUMENTS)
def test_a_query_generated_from_the_schema_is_answered_by_graphql_never_by_python(
    api: GraphQL, tally: Counter[str], user: str, document: str
) -> None:
    answer = api(document, user=user, vdc=USERS[user])
    tally[f"{user}: {judged(answer)}"] += 1
