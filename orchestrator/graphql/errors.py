"""Domain errors as GraphQL errors: top-level, with ``extensions.code``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from graphql import GraphQLError

from orchestrator.errors import FlexPlaneError, Unavailable, ValidationFailed

P = ParamSpec("P")
R = TypeVar("R")


def to_graphql_error(exc: FlexPlaneError, path: list[str | int] | None = None) -> GraphQLError:
    extensions: dict[str, Any] = {"code": exc.code}
    if isinstance(exc, ValidationFailed):
        extensions["field"] = exc.field
    if isinstance(exc, Unavailable):
        extensions["zone"] = exc.where
    return GraphQLError(exc.message, path=path, extensions=extensions, original_error=exc)


def domain_errors(resolver: Callable[P, R]) -> Callable[P, R]:
    """Let a resolver raise domain errors and have them answered as coded GraphQL errors."""

    @functools.wraps(resolver)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return resolver(*args, **kwargs)
        except FlexPlaneError as exc:
            raise to_graphql_error(exc) from exc

    return wrapper
