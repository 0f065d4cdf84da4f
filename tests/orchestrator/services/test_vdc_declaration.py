"""A VDC is declared once, as the catalog's kinds are (``orchestrator.models.vdcs``): every field, its quota's
included, is checked here in every place it shows up, so none drifts from its declaration.

- the GraphQL inputs (made from it): ``VdcInput``, ``VdcUpdateInput`` and the quota's ``VdcQuotaInput``;
- the admin form (made from it): labels, help, limits, required;
- the stored spec: each field under its key, the quota nested, the keys as they always were;
- the service's checks (``services.vdcs.definitions``): the limits and required inputs it enforces.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from graphene.utils.str_converters import to_camel_case
from graphql import GraphQLInputObjectType, GraphQLNonNull, get_nullable_type

from orchestrator.errors import ValidationFailed
from orchestrator.graphql.schema import schema
from orchestrator.models import Vdc
from orchestrator.models.specs import Input
from orchestrator.models.vdcs import QUOTA, VDC_INPUTS
from orchestrator.services.vdcs import definitions
from portal.admin.forms import VdcForm
from tests.orchestrator.fakekube import context_on, seeded

TOP = [pytest.param(i, id=i.name) for i in VDC_INPUTS.inputs if not i.group]
LIMITS = [pytest.param(i, id=i.name) for i in VDC_INPUTS.members(QUOTA.name)]
# The form's fields: the VDC's but for its allow-lists (checkboxes of the catalog's names, read live), its
# organization (the page's) and the snapshots each VM may have (the API's).
NOT_IN_FORM = (
    "zones",
    "compute_profiles",
    "storage_profiles",
    "images",
    "organization",
    "quota_snapshots_per_vm",
)
IN_FORM = [i for i in VDC_INPUTS.inputs if i.name not in NOT_IN_FORM]
FORM = [pytest.param(i, id=i.name) for i in IN_FORM]
# The keys a VDC is stored under (nested ones dotted), in the order they are written.
STORED = (
    "id name description zones computeProfiles storageProfiles images quota.vcpus quota.memoryMib "
    "quota.diskGb quota.vms quota.networks quota.publicIps quota.snapshotsPerVm organization"
)
LIMITS_VALID: dict[str, Any] = {"vcpus": 1, "memory_mib": 1, "disk_gb": 1, "vms": 1}
VALID: dict[str, Any] = {"id": "probe", "quota": LIMITS_VALID}


def graphql_input(name: str) -> GraphQLInputObjectType:
    found = schema.graphql_schema.get_type(name)
    assert isinstance(found, GraphQLInputObjectType), name
    return found


def test_the_inputs_name_each_declared_field_and_the_quota_as_one_object() -> None:
    top = [to_camel_case(name) for name in VDC_INPUTS.names]
    assert list(graphql_input("VdcInput").fields) == top
    assert list(graphql_input("VdcUpdateInput").fields) == [n for n in top if n not in ("id", "organization")]
    assert list(graphql_input("VdcQuotaInput").fields) == [
        to_camel_case(i.name) for i in definitions.QUOTA_INPUTS
    ]
    assert VDC_INPUTS.names == definitions.FIELDS


@pytest.mark.parametrize("declared", TOP)
def test_the_graphql_inputs_follow_the_declaration(declared: Input) -> None:
    field = graphql_input("VdcInput").fields[to_camel_case(declared.name)]
    assert isinstance(field.type, GraphQLNonNull) is declared.required
    assert field.description == (declared.description or None)
    if declared.key:
        assert to_camel_case(declared.name) not in graphql_input("VdcUpdateInput").fields
        return
    update = graphql_input("VdcUpdateInput").fields[to_camel_case(declared.name)]
    assert not isinstance(update.type, GraphQLNonNull)
    words = declared.api_update if declared.api_update is not None else declared.description
    assert update.description == (words or None)


def test_the_quota_is_one_input_object_a_create_needs() -> None:
    create, update = (
        graphql_input("VdcInput").fields["quota"],
        graphql_input("VdcUpdateInput").fields["quota"],
    )
    assert isinstance(create.type, GraphQLNonNull)
    assert not isinstance(update.type, GraphQLNonNull)
    assert (create.description, update.description) == (QUOTA.create, QUOTA.update)
    assert get_nullable_type(create.type) is get_nullable_type(update.type) is graphql_input("VdcQuotaInput")
    assert graphql_input("VdcQuotaInput").description == QUOTA.doc


@pytest.mark.parametrize("declared", LIMITS)
def test_each_limit_of_the_quota_input_follows_the_declaration(declared: Input) -> None:
    field = graphql_input("VdcQuotaInput").fields[to_camel_case(declared.name)]
    assert not isinstance(field.type, GraphQLNonNull)  # which a create needs, the service says
    assert field.description == (declared.description or None)


@pytest.mark.parametrize("declared", FORM)
def test_the_admin_form_follows_the_declaration(declared: Input) -> None:
    field = VdcForm.base_fields[declared.name]
    assert (field.label, field.required, field.help_text) == (
        declared.label,
        declared.required,
        declared.help_text,
    )
    if declared.type is int:
        assert isinstance(field, forms.IntegerField)
        assert (field.min_value, field.max_value) == (declared.low, declared.high)
    else:
        assert isinstance(field, forms.CharField)
        assert field.max_length == declared.max_length


def test_the_admin_form_has_no_field_the_declaration_does_not() -> None:
    assert list(VdcForm.base_fields) == [i.name for i in IN_FORM]
    assert [VdcForm.base_fields[name].label for name in ("quota_vcpus", "quota_networks")] == [
        "vCPUs quota",
        "Network quota",
    ]


def keys(spec: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in spec.items():
        out += keys(value, f"{prefix}{key}.") if isinstance(value, dict) else [prefix + key]
    return out


def test_the_stored_spec_follows_the_declaration_and_reads_back() -> None:
    ctx = context_on(seeded(), "ADMIN")
    made = definitions.validate(ctx, {**VALID, "organization": "acme"}, None)
    spec = made.to_spec()
    assert keys(spec) == STORED.split()
    again = Vdc.from_spec(json.loads(json.dumps(spec)))
    assert again == made
    assert again.to_spec() == spec
    assert definitions.validate(ctx, definitions.values_of(made), made) == made


def test_a_vdc_of_the_platforms_own_is_stored_without_an_organization() -> None:
    made = definitions.validate(context_on(seeded(), "ADMIN"), VALID, None)
    assert "organization" not in made.to_spec()
    assert (made.quota_networks, made.quota_public_ips, made.snapshots_per_vm) == (10, 4, 10)


def refused(values: dict[str, Any]) -> ValidationFailed | None:
    try:
        definitions.validate(context_on(seeded(), "ADMIN"), values, None)
    except ValidationFailed as exc:
        return exc
    return None


@pytest.mark.parametrize("declared", LIMITS)
def test_the_service_enforces_each_limit_as_declared(declared: Input) -> None:
    name, low, high = declared.name, declared.low, declared.high
    assert low is not None
    assert high is not None
    for value in (int(low), int(high)):
        assert refused({**VALID, "quota": {**LIMITS_VALID, name: value}}) is None
    over = refused({**VALID, "quota": {**LIMITS_VALID, name: int(high) + 1}})
    assert over is not None
    assert over.field == f"quota.{name}"
    assert f"must be between {int(low)} and {int(high)}{declared.unit}, not {int(high) + 1}" in str(over)
    if declared.required:
        missing = refused({**VALID, "quota": {k: v for k, v in LIMITS_VALID.items() if k != name}})
        assert missing is not None
        assert missing.field == f"quota.{name}"
    else:
        assert refused({**VALID, "quota": {**LIMITS_VALID, name: None}}) is None  # its default


@pytest.mark.parametrize(
    "declared",
    [pytest.param(i, id=i.name) for i in VDC_INPUTS.inputs if not i.group and i.max_length is not None],
)
def test_the_service_enforces_each_length_as_declared(declared: Input) -> None:
    max_length = declared.max_length
    assert max_length is not None
    long = refused({**VALID, declared.name: "a" * (max_length + 1)})
    assert long is not None
    assert long.field == declared.name
