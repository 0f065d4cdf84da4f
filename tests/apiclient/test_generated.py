"""The committed client (apiclient/generated/) is exactly what `make schema` generates from schema.graphql
and apiclient/operations, and its operations are valid against the schema the API serves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graphql import GraphQLObjectType, get_named_type

from orchestrator.graphql.schema import schema

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "apiclient" / "generated"


def test_the_committed_client_is_what_the_schema_and_the_operations_generate(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_apiclient.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    fresh = tmp_path / "apiclient" / "generated"

    generated = {path.relative_to(fresh) for path in map(Path, result.stdout.split())}
    committed = {path.relative_to(GENERATED) for path in GENERATED.rglob("*.py")}
    assert generated == committed, "run `make schema` and commit apiclient/generated (files added or gone)"
    drifted = sorted(str(p) for p in generated if (fresh / p).read_bytes() != (GENERATED / p).read_bytes())
    assert drifted == [], f"stale: run `make schema` and commit apiclient/generated ({', '.join(drifted)})"


def test_every_mutation_answers_errors_and_no_query_does() -> None:
    """The client raises a mutation's payload errors by finding ``errors`` in the answer's top-level
    objects (apiclient.client.FlexPlane.get_data): true only while every mutation's payload has them
    and no query's object does."""
    graphql_schema = schema.graphql_schema
    assert graphql_schema.mutation_type is not None

    def with_errors(root: GraphQLObjectType) -> set[str]:
        return {
            name
            for name, field in root.fields.items()
            if isinstance(named := get_named_type(field.type), GraphQLObjectType) and "errors" in named.fields
        }

    mutations = graphql_schema.mutation_type
    assert with_errors(mutations) == set(mutations.fields)
    assert with_errors(graphql_schema.query_type) == set()
