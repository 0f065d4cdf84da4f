"""Each catalog kind is declared once (``orchestrator.models.catalog``): every field of every kind is
enumerated here and checked in every place it shows up, so that none can drift from its declaration.

- the GraphQL create and update inputs (made from the declaration): names, types, non-null, words;
- the portal's forms (made from it): limits, choices, lengths, required;
- the unmanaged models: a field of the same name and type, of the same length;
- the service's validation: the limits, choices, lengths and required inputs it enforces.
"""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.db import models
from graphene.utils.str_converters import to_camel_case
from graphql import GraphQLInputObjectType, GraphQLList, GraphQLNonNull, GraphQLScalarType, get_nullable_type

from orchestrator.errors import ValidationFailed
from orchestrator.graphql.schema import schema
from orchestrator.models import ComputeProfile, Host, Image, StorageProfile, Zone
from orchestrator.models.catalog import (
    CATALOG_KINDS,
    COMPUTE_PROFILE_INPUTS,
    HOST_INPUTS,
    IMAGE_INPUTS,
    STORAGE_PROFILE_INPUTS,
    ZONE_INPUTS,
    Input,
    Kind,
)
from orchestrator.services.catalog import kinds
from portal.admin.forms import ComputeProfileForm, ImageForm, StorageProfileForm, ZoneForm
from tests.orchestrator.fakekube import context_on, seeded

# Per kind: its GraphQL inputs (create, update), the API's name of a field where it differs, its
# portal form (hosts join by token: none), its model, its service binding, and valid values.
GRAPHQL = {
    COMPUTE_PROFILE_INPUTS: ("ComputeProfileInput", "ComputeProfileUpdateInput"),
    STORAGE_PROFILE_INPUTS: ("StorageProfileInput", "StorageProfileUpdateInput"),
    IMAGE_INPUTS: ("ImageInput", "ImageUpdateInput"),
    ZONE_INPUTS: ("ZoneInput", "ZoneUpdateInput"),
    HOST_INPUTS: ("HostInput", "HostUpdateInput"),
}
API_NAMES = {(HOST_INPUTS.kind, "node"): "host"}
FORMS: dict[Kind, type[forms.Form]] = {
    COMPUTE_PROFILE_INPUTS: ComputeProfileForm,
    STORAGE_PROFILE_INPUTS: StorageProfileForm,
    IMAGE_INPUTS: ImageForm,
    ZONE_INPUTS: ZoneForm,
}
MODELS: dict[Kind, type[models.Model]] = {
    COMPUTE_PROFILE_INPUTS: ComputeProfile,
    STORAGE_PROFILE_INPUTS: StorageProfile,
    IMAGE_INPUTS: Image,
    ZONE_INPUTS: Zone,
    HOST_INPUTS: Host,
}
SERVICE: dict[Kind, kinds.CatalogKind[Any]] = {
    COMPUTE_PROFILE_INPUTS: kinds.COMPUTE_PROFILE_KIND,
    STORAGE_PROFILE_INPUTS: kinds.STORAGE_PROFILE_KIND,
    IMAGE_INPUTS: kinds.IMAGE_KIND,
    ZONE_INPUTS: kinds.ZONE_KIND,
    HOST_INPUTS: kinds.HOST_KIND,
}
VALID: dict[Kind, dict[str, Any]] = {
    COMPUTE_PROFILE_INPUTS: {"name": "probe", "vcpus": 2, "memory_mib": 2048},
    STORAGE_PROFILE_INPUTS: {
        "name": "probe",
        "storages": {"zone-a": "local-lvm"},
        "default_gb": 10,
        "min_gb": 1,
        "max_gb": 65536,
    },
    IMAGE_INPUTS: {
        "name": "probe",
        "os_family": "debian",
        "source_url": "https://images.example/probe.qcow2",
        "checksum": "sha256:" + "0" * 64,
        "default_user": "debian",
        "min_disk_gb": 2,
    },
    ZONE_INPUTS: {"id": "probe"},
    HOST_INPUTS: {"zone": "zone-a", "node": "probe", "endpoint": "192.0.2.1:7443"},
}
SCALARS = {str: ("String", "ID"), int: ("Int",), float: ("Float",), bool: ("Boolean",)}
MODEL_FIELDS = {
    str: (models.CharField, models.TextField),
    int: (models.PositiveIntegerField, models.IntegerField),
    float: (models.FloatField,),
    bool: (models.BooleanField,),
    list: (models.JSONField,),
}

FIELDS = [pytest.param(kind, i, id=f"{kind.kind}.{i.name}") for kind in CATALOG_KINDS for i in kind.inputs]


def api_name(kind: Kind, declared: Input) -> str:
    return to_camel_case(API_NAMES.get((kind.kind, declared.name), declared.name))


def graphql_input(name: str) -> GraphQLInputObjectType:
    found = schema.graphql_schema.get_type(name)
    assert isinstance(found, GraphQLInputObjectType), name
    return found


