"""GraphQL's execution with a short way for the plain leaves, which are most of a page's fields.

graphql-core executes every field alike: a path, a ``GraphQLResolveInfo`` of twelve items, the field's
arguments from the document, the resolver, then ``complete_value``'s dispatch on the field's type. A
listing of 100 VMs of eight scalars each is 800 such fields, and most of them are graphene's default
resolver (the attribute of that name) under a scalar type: the value is the attribute, serialized.

``LeafExecutionContext`` answers exactly those fields itself: no argument, graphene's default resolver
(``dict_or_attr_resolver``; not one a type names as its own default), a scalar type (non-null or not),
no field middleware, and a value that is neither null nor refused by the scalar's ``serialize``.
Whatever else (a null, an error, a resolver of our own, an enum, an object) goes the usual way, which
reads the attribute again (graphene's default resolver has no side effect) and fails or completes it as
graphql-core always does: the answer is the same, errors included.

Which fields qualify is decided once per (type, field) of the schema and kept: the schema does not change
while the process runs.
"""

from __future__ import annotations

from asyncio import gather
from functools import partial
from typing import Any

from graphene.types.resolver import dict_or_attr_resolver
from graphql import (
    ExecutionContext,
    FieldNode,
    GraphQLField,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    Undefined,
)
from graphql.execution.execute import get_field_def
from graphql.pyutils import Path

# A field's short way: the attribute (or key) read, its default, the scalar's serialize; None: the usual way.
_Leaf = tuple[str, Any, Any] | None


def _leaf(field: GraphQLField) -> _Leaf:
    """The short way for this field of the schema, or None when it goes the usual way."""
    resolve = field.resolve
    if field.args or not isinstance(resolve, partial) or resolve.keywords:
        return None
    if resolve.func is not dict_or_attr_resolver or len(resolve.args) != 2:
        return None
    kind = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    if not isinstance(kind, GraphQLScalarType):
        return None
    attname, default = resolve.args
    return attname, default, kind.serialize


class LeafExecutionContext(ExecutionContext):
    """graphql-core's execution, plain leaves answered on the short way (see the module)."""

    # Per (type, field name) of the schemas executed: the type object itself, so that two schemas with
    # a type of the same name never share an entry.
    _leaves: dict[tuple[GraphQLObjectType, str], _Leaf] = {}

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        fields: dict[str, list[FieldNode]],
    ) -> Any:
        # A field middleware sees every field (graphene-django passes its list, empty by default).
        if self.middleware_manager is not None and self.middleware_manager.middlewares:
            return super().execute_fields(parent_type, source_value, path, fields)
        results: dict[str, Any] = {}
        awaitable: list[str] = []
        is_dict = isinstance(source_value, dict)
        for response_name, field_nodes in fields.items():
            leaf = self._leaf_of(parent_type, field_nodes[0])
            if leaf is not None:
                attname, default, serialize = leaf
                value = (
                    source_value.get(attname, default) if is_dict else getattr(source_value, attname, default)
                )
                serialized = _serialized(serialize, value)
                if serialized is not Undefined:
                    results[response_name] = serialized
                    continue
            result = self.execute_field(
                parent_type, source_value, field_nodes, Path(path, response_name, parent_type.name)
            )
            if result is not Undefined:
                results[response_name] = result
                if self.is_awaitable(result):
                    awaitable.append(response_name)
        if not awaitable:
            return results

        async def gathered() -> dict[str, Any]:  # as graphql-core: the awaitable fields side by side
            results.update(zip(awaitable, await gather(*(results[name] for name in awaitable)), strict=True))
            return results

        return gathered()

    def _leaf_of(self, parent_type: GraphQLObjectType, node: FieldNode) -> _Leaf:
        key = (parent_type, node.name.value)
        try:
            return self._leaves[key]
        except KeyError:
            definition = get_field_def(self.schema, parent_type, node)
            leaf = self._leaves[key] = _leaf(definition) if definition is not None else None
            return leaf


def _serialized(serialize: Any, value: Any) -> Any:
    """The value as its scalar serializes it, or Undefined where graphql-core's completion would not simply
    return that: a null or undefined value, an exception as the value, or one the scalar refuses."""
    if value is None or value is Undefined or isinstance(value, Exception):
        return Undefined
    try:
        serialized = serialize(value)
    except Exception:  # the usual way raises it again, located at the field's path
        return Undefined
    return Undefined if serialized is None else serialized
