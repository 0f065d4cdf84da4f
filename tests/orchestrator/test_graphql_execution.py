"""The orchestrator's GraphQL execution (orchestrator.graphql.execution) answers exactly as graphql-core's:
the same data and the same errors (message, path, locations), for every kind of field, value and source
a schema can give it; only plain leaves take the short way. Every test runs both ways and compares."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from typing import Any

import graphene
import pytest
from graphene.types.resolver import attr_resolver
from graphql import ExecutionContext, ExecutionResult, GraphQLResolveInfo, execute, parse
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.graphql.execution import LeafExecutionContext
from tests.loops import run_apart


class Source:
    """An object whose attributes the default resolvers read."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


class Colour(graphene.Enum):
    RED = 1
    BLUE = 2


class Item(graphene.ObjectType):
    text = graphene.String()
    needed = graphene.String(required=True)
    count = graphene.Int()
    needed_count = graphene.Int(required=True)
    ratio = graphene.Float()
    flag = graphene.Boolean()
    ident = graphene.ID()
    when = graphene.DateTime()
    colour = graphene.Field(Colour)
    tags = graphene.List(graphene.NonNull(graphene.String))
    shouted = graphene.String(times=graphene.Int(default_value=1))
    child = graphene.Field(lambda: Item)

    @staticmethod
    def resolve_shouted(item: Any, info: GraphQLResolveInfo, times: int) -> str:
        return str(getattr(item, "text", "")).upper() * times


def answering(name: str, field: graphene.Field | graphene.List, value: Any) -> graphene.Schema:
    """A schema whose query has one field, ``name``, answering ``value``."""

    def resolve(root: object, info: GraphQLResolveInfo) -> Any:
        return value

    query = type("Query", (graphene.ObjectType,), {name: field, f"resolve_{name}": staticmethod(resolve)})
    return graphene.Schema(query=query)


def schema_of(*items: Any) -> graphene.Schema:
    return answering("items", graphene.List(Item), list(items))


def both(schema: graphene.Schema, query: str, **kwargs: Any) -> tuple[Any, Any]:
    """The query's answer graphql-core's way and the short way, formatted as the API sends them."""
    document = parse(query)
    answers = []
    for way in (ExecutionContext, LeafExecutionContext):
        result = execute(schema.graphql_schema, document, execution_context_class=way, **kwargs)
        if asyncio.iscoroutine(result):
            result = run_apart(result)  # not asyncio.run: a browser test may hold this thread's loop
        assert isinstance(result, ExecutionResult)
        answers.append(result.formatted)
    return answers[0], answers[1]


def same(schema: graphene.Schema, query: str, **kwargs: Any) -> Any:
    usual, short = both(schema, query, **kwargs)
    assert short == usual
    return short


LEAVES = "{ items { text needed count neededCount ratio flag ident when } }"


def test_plain_leaves_answer_as_graphql_core_does_from_objects_and_dicts() -> None:
    when = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    values = {
        "text": "a",
        "needed": "b",
        "count": 3,
        "needed_count": 4,
        "ratio": 0.5,
        "flag": True,
        "ident": 7,
        "when": when,
    }

    answer = same(schema_of(Source(**values), dict(values)), LEAVES)

    expected = {
        "text": "a",
        "needed": "b",
        "count": 3,
        "neededCount": 4,
        "ratio": 0.5,
        "flag": True,
        "ident": "7",
        "when": "2026-12-07T12:00:00+00:00",
    }
    assert answer == {"data": {"items": [expected, expected]}}


def test_a_null_in_a_non_null_field_is_the_same_error_at_the_same_path() -> None:
    answer = same(schema_of(Source(needed=None, needed_count=1), Source(needed="x", needed_count=2)), LEAVES)

    assert answer["data"] == {
        "items": [
            None,
            {
                **dict.fromkeys(("text", "count", "ratio", "flag", "ident", "when")),
                "needed": "x",
                "neededCount": 2,
            },
        ]
    }
    assert [error["path"] for error in answer["errors"]] == [["items", 0, "needed"]]
    assert "Cannot return null for non-nullable field Item.needed." in answer["errors"][0]["message"]


def test_values_a_scalar_refuses_are_the_same_errors() -> None:
    refused = [
        Source(needed="a", needed_count="many"),  # not an integer
        Source(needed="a", needed_count=2**40),  # beyond GraphQL's 32 bits
        Source(needed="a", needed_count=1, ratio=math.inf),
        Source(needed="a", needed_count=1, flag="yes"),
    ]

    answer = same(schema_of(*refused), LEAVES)

    assert len(answer["errors"]) == 4


def test_an_exception_as_the_value_is_raised_as_graphql_core_raises_it() -> None:
    answer = same(schema_of(Source(text=ValueError("no text"), needed="a", needed_count=1)), LEAVES)

    assert answer["errors"][0]["message"] == "no text"
    assert answer["errors"][0]["path"] == ["items", 0, "text"]