def test_every_kind_is_declared_and_every_catalog_input_is_made_from_a_declaration() -> None:
    assert set(GRAPHQL) == set(MODELS) == set(SERVICE) == set(VALID) == set(CATALOG_KINDS)
    offerings = {COMPUTE_PROFILE_INPUTS, STORAGE_PROFILE_INPUTS, IMAGE_INPUTS}
    for kind, (create, update) in GRAPHQL.items():
        declared = {api_name(kind, i) for i in kind.inputs}
        # A new profile or image may be allowed in VDCs as it is created (create only, not a field of it).
        extra = {"allowInVdcs"} if kind in offerings else set()
        assert set(graphql_input(create).fields) == declared | extra, create
        assert set(graphql_input(update).fields) == {api_name(kind, i) for i in kind.inputs if not i.key}
        assert SERVICE[kind].declared is kind
    for kind, form in FORMS.items():
        assert set(form.base_fields) == set(kind.names) - {"storages"}, form.__name__


@pytest.mark.parametrize(("kind", "declared"), FIELDS)
def test_the_graphql_inputs_follow_the_declaration(kind: Kind, declared: Input) -> None:
    create, update = (graphql_input(name).fields for name in GRAPHQL[kind])
    field = create[api_name(kind, declared)]
    assert isinstance(field.type, GraphQLNonNull) is declared.required
    assert field.description == (declared.description or None)
    inner = get_nullable_type(field.type)
    if declared.type is list:
        assert isinstance(inner, GraphQLList)
    else:
        assert isinstance(inner, GraphQLScalarType)
        assert inner.name in SCALARS[declared.type]
    if not declared.key:
        assert not isinstance(update[api_name(kind, declared)].type, GraphQLNonNull)


@pytest.mark.parametrize(("kind", "declared"), [p for p in FIELDS if p.values[0] in FORMS])
def test_the_portal_form_follows_the_declaration(kind: Kind, declared: Input) -> None:
    if declared.type is list:
        return  # the storages: one field per zone of the catalog, read live
    field = FORMS[kind].base_fields[declared.name]
    assert field.label == declared.label
    assert field.required is (declared.required or bool(declared.choices))
    if declared.choices:
        assert isinstance(field, forms.ChoiceField)
        assert [value for value, _ in list(field.choices)] == list(declared.choices)  # type: ignore[arg-type]  # django-stubs types choices as anything Django accepts
    elif declared.type in (int, float):
        assert isinstance(field, forms.IntegerField if declared.type is int else forms.FloatField)
        assert (field.min_value, field.max_value) == (declared.low, declared.high)
    elif declared.type is str:
        assert isinstance(field, forms.CharField)
        assert field.max_length == declared.max_length


@pytest.mark.parametrize(("kind", "declared"), FIELDS)
def test_the_model_follows_the_declaration(kind: Kind, declared: Input) -> None:
    field = MODELS[kind]._meta.get_field(declared.name)
    assert isinstance(field, MODEL_FIELDS[declared.type]), type(field)
    if isinstance(field, models.CharField) and declared.choices:
        assert field.max_length is not None
        assert max(len(choice) for choice in declared.choices) <= field.max_length
    elif isinstance(field, models.CharField):
        assert field.max_length == declared.max_length


def companions(kind: Kind, field: str, value: Any) -> dict[str, Any]:
    """Values of the other fields that let ``field`` be ``value`` (the rules between fields)."""
    if kind is ZONE_INPUTS and field == "network_id_first":
        return {"network_id_last": 16_777_215}  # a range's first id is at most its last
    if kind is ZONE_INPUTS and field == "network_id_last":
        return {"network_id_first": 1}
    if kind is not STORAGE_PROFILE_INPUTS or field not in ("min_gb", "max_gb", "default_gb"):
        return {}
    if field == "max_gb":
        return {"min_gb": 1, "default_gb": 1}
    return {"min_gb": value if field == "min_gb" else 1, "default_gb": value, "max_gb": 65536}


def refused(kind: Kind, ctx: Any, field: str, value: Any) -> str | None:
    """The field the service names when ``field`` is ``value``, the rest valid; None if it accepts."""
    values = {**kind.defaults, **VALID[kind], **companions(kind, field, value), field: value}
    try:
        SERVICE[kind].validate(ctx, values)
    except ValidationFailed as exc:
        return exc.field
    return None


@pytest.mark.parametrize(("kind", "declared"), FIELDS)
def test_the_service_enforces_the_declaration(kind: Kind, declared: Input) -> None:
    ctx = context_on(seeded(), "ADMIN")
    name = declared.name
    SERVICE[kind].validate(ctx, {**kind.defaults, **VALID[kind]})  # the valid values are valid
    if declared.low is not None and declared.high is not None:
        step = 1 if declared.type is int else 0.01
        low, high = declared.low, declared.high
        assert refused(kind, ctx, name, declared.type(low)) is None
        assert refused(kind, ctx, name, declared.type(high)) is None
        assert refused(kind, ctx, name, declared.type(low - step)) == name
        assert refused(kind, ctx, name, declared.type(high + step)) == name
    for choice in declared.choices:
        assert refused(kind, ctx, name, choice) is None
    if declared.choices:
        assert refused(kind, ctx, name, "no-such-choice") == name
    if declared.type is str and declared.max_length is not None:
        assert refused(kind, ctx, name, "a" * (declared.max_length + 1)) == name
    if declared.required:
        values = {k: v for k, v in {**kind.defaults, **VALID[kind]}.items() if k != name}
        with pytest.raises(ValidationFailed) as missing:
            SERVICE[kind].validate(ctx, values)
        assert missing.value.field == name
