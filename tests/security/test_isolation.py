"""Tenant isolation, the matrix (OWASP API Security Top 10: API1 BOLA, API5 BFLA).

Every query and mutation field of ``schema.graphql`` is asked by four callers, against the world's
orchestrator over HTTP with the identity provider's own tokens:

- anonymous: no token at all;
- bob: USER of VDC other, which is not the VDC of the objects asked about;
- alice: USER of VDC demo, the VDC of the objects asked about;
- admin: ADMIN, member of no VDC;
- olivia: ORG_OWNER (and USER) of organization acme, which holds neither VDC: to her, demo and other
  are another organization's, and the users of the default organization are not hers.

``ROWS`` (``isolation_queries``, ``isolation_mutations``; their parts in ``isolation_matrix``) holds
each field's document and the outcome expected in each cell. The cells are made from
the committed schema file when the suite is collected, so a field added to the API without a row
fails here, with the row to add. The arguments are harmless: objects that do not exist, VMs made for
the module and asked to become what they are (start a running one, stop a stopped one), or objects a
cell creates and removes again.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from graphql import GraphQLSchema, OperationDefinitionNode, build_schema, parse

from devstack.world import World
from orchestrator.graphql.schema import schema
from tests.apikit import Answer, GraphQL
from tests.promises import RecordFigure
from tests.security.conftest import AlicesVms
from tests.security.isolation_matrix import (
    ANONYMOUS,
    CALLERS,
    SCHEMA_FILE,
    SUITE,
    Row,
    Stage,
    Unauthenticated,
)
from tests.security.isolation_mutations import MUTATION_ROWS
from tests.security.isolation_queries import QUERY_ROWS

pytestmark = pytest.mark.promise("isolation")


ROWS: dict[str, dict[str, Row]] = {"Query": QUERY_ROWS, "Mutation": MUTATION_ROWS}


# ------------------------------------------------------------------------------------------ the cells


@functools.cache
def committed_schema() -> GraphQLSchema:
    return build_schema(SCHEMA_FILE.read_text())


def schema_fields() -> list[tuple[str, str]]:
    """(type, field) of every query and mutation of the committed schema."""
    schema = committed_schema()
    roots = [("Query", schema.query_type), ("Mutation", schema.mutation_type)]
    return [(kind, name) for kind, root in roots if root is not None for name in root.fields]


CELLS = [(kind, name, who) for kind, name in schema_fields() for who in CALLERS]


def ask(api: GraphQL, who: str, row: Row, variables: dict[str, Any]) -> Answer:
    headers = {} if who == ANONYMOUS else {"Authorization": f"Bearer {api.token(who)}"}
    if row.vdc is not None:
        headers["FlexPlane-VDC-ID"] = row.vdc
    return api.raw(row.document, headers=headers, variables=variables, timeout=120)


def asked_field(document: str) -> str:
    (operation,) = parse(document).definitions
    assert isinstance(operation, OperationDefinitionNode)
    (selection,) = operation.selection_set.selections
    name: str = selection.name.value  # type: ignore[attr-defined]  # a field, checked by the caller
    return name


@pytest.fixture(scope="module")
def stage(api: GraphQL, world: World, alices_vms: AlicesVms) -> Stage:
    return Stage(api, world, alices_vms)


@pytest.fixture(scope="module")
def tally(record_figure: RecordFigure) -> Iterator[list[str]]:
    """The cells that held, for the summary."""
    held: list[str] = []
    yield held
    fields = len(schema_fields())
    record_figure(SUITE, "GraphQL matrix: fields x callers", f"{fields} x {len(CALLERS)}")
    record_figure(SUITE, "GraphQL matrix: cells that held", f"{len(held)} of {len(CELLS)}")


@pytest.mark.parametrize(("kind", "name", "who"), CELLS, ids=[f"{k}.{n}-{w}" for k, n, w in CELLS])
def test_each_caller_gets_what_the_matrix_says(
    stage: Stage, tally: list[str], kind: str, name: str, who: str
) -> None:
    row = ROWS[kind].get(name)
    if row is None:
        pytest.fail(
            f"schema.graphql has {kind}.{name}, which the isolation matrix has no row for: add "
            f"{kind.upper()}_ROWS[{name!r}] to tests/security/isolation_{kind.lower()}s.py, with its "
            f"document and the outcome for each of {', '.join(CALLERS)}"
        )
    assert asked_field(row.document) == name, f"the row of {kind}.{name} asks for another field"
    try:
        answer = ask(stage.api, who, row, row.variables(stage, who))
        row.cells[who].check(answer, name)
    finally:
        if row.cleanup is not None:
            row.cleanup(stage, who)
    tally.append(f"{kind}.{name}-{who}")


def test_the_matrix_has_no_row_for_a_field_the_schema_does_not_have() -> None:
    in_schema = set(schema_fields())
    rows = {(kind, name) for kind, named in ROWS.items() for name in named}
    stale = sorted(rows - in_schema)
    assert stale == [], f"rows for fields schema.graphql does not have (remove them): {stale}"


def test_every_row_says_what_each_caller_gets() -> None:
    for kind, rows in ROWS.items():
        for name, row in rows.items():
            assert set(row.cells) == set(CALLERS), f"{kind}.{name}: an outcome for each of {CALLERS}"
            assert isinstance(row.cells[ANONYMOUS], Unauthenticated), f"{kind}.{name}: anonymous gets 401"


def test_the_committed_schema_is_the_one_the_orchestrator_serves() -> None:
    """The matrix is made from the file; the file must be what runs (tests/orchestrator/test_schema.py
    keeps it in sync; this says so here, where a drift would leave fields out of the matrix)."""
    served = schema.graphql_schema
    for kind, root in (("Query", served.query_type), ("Mutation", served.mutation_type)):
        assert root is not None
        assert {name for k, name in schema_fields() if k == kind} == set(root.fields), kind