def test_aliases_arguments_enums_lists_and_objects_take_the_usual_way_to_the_same_answer() -> None:
    inner = Source(text="in", needed="n", needed_count=0, colour=2)
    outer = Source(text="out", needed="m", needed_count=1, colour=1, tags=["x", "y"], child=inner)
    query = (
        "{ items { first: text again: text shouted(times: 2) colour tags "
        "child { text colour child { text } } } }"
    )

    answer = same(schema_of(outer), query)

    assert answer == {
        "data": {
            "items": [
                {
                    "first": "out",
                    "again": "out",
                    "shouted": "OUTOUT",
                    "colour": "RED",
                    "tags": ["x", "y"],
                    "child": {"text": "in", "colour": "BLUE", "child": None},
                }
            ]
        }
    }


def test_a_field_middleware_sees_every_field_as_graphql_core_shows_them() -> None:
    seen: dict[str, list[str]] = {"usual": [], "short": []}

    def watching(into: list[str]) -> Any:
        def middleware(next_: Any, root: Any, info: GraphQLResolveInfo, **args: Any) -> Any:
            into.append(info.field_name)
            return next_(root, info, **args)

        return middleware

    schema = schema_of(Source(text="a", needed="b", needed_count=1))
    document = parse("{ items { text needed neededCount } }")
    usual = execute(schema.graphql_schema, document, middleware=[watching(seen["usual"])])
    short = execute(
        schema.graphql_schema,
        document,
        middleware=[watching(seen["short"])],
        execution_context_class=LeafExecutionContext,
    )

    assert isinstance(usual, ExecutionResult)
    assert isinstance(short, ExecutionResult)
    assert short.formatted == usual.formatted
    assert seen["short"] == seen["usual"] == ["items", "text", "needed", "neededCount"]


def test_asynchronous_resolvers_beside_plain_leaves_are_awaited_together() -> None:
    class Later(graphene.ObjectType):
        now = graphene.String()
        later = graphene.String(required=True)

        @staticmethod
        async def resolve_later(root: Any, info: GraphQLResolveInfo) -> str:
            await asyncio.sleep(0)
            return "done"

    answer = same(answering("later", graphene.Field(Later), Source(now="now")), "{ later { now later } }")

    assert answer == {"data": {"later": {"now": "now", "later": "done"}}}


def test_two_schemas_with_a_type_of_the_same_name_keep_their_own_fields() -> None:
    class Shouting(graphene.ObjectType):
        class Meta:
            name = "Item"

        text = graphene.String()

        @staticmethod
        def resolve_text(item: Any, info: GraphQLResolveInfo) -> str:
            return "LOUD"

    plain = schema_of(Source(text="plain", needed="n", needed_count=1))
    loud = answering("items", graphene.List(Shouting), [Source(text="plain")])

    assert same(plain, "{ items { text } }") == {"data": {"items": [{"text": "plain"}]}}
    assert same(loud, "{ items { text } }") == {"data": {"items": [{"text": "LOUD"}]}}


class KeyAndAttribute(dict[str, str]):
    """A dict with an attribute of the name of one of its keys."""

    text = "the attribute"


def test_a_types_own_default_resolver_is_its_own() -> None:
    class Attributes(graphene.ObjectType):
        class Meta:
            default_resolver = attr_resolver

        text = graphene.String()

    schema = answering("attributes", graphene.Field(Attributes), KeyAndAttribute(text="the key"))

    answer = same(schema, "{ attributes { text } }")

    assert answer == {"data": {"attributes": {"text": "the attribute"}}}


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.builds(ValueError, st.text(max_size=5)),
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {name: VALUES for name in ("text", "needed", "count", "needed_count", "ratio", "flag", "ident")}
    )
)
def test_any_values_answer_the_same_both_ways(values: dict[str, Any]) -> None:
    same(
        schema_of(Source(**values), dict(values)),
        "{ items { text needed count neededCount ratio flag ident } }",
    )


@pytest.mark.parametrize("source", [Source(), {}], ids=["object", "dict"])
def test_a_missing_attribute_is_the_fields_default_as_graphene_reads_it(source: Any) -> None:
    answer = same(schema_of(source), "{ items { text count } }")

    assert answer == {"data": {"items": [{"text": None, "count": None}]}}


@pytest.mark.parametrize("middleware", [None, []], ids=["none", "an empty list, as graphene-django passes"])
def test_only_the_plain_leaves_take_the_short_way(middleware: list[Any] | None) -> None:
    executed: list[str] = []

    class Counting(LeafExecutionContext):
        def execute_field(self, parent_type: Any, source: Any, field_nodes: Any, path: Any) -> Any:
            executed.append(f"{parent_type.name}.{field_nodes[0].name.value}")
            return super().execute_field(parent_type, source, field_nodes, path)

    items = [
        Source(text="a", needed=None, needed_count=1, colour=1),
        Source(text="b", needed="c", needed_count=2),
    ]
    document = parse("{ items { text needed neededCount colour shouted } }")
    execute(
        schema_of(*items).graphql_schema, document, execution_context_class=Counting, middleware=middleware
    )

    # The list; then the null that fails the first item's non-null field (the item goes null, its other
    # fields are not executed); then the second item's enum and resolver of our own.
    assert executed == ["Query.items", "Item.needed", "Item.colour", "Item.shouted"]
