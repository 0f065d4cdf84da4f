"""Domain errors as GraphQL errors: top-level, with ``extensions.code``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any, ParamSpec, TypeVar

import graphene
from graphene.utils.str_converters import to_camel_case
from graphql import GraphQLError

from orchestrator.errors import (
    FlexPlaneError,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    ValidationFailed,
)

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


# --- mutations: an expected failure is data, ``errors { field message code }`` in the payload -------

# Codes every domain's error enum carries; a domain adds its own (e.g. QUOTA_EXCEEDED).
COMMON_CODES = ("INVALID", "NOT_FOUND", "CONFLICT", "UNAVAILABLE", "UPSTREAM_FAILURE")


def error_code_enum(name: str, *extra: str) -> type[graphene.Enum]:
    """A domain's error-code enum, e.g. ``VirtualMachineErrorCode`` with ``QUOTA_EXCEEDED``."""
    return graphene.Enum(name, [(code, code) for code in dict.fromkeys((*COMMON_CODES, *extra))])


def error_type(name: str, codes: type[graphene.Enum]) -> type[graphene.ObjectType]:
    """The ``<Domain>Error`` object of a domain's mutation payloads."""
    return type(
        name,
        (graphene.ObjectType,),
        {
            "__doc__": "Why a mutation did not happen; `field` names the input at fault, if one is.",
            "field": graphene.String(description="The input field at fault (camelCase), if any."),
            "message": graphene.String(required=True),
            "code": graphene.Field(codes, required=True),
        },
    )


def error_types(domain: str, *extra: str) -> tuple[type[graphene.Enum], type[graphene.ObjectType]]:
    """A domain's error-code enum ``<domain>ErrorCode`` (with its own codes) and its ``<domain>Error``."""
    codes = error_code_enum(f"{domain}ErrorCode", *extra)
    return codes, error_type(f"{domain}Error", codes)


def payload_errors(exc: FlexPlaneError, codes: Collection[str]) -> list[dict[str, Any]]:
    """The payload's ``errors`` for an expected failure; who-may-do-what failures stay top-level.

    ``codes`` are the domain's error codes: one it lacks is reported as UPSTREAM_FAILURE.
    """
    if isinstance(exc, Unauthenticated | PermissionDenied):
        raise to_graphql_error(exc) from exc
    field = to_camel_case(exc.field) if isinstance(exc, ValidationFailed) else None
    code = exc.code if exc.code in codes else "UPSTREAM_FAILURE"
    return [{"field": field, "message": exc.message, "code": code}]
