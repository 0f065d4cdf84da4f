"""VDCs: what each tenant may use, how much of it, and how much it uses now.

Members see their VDCs (ADMIN: every VDC); another VDC is reported exactly as one that does not
exist. Creating, changing and deleting VDCs needs ADMIN, or ORG_OWNER of the VDC's organization
(within its allowance).
"""

from __future__ import annotations

import graphene

from orchestrator.graphql.core import Role, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.inputs import group_type, input_type
from orchestrator.graphql.partial import report_partial
from orchestrator.models import Usage as UsageModel
from orchestrator.models import Vdc as VdcModel
from orchestrator.models.vdcs import QUOTA, VDC_INPUTS
from orchestrator.services import vdcs

VDC_WRITER = Role(
    "VDC_WRITER",
    "Needs ADMIN, or ORG_OWNER of the VDC's organization (within its allowance; others are NOT_FOUND).",
)

VdcErrorCode, VdcError = error_types("Vdc", "QUOTA_EXCEEDED")


class VdcResources(graphene.ObjectType):
    """Amounts of the resources a quota bounds."""

    vcpus = graphene.Int(required=True, description="Virtual CPUs.")
    memory_mib = graphene.Int(required=True, description="Memory, MiB.")
    disk_gb = graphene.Int(required=True, description="Disk, GiB.")
    vms = graphene.Int(required=True, description="Number of VMs.")
    networks = graphene.Int(required=True, description="Number of networks (the default ones included).")
    public_ips = graphene.Int(required=True, description="Number of public IPs (of its edge gateways).")


class Vdc(graphene.ObjectType):
    """A virtual data center: allowed zones and catalog offerings, quota, and live usage."""

    id = graphene.ID(required=True)
    name = graphene.String(required=True)
    description = graphene.String(required=True)
    zones = graphene.List(graphene.NonNull(graphene.String), required=True, description="Allowed zones.")
    compute_profiles = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="Allowed compute profiles (none if empty).",
    )
    storage_profiles = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="Allowed storage profiles (none if empty).",
    )
    images = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="Allowed images (none if empty)."
    )
    quota = graphene.Field(VdcResources, required=True, description="The most its VMs may use together.")
    snapshots_per_vm = graphene.Int(
        required=True, description="The most snapshots each of its VMs may have (quota.snapshotsPerVm)."
    )
    organization = graphene.String(
        required=True,
        description="The id of the organization (tenant) it belongs to; empty for the platform's.",
    )
    usage = graphene.Field(
        VdcResources,
        required=True,
        description="What its VMs use now, read from Proxmox (one call per zone for all VDCs). A zone that "
        "does not answer is left out, with an UNAVAILABLE error naming it.",
    )

    @staticmethod
    @domain_errors
    def resolve_usage(vdc: VdcModel, info: graphene.ResolveInfo) -> UsageModel:
        return report_partial(info, vdcs.usage(flexplane(info), vdc.id))


# The inputs, made from the VDC's declaration (``models.vdcs``): its quota is one input object.
VdcQuotaInput = group_type("VdcQuotaInput", VDC_INPUTS, QUOTA.name)
VdcInput = input_type("VdcInput", VDC_INPUTS, groups={QUOTA.name: VdcQuotaInput}, ids=("organization",))
VdcUpdateInput = input_type(
    "VdcUpdateInput",
    VDC_INPUTS,
    update=True,
    groups={QUOTA.name: VdcQuotaInput},
    doc="The fields to change; those left out (or null) keep their value. An empty list allows none.",
)


class VdcMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(VDC_WRITER, VdcError, "vdc")
    vdc = graphene.Field(Vdc)


class CreateVdc(VdcMutation):
    class Meta:
        service = vdcs.create_vdc
        description = (
            "Create a VDC and its Proxmox pool fp-<id> in each of its zones: all of them, or nothing."
        )

    class Arguments:
        input = VdcInput(required=True)


class UpdateVdc(VdcMutation):
    class Meta:
        service = vdcs.update_vdc
        description = "Change a VDC: its allow-lists, zones and quota."

    class Arguments:
        id = graphene.ID(required=True)
        input = VdcUpdateInput(required=True)


class DeleteVdc(VdcMutation):
    class Meta:
        service = vdcs.delete_vdc
        description = "Delete a VDC and its pools; refused (CONFLICT) while it has VMs."

    class Arguments:
        id = graphene.ID(required=True)

    vdc = graphene.Field(Vdc, description="The VDC as it was.")


class Query(graphene.ObjectType):
    vdcs = graphene.List(
        graphene.NonNull(Vdc),
        required=True,
        description="The VDCs the caller is a member of (ADMIN: every VDC). Needs USER or ADMIN.",
    )
    vdc = graphene.Field(
        Vdc,
        id=graphene.ID(required=True),
        description="One VDC; NOT_FOUND for one that does not exist or that the caller is not a member of. "
        "Needs USER or ADMIN.",
    )

    @staticmethod
    @domain_errors
    def resolve_vdcs(root: None, info: graphene.ResolveInfo) -> list[VdcModel]:
        return vdcs.visible_vdcs(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_vdc(root: None, info: graphene.ResolveInfo, id: str) -> VdcModel:
        return vdcs.get_vdc(flexplane(info), id)


class Mutation(graphene.ObjectType):
    create_vdc = CreateVdc.Field()
    update_vdc = UpdateVdc.Field()
    delete_vdc = DeleteVdc.Field()
