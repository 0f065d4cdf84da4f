"""GraphQL input types made from a kind's declaration (``orchestrator.models.catalog``, ``models.vdcs``).

A create input has every declared field, non-null where a create needs it; an update input has
the fields that may change (not those that identify the object), all optional. Each field's
description is the declaration's: what it is, its limits, its default (or the API's own words, where
the declaration has them). Inputs given together (a VDC's quota) are one input object of their own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import graphene
from graphene.types.unmountedtype import UnmountedType

from orchestrator.models.specs import Input, Kind

_SCALARS: dict[type, type[graphene.Scalar]] = {
    str: graphene.String,
    int: graphene.Int,
    float: graphene.Float,
    bool: graphene.Boolean,
}


def _field(
    declared: Input,
    required: bool,
    lists: Mapping[str, type[graphene.InputObjectType]],
    *,
    update: bool = False,
    ids: Collection[str] = (),
) -> UnmountedType:
    words = declared.api_update if update and declared.api_update is not None else declared.description
    description = words or None
    if declared.type is list:
        item = lists.get(declared.name, graphene.String)
        return graphene.List(graphene.NonNull(item), required=required, description=description)
    scalar = graphene.ID if declared.name == "id" or declared.name in ids else _SCALARS[declared.type]
    return scalar(required=required, description=description)


def input_type(
    name: str,
    declared: Kind,
    *,
    update: bool = False,
    lists: Mapping[str, type[graphene.InputObjectType]] | None = None,
    groups: Mapping[str, type[graphene.InputObjectType]] | None = None,
    renames: Mapping[str, str] | None = None,
    ids: Collection[str] = (),
    doc: str | None = None,
) -> type[graphene.InputObjectType]:
    """The input object ``name`` of ``declared``'s fields; ``renames`` maps the service's name of a
    field to the API's where they differ (``node`` -> ``host``), ``lists`` gives list fields' items
    (default: strings), ``groups`` the input object of each group (``group_type``), and ``ids`` the
    fields that are IDs besides ``id``."""
    names = dict(renames or {})
    fields: dict[str, UnmountedType] = {}
    for i in declared.inputs:
        if update and i.key:
            continue
        if i.group:
            if i.group not in fields:
                group = declared.group(i.group)
                fields[i.group] = (groups or {})[i.group](
                    required=not update and group.required,
                    description=group.update if update else group.create,
                )
            continue
        fields[names.get(i.name, i.name)] = _field(
            i, not update and i.required, lists or {}, update=update, ids=ids
        )
    if update:
        doc = doc or "The fields to change; those left out keep their value."
    return type(name, (graphene.InputObjectType,), {**fields, "__doc__": doc})


def group_type(name: str, declared: Kind, group: str) -> type[graphene.InputObjectType]:
    """The input object ``name`` of a group's inputs (each optional: a create's checks say which it
    needs), shared by the create and the update inputs."""
    fields = {i.name: _field(i, False, {}) for i in declared.members(group)}
    return type(name, (graphene.InputObjectType,), {**fields, "__doc__": declared.group(group).doc})
