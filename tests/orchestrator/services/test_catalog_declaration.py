"""Each catalog kind is declared once, as a pydantic model (``orchestrator.models.specs``): every field of
every kind is enumerated here and checked in every place it shows up, so none drifts from its declaration.

- the GraphQL create and update inputs (made from the declaration): names, types, non-null, words;
- the portal's forms (made from it): limits, choices, lengths, required;
- the stored spec (made from it): each field under its camelCase key, the keys as they always were,
  and what is stored loads back as it was;
- the service's validation: the limits, choices, lengths and required inputs it enforces.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
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
from orchestrator.models.specs import Spec
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
MODELS: dict[Kind, type[Spec]] = {
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
# The keys each kind's spec is stored under (nested ones dotted), in the order they are written: the
# ConfigMaps already stored must load, and what is written must keep these keys.
STORED = {
    COMPUTE_PROFILE_INPUTS: "name vcpus memoryMib cpuType description",
    STORAGE_PROFILE_INPUTS: "name storages defaultGb minGb maxGb bus format readMbps writeMbps readIops "
    "writeIops description",
    IMAGE_INPUTS: "name osFamily sourceUrl checksum defaultUser minDiskGb description",
    ZONE_INPUTS: "id name description network.type network.bridge network.idFirst network.idLast "
    "network.mtu network.ranges network.dns network.routed external.bridge external.vlan external.cidr "
    "external.gateway external.pool external.nodes",
    HOST_INPUTS: "zone node endpoint cordoned memoryOvercommit cpuOvercommit",
}
# Values that fill every field (a zone's external network included: stored only when it has one).
FULL: dict[Kind, dict[str, Any]] = {
    STORAGE_PROFILE_INPUTS: {"read_mbps": 100, "write_mbps": 100, "read_iops": 1000, "write_iops": 1000},
    ZONE_INPUTS: {
        "network_ranges": "100.64.0.0/10",
        "network_dns": "192.0.2.53, 192.0.2.54",
        "external_bridge": "vmbr1",
        "external_vlan": 7,
        "external_cidr": "203.0.113.0/24",
        "external_gateway": "203.0.113.1",
        "external_pool": "203.0.113.10-203.0.113.20",
        "gateway_nodes": "pve1",
    },
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


def keys(spec: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in spec.items():
        out += (
            keys(value, f"{prefix}{key}.")
            if isinstance(value, dict) and key != "storages"
            else [prefix + key]
        )
    return out


@pytest.mark.parametrize("kind", CATALOG_KINDS, ids=lambda k: k.kind)
def test_the_stored_spec_follows_the_declaration(kind: Kind) -> None:
    ctx = context_on(seeded(), "ADMIN")
    made = SERVICE[kind].validate(ctx, {**kind.defaults, **VALID[kind], **FULL.get(kind, {})})
    spec = made.to_spec()
    assert keys(spec) == STORED[kind].split()
    again = MODELS[kind].from_spec(json.loads(json.dumps(spec)))
    assert again == made
    assert again.to_spec() == spec


def test_a_zone_without_an_external_network_is_stored_as_before_gateways() -> None:
    made = kinds.ZONE_KIND.validate(context_on(seeded(), "ADMIN"), {**ZONE_INPUTS.defaults, "id": "probe"})
    assert "external" not in made.to_spec()
    assert Zone.from_spec({"id": "old"}) == Zone(id="old", name="old")


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


def test_a_list_that_joins_longer_than_its_limit_is_refused_naming_it() -> None:
    ranges = ",".join(f"10.0.{i}.0/24" for i in range(100))
    with pytest.raises(ValidationFailed) as refused_ranges:
        kinds.ZONE_KIND.validate(
            context_on(seeded(), "ADMIN"), {**ZONE_INPUTS.defaults, "id": "probe", "network_ranges": ranges}
        )
    assert refused_ranges.value.field == "network_ranges"
    assert "networkRanges is longer than 1000 characters" in str(refused_ranges.value)


def test_a_spec_stored_beyond_a_limit_still_loads_as_stored() -> None:
    stored: dict[str, Any] = {
        "id": "old",
        "network": {"ranges": [f"10.0.{i}.0/24" for i in range(100)], "mtu": 9216},
    }
    zone = Zone.from_spec(stored)
    assert (zone.name, zone.network_mtu, len(zone.ranges)) == ("old", 9216, 100)
    assert zone.to_spec()["network"]["ranges"] == stored["network"]["ranges"]
