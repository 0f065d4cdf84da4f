"""Limits checked before a query runs: the specification's rules, depth, aliases, and (in production) no
introspection.

graphene-django runs only the rules it is given, so the specification's own rules come first: without
them a document naming unknown fields, unknown or cyclic fragments, or nesting introspection without
end would reach execution. They include graphql-core's ``MaxIntrospectionDepthRule``, which bounds the
nesting of introspection lists (``types { fields { type { fields ... } } }``); the depth limit here
therefore leaves introspection to it, as the standard introspection query that GraphiQL and code
generators send is deeper than any query of the schema needs to be.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from graphene.validation import DisableIntrospection
from graphql import (
    ASTValidationRule,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    specified_rules,
)
from graphql.language import SKIP, VisitorAction


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


class _Depths:
    """How deep selection sets nest fields, following fragment spreads, counting at most ``cap + 1``.

    A fragment is measured once however often it is spread, so measuring takes time linear in the
    document. A spread of a fragment being measured (a cycle) or of an unknown one counts nothing:
    ``NoFragmentCyclesRule`` and ``KnownFragmentNamesRule`` report those. Introspection fields
    (``__schema``, ``__type``) count nothing either: ``MaxIntrospectionDepthRule`` bounds them.
    """

    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode], cap: int) -> None:
        self.fragments = fragments
        self.cap = cap
        self.measured: dict[str, int] = {}
        self.measuring: set[str] = set()

    def of(self, selection_set: SelectionSetNode | None) -> int:
        deepest = 0
        for selection in selection_set.selections if selection_set else ():
            if isinstance(selection, FieldNode):
                if selection.name.value.startswith("__"):
                    continue
                depth = 1 + self.of(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                depth = self.fragment(selection.name.value)
            elif isinstance(selection, InlineFragmentNode):
                depth = self.of(selection.selection_set)
            deepest = max(deepest, depth)
            if deepest > self.cap:
                break  # deep enough to refuse: measure no further
        return min(deepest, self.cap + 1)

    def fragment(self, name: str) -> int:
        if name in self.measured:
            return self.measured[name]
        definition = self.fragments.get(name)
        if definition is None or name in self.measuring:
            return 0
        self.measuring.add(name)
        self.measured[name] = self.of(definition.selection_set)
        self.measuring.discard(name)
        return self.measured[name]


def depth_limit_validator(max_depth: int) -> type[ASTValidationRule]:
    """A rule refusing operations whose fields nest more than ``max_depth`` levels deep."""

    class DepthLimit(ASTValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            fragments = {
                definition.name.value: definition
                for definition in context.document.definitions
                if isinstance(definition, FragmentDefinitionNode)
            }
            self.depths = _Depths(fragments, max_depth)

        def enter_operation_definition(self, node: OperationDefinitionNode, *_args: Any) -> VisitorAction:
            if self.depths.of(node.selection_set) > max_depth:
                name = f"operation {node.name.value!r}" if node.name else "the query"
                self.report_error(
                    GraphQLError(f"{name} nests fields more than {max_depth} levels deep", node)
                )
            return SKIP  # the fields were measured above

    return DepthLimit


def validation_rules() -> list[type[ASTValidationRule]]:
    rules: list[type[ASTValidationRule]] = [
        *specified_rules,
        depth_limit_validator(settings.FLEXPLANE_GRAPHQL_MAX_DEPTH),
        alias_limit_validator(settings.FLEXPLANE_GRAPHQL_MAX_ALIASES),
    ]
    if not settings.FLEXPLANE_GRAPHQL_INTROSPECTION:
        rules.append(DisableIntrospection)
    return rules
