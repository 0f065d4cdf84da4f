"""The committed schema.graphql is the API's contract: it must match the code."""

from __future__ import annotations

from pathlib import Path

from orchestrator.graphql.schema import schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema.graphql"


def test_the_committed_schema_matches_the_code() -> None:
    assert SCHEMA_FILE.read_text() == str(schema) + "\n", (
        "schema.graphql is stale: run `make schema` and commit the result"
    )
