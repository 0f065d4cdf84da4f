"""GraphQL input types made from a catalog kind's declaration (``orchestrator.models.catalog``).

A create input has every declared field, non-null where a create needs it; an update input has
the fields that may change (not those that identify the object), all optional. Each field's
description is the declaration's: what it is, its limits, its default.
"""

from __future__ import annotations

from collections.abc import Mapping

import graphene
from graphene.types.unmountedtype import UnmountedType

from orchestrator.models.catalog import Input, Kind

_SCALARS: dict[type, type[graphene.Scalar]] = {
    str: graphene.String,
    int: graphene.Int,
    float: graphene.Float,
    bool: graphene.Boolean,
}


def _field(
    declared: Input, required: bool, lists: Mapping[str, type[graphene.InputObjectType]]
) -> UnmountedType:
    description = declared.description or None
    if declared.type is list:
        item = lists[declared.name]
        return graphene.List(graphene.NonNull(item), required=required, description=description)
    scalar = graphene.ID if declared.name == "id" else _SCALARS[declared.type]
    return scalar(required=required, description=description)


def input_type(
    name: str,
    declared: Kind,
    *,
    update: bool = False,
    lists: Mapping[str, type[graphene.InputObjectType]] | None = None,
    renames: Mapping[str, str] | None = None,
    doc: str | None = None,
) -> type[graphene.InputObjectType]:
    """The input object ``name`` of ``declared``'s fields; ``renames`` maps the service's name of a
    field to the API's where they differ (``node`` -> ``host``), ``lists`` gives list fields' items."""
    names = dict(renames or {})
    fields = {
        names.get(i.name, i.name): _field(i, not update and i.required, lists or {})
        for i in declared.inputs
        if not (update and i.key)
    }
    if update:
        doc = doc or "The fields to change; those left out keep their value."
    return type(name, (graphene.InputObjectType,), {**fields, "__doc__": doc})
