"""Limits checked before a query runs: depth, aliases, and (in production) no introspection."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from graphene.validation import DisableIntrospection, depth_limit_validator
from graphql import ASTValidationRule, FieldNode, GraphQLError, ValidationContext


def alias_limit_validator(max_aliases: int) -> type[ASTValidationRule]:
    """A rule refusing documents with more than ``max_aliases`` aliased fields (alias batching)."""

    class AliasLimit(ASTValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            self.count = 0

        def enter_field(self, node: FieldNode, *_args: Any) -> None:
            if node.alias is not None:
                self.count += 1
                if self.count == max_aliases + 1:
                    self.report_error(GraphQLError(f"the query uses more than {max_aliases} aliases", node))

    return AliasLimit


def validation_rules() -> list[type[ASTValidationRule]]:
    rules: list[type[ASTValidationRule]] = [
        depth_limit_validator(max_depth=settings.FLEXPLANE_GRAPHQL_MAX_DEPTH),
        alias_limit_validator(settings.FLEXPLANE_GRAPHQL_MAX_ALIASES),
    ]
    if not settings.FLEXPLANE_GRAPHQL_INTROSPECTION:
        rules.append(DisableIntrospection)
    return rules
