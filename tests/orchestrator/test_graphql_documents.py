"""A request's document is parsed and validated once, and a repeated one not again (unit layer)."""

from __future__ import annotations

from collections.abc import Iterator

import graphene
import pytest
from django.test import override_settings
from graphql import GraphQLError

from orchestrator.graphql import documents
from orchestrator.graphql.validation import validation_rules


class Query(graphene.ObjectType):
    hello = graphene.String()
    nested = graphene.Field(lambda: Query)


class Mutation(graphene.ObjectType):
    noop = graphene.String()


SCHEMA = graphene.Schema(query=Query, mutation=Mutation).graphql_schema


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    documents.clear()
    yield
    documents.clear()


def errors(text: str) -> tuple[GraphQLError, ...]:
    parsed = documents.parsed(text)
    assert parsed.ast is not None, parsed.error
    return documents.validation_errors(SCHEMA, text, parsed.ast, validation_rules())


def test_a_document_sent_again_is_the_same_parse_and_is_not_validated_again() -> None:
    first = documents.parsed("{ hello }")
    assert first.ast is not None
    assert first.error is None
    assert documents.parsed("{ hello }") is first
    assert errors("{ hello }") == ()
    assert errors("{ hello }") == ()
    info = documents._validate_cached.cache_info()
    assert (info.hits, info.misses) == (1, 1)


def test_the_operation_and_whether_it_is_a_query_follow_the_operation_name() -> None:
    parsed = documents.parsed("query A { hello } mutation B { noop }")
    assert parsed.is_query("A")
    assert not parsed.is_query("B")
    assert not parsed.is_query(None)  # two operations, none named: none runs
    assert parsed.operation("C") is None


def test_a_document_that_does_not_parse_says_why_and_is_no_query() -> None:
    parsed = documents.parsed("{ hello ")
    assert parsed.ast is None
    assert parsed.error is not None
    assert "Syntax Error" in parsed.error.message
    assert not parsed.is_query(None)


@override_settings(FLEXPLANE_GRAPHQL_MAX_TOKENS=20)
def test_a_document_over_the_token_limit_is_refused_in_our_words() -> None:
    parsed = documents.parsed("{ " + "hello " * 30 + "}")
    assert parsed.ast is None
    assert parsed.error is not None
    assert parsed.error.message == "the query has more than 20 tokens"


def test_validation_errors_are_kept_under_the_limits_they_were_found_with() -> None:
    deep = "{ " + "nested { " * 11 + "hello" + " }" * 12
    with override_settings(FLEXPLANE_GRAPHQL_MAX_DEPTH=10):
        assert [e.message for e in errors(deep)] == ["the query nests fields more than 10 levels deep"]
    with override_settings(FLEXPLANE_GRAPHQL_MAX_DEPTH=20):
        assert errors(deep) == ()  # not the answer kept for a depth of 10


def test_a_long_document_is_prepared_for_its_request_alone() -> None:
    text = "{ hello }" + " " * documents.CACHED_LENGTH
    assert errors(text) == ()
    assert documents._parse_cached.cache_info().currsize == 0
    assert documents._validate_cached.cache_info().currsize == 0
