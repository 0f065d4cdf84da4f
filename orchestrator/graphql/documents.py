"""A request's GraphQL document, parsed once and validated once, and kept for the requests that send it again.

Several parts of a request look at its document: the metrics name its operation, admission asks whether
it is a query, the view refuses one over the token limit, then validates and runs it. Each used to parse
it again. Here it is parsed once, within ``FLEXPLANE_GRAPHQL_MAX_TOKENS`` (so that a huge document costs
no more than the limit), and validated once against the schema and the limits of the settings.

What parsing and validating give depends only on the document's text, the schema and those limits, never
on who sends it or on any state, so a small LRU of recent documents is shared by the process's requests:
clients send the same few documents over and over (the portal's, a script's), and a repeated one skips
both steps. It holds syntax trees and errors, no domain object (docs/architecture.md: state), and two
replicas answer alike. Documents longer than ``CACHED_LENGTH`` characters are prepared for their request
alone, so the cache's memory stays bounded whatever clients send.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from graphql import (
    ASTValidationRule,
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    OperationDefinitionNode,
    OperationType,
    get_operation_ast,
    parse,
    validate,
)

# How many documents are kept, and the longest one kept (characters).
CACHED_DOCUMENTS = 256
CACHED_LENGTH = 8192
# graphene-django's default: validation stops after this many errors.
MAX_VALIDATION_ERRORS = 100


@dataclass(frozen=True)
class Parsed:
    """A document as parsed: its syntax tree, or the error that says why it has none."""

    ast: DocumentNode | None
    error: GraphQLError | None = None

    def operation(self, name: str | None) -> OperationDefinitionNode | None:
        """The operation a request with this ``operationName`` runs (None when it names none there is)."""
        return get_operation_ast(self.ast, name) if self.ast is not None else None

    def is_query(self, name: str | None) -> bool:
        operation = self.operation(name)
        return operation is not None and operation.operation == OperationType.QUERY


def parsed(text: str) -> Parsed:
    """``text`` parsed within the settings' token limit; a document over it has an error saying so."""
    limit = settings.FLEXPLANE_GRAPHQL_MAX_TOKENS
    if len(text) > CACHED_LENGTH:
        return _parse(text, limit)
    return _parse_cached(text, limit)


def validation_errors(
    schema: GraphQLSchema, text: str, document: DocumentNode, rules: Sequence[type[ASTValidationRule]]
) -> tuple[GraphQLError, ...]:
    """Why ``document`` (parsed from ``text``) is not a valid request of ``schema`` under ``rules``.

    ``rules`` are those ``orchestrator.graphql.validation.validation_rules`` builds from the settings: a
    result is kept under the settings they depend on, not under the rule classes, which are made anew
    for each view.
    """
    if len(text) > CACHED_LENGTH:
        return tuple(validate(schema, document, rules, MAX_VALIDATION_ERRORS))
    key = (
        settings.FLEXPLANE_GRAPHQL_MAX_TOKENS,
        settings.FLEXPLANE_GRAPHQL_MAX_DEPTH,
        settings.FLEXPLANE_GRAPHQL_MAX_ALIASES,
        settings.FLEXPLANE_GRAPHQL_INTROSPECTION,
    )
    return _validate_cached(schema, text, key, _Along(document, tuple(rules)))


def _parse(text: str, limit: int) -> Parsed:
    try:
        return Parsed(parse(text, max_tokens=limit))
    except GraphQLSyntaxError as exc:
        if f"more than {limit} tokens" in exc.message:
            return Parsed(None, GraphQLError(f"the query has more than {limit} tokens"))
        return Parsed(None, exc)
    except RecursionError:  # a document nesting deeper than the parser's recursion, within the limit
        return Parsed(None, GraphQLError("the query nests too deeply"))


@functools.lru_cache(maxsize=CACHED_DOCUMENTS)
def _parse_cached(text: str, limit: int) -> Parsed:
    return _parse(text, limit)


class _Along:
    """The document and rules to validate with: passed through the cache, not part of its key (the text
    and the settings in the key determine them)."""

    def __init__(self, document: DocumentNode, rules: tuple[type[ASTValidationRule], ...]) -> None:
        self.document = document
        self.rules = rules

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Along)


@functools.lru_cache(maxsize=CACHED_DOCUMENTS)
def _validate_cached(
    schema: GraphQLSchema, text: str, key: tuple[object, ...], along: _Along
) -> tuple[GraphQLError, ...]:
    return tuple(validate(schema, along.document, along.rules, MAX_VALIDATION_ERRORS))


def clear() -> None:
    """Forget every kept document (tests that change the limits' settings)."""
    _parse_cached.cache_clear()
    _validate_cached.cache_clear()
