"""Small factories the domain modules share, so that a repeated shape is written once.

- ``described_enum``: an enum whose every value carries its description (the schema shows it);
- ``attr``: the resolver of a field read from an attribute of the object, or of one of its parts
  (``attr("allowance.name")``), an empty value answered as null where asked (``blank_is_null``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum as PyEnum
from typing import Any

import graphene


def described_enum(
    name: str, members: Mapping[str, tuple[Any, str]], doc: str | None = None
) -> type[graphene.Enum]:
    """The enum ``name`` of ``members`` (its name -> its value and its description), in their order."""

    def description(member: PyEnum | None) -> str | None:
        return doc if member is None else members[member.name][1]

    values = [(member, value) for member, (value, _) in members.items()]
    enum: type[graphene.Enum] = graphene.Enum(name, values, description=description)
    return enum


def attr(dotted: str, *, blank_is_null: bool = False) -> staticmethod[[Any, graphene.ResolveInfo], Any]:
    """A resolver answering ``root.<dotted>`` (``a.b``: ``root.a.b``); with ``blank_is_null`` an empty
    value ("" or 0 or an empty list) is answered as null."""
    names = dotted.split(".")

    def resolve(root: Any, info: graphene.ResolveInfo) -> Any:
        value = root
        for name in names:
            value = getattr(value, name)
        return (value or None) if blank_is_null else value

    resolver: Callable[[Any, graphene.ResolveInfo], Any] = resolve
    return staticmethod(resolver)
