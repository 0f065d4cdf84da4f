"""Access: users, their platform roles and VDC memberships, kept in Zitadel.

ADMIN manages every user and VDC; an ORG_OWNER the users and VDCs of the organizations they own
(anything else is NOT_FOUND, as a missing object). A change takes effect with the user's next token:
tokens already issued keep the roles they carry until they expire. When Zitadel does not answer,
these fields and mutations answer UNAVAILABLE naming Zitadel; everything else keeps working from the
tokens' claims.
"""

from __future__ import annotations

import graphene

from orchestrator.graphql.core import ADMIN, Role, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.fields import attr
from orchestrator.graphql.vdcs import VdcResources
from orchestrator.services import organizations
from orchestrator.services.access_admin import memberships, users
from orchestrator.services.access_admin.users import UserAccess as UserAccessModel
from orchestrator.services.organizations import Allowance, AllowanceUsage

ACCESS_MANAGER = Role(
    "ACCESS_MANAGER",
    "Needs ADMIN, or ORG_OWNER of the organization of the user and the VDC (others are NOT_FOUND).",
)
TAKES_EFFECT = "It takes effect with the user's next token."

AccessErrorCode, AccessError = error_types("Access", "QUOTA_EXCEEDED")


class UserAccess(graphene.ObjectType):
    """A user as Zitadel knows them, with their platform roles and the VDCs they are a member of."""

    id = graphene.ID(required=True, description="Zitadel's user id (the `sub` of their tokens).")
    username = graphene.String(required=True)
    name = graphene.String(required=True)
    email = graphene.String(required=True)
    organization = graphene.String(
        required=True, description="The id of the organization the user belongs to."
    )
    roles = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="Platform roles: ADMIN, USER, ORG_OWNER.",
    )
    vdcs = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="The VDCs the user is a member of."
    )


class UserMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(ACCESS_MANAGER, AccessError, "user")
    user = graphene.Field(UserAccess, description="The user, as Zitadel now holds them.")


class MembershipArguments:
    """The arguments naming a user's membership of a VDC."""

    user = graphene.ID(required=True, description="The user's id.")
    vdc = graphene.ID(required=True)


class GrantVdcMembership(UserMutation):
    class Meta:
        service = memberships.grant_vdc_membership
        description = f"Make a user a member of a VDC (its role vdc:<id>). {TAKES_EFFECT}"

    Arguments = MembershipArguments


class RevokeVdcMembership(UserMutation):
    class Meta:
        service = memberships.revoke_vdc_membership
        description = f"End a user's membership of a VDC (none: nothing changes). {TAKES_EFFECT}"

    Arguments = MembershipArguments


class SetPlatformRoles(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, memberships.set_platform_roles, "user", AccessError
        description = (
            "Give a user exactly these platform roles (ADMIN, USER, ORG_OWNER). ORG_OWNER of a user of "
            "another organization than the project's is given within that organization, whether it has an "
            "allowance or not: one without is granted the project first (USER, ORG_OWNER). So an "
            "organization gets its owner before its allowance, or gets the owner back after "
            "deleteOrganizationAllowance took its users' roles; the owner makes VDCs once it has an "
            f"allowance. {TAKES_EFFECT}"
        )

    class Arguments:
        user = graphene.ID(required=True, description="The user's id.")
        roles = graphene.List(graphene.NonNull(graphene.String), required=True)

    user = graphene.Field(UserAccess, description="The user, as Zitadel now holds them.")


class AllowanceQuota(graphene.ObjectType):
    """Totals the quotas of an organization's VDCs may add up to; null: not bounded."""

    vcpus = graphene.Int(required=True)
    memory_mib = graphene.Int(required=True, description="MiB.")
    disk_gb = graphene.Int(required=True, description="GiB.")
    vms = graphene.Int(required=True)
    networks = graphene.Int()
    public_ips = graphene.Int()


class OrganizationAllowance(graphene.ObjectType):
    """What an organization's VDCs may use together; its ORG_OWNERs create VDCs within it."""

    organization = graphene.ID(required=True, description="The organization's id in Zitadel.")
    name = graphene.String(required=True)
    zones = graphene.List(graphene.NonNull(graphene.String), required=True)
    compute_profiles = graphene.List(graphene.NonNull(graphene.String), required=True)
    storage_profiles = graphene.List(graphene.NonNull(graphene.String), required=True)
    images = graphene.List(graphene.NonNull(graphene.String), required=True)
    quota = graphene.Field(AllowanceQuota, required=True)
    vdcs = graphene.List(graphene.NonNull(graphene.String), required=True, description="Its VDCs.")
    allotted = graphene.Field(
        VdcResources,
        required=True,
        description="The sum of its VDCs' quotas: what they take of the allowance.",
    )

    resolve_organization = attr("allowance.organization")
    resolve_name = attr("allowance.name")

    @staticmethod
    def resolve_zones(item: AllowanceUsage, info: graphene.ResolveInfo) -> list[str]:
        return list(item.allowance.zones)

    @staticmethod
    def resolve_compute_profiles(item: AllowanceUsage, info: graphene.ResolveInfo) -> list[str]:
        return list(item.allowance.compute_profiles)

    @staticmethod
    def resolve_storage_profiles(item: AllowanceUsage, info: graphene.ResolveInfo) -> list[str]:
        return list(item.allowance.storage_profiles)

    @staticmethod
    def resolve_images(item: AllowanceUsage, info: graphene.ResolveInfo) -> list[str]:
        return list(item.allowance.images)

    @staticmethod
    def resolve_quota(item: AllowanceUsage, info: graphene.ResolveInfo) -> dict[str, int | None]:
        allowance: Allowance = item.allowance
        return {
            attr: getattr(allowance.quota, attr) if attr in allowance.bounded else None
            for attr in ("vcpus", "memory_mib", "disk_gb", "vms", "networks", "public_ips")
        }


class AllowanceQuotaInput(graphene.InputObjectType):
    vcpus = graphene.Int(required=True)
    memory_mib = graphene.Int(required=True, description="MiB.")
    disk_gb = graphene.Int(required=True, description="GiB.")
    vms = graphene.Int(required=True)
    networks = graphene.Int(description="Left out: not bounded.")
    public_ips = graphene.Int(description="Left out: not bounded.")


class OrganizationAllowanceInput(graphene.InputObjectType):
    zones = graphene.List(graphene.NonNull(graphene.String), description="Zones its VDCs may use.")
    compute_profiles = graphene.List(graphene.NonNull(graphene.String))
    storage_profiles = graphene.List(graphene.NonNull(graphene.String))
    images = graphene.List(graphene.NonNull(graphene.String))
    quota = AllowanceQuotaInput(required=True, description="Totals its VDCs' quotas may add up to.")


class SetOrganizationAllowance(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, organizations.set_allowance, "allowance", AccessError
        description = (
            "Give an organization (of Zitadel) its allowance, or change it; refused below what its VDCs "
            "already have (QUOTA_EXCEEDED naming the resources)."
        )

    class Arguments:
        organization = graphene.ID(required=True)
        input = OrganizationAllowanceInput(required=True)

    allowance = graphene.Field(OrganizationAllowance)


class DeleteOrganizationAllowance(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, organizations.delete_allowance, "organization", AccessError
        description = (
            "Take an organization's allowance away; refused (CONFLICT) while it has VDCs. The project's "
            "grant to the organization goes with it, and with that every role given within it (its owners' "
            "ORG_OWNER too): setPlatformRoles gives an owner back."
        )

    class Arguments:
        organization = graphene.ID(required=True)

    organization = graphene.ID(description="The organization whose allowance was taken away.")

    @classmethod
    def answer(cls, result: Allowance) -> dict[str, str]:
        return {"organization": result.organization}


class Query(graphene.ObjectType):
    organizations = graphene.List(
        graphene.NonNull(OrganizationAllowance),
        required=True,
        description="The organizations with an allowance, and what their VDCs take of it. Needs ADMIN, or "
        "ORG_OWNER (their organizations only).",
    )

    users = graphene.List(
        graphene.NonNull(UserAccess),
        required=True,
        search=graphene.String(required=True, description="Part of a name, user name or email (1-100)."),
        description="Users whose name, user name or email contains the search, with their roles and VDCs. "
        "Needs ADMIN, or ORG_OWNER (the users of their organizations).",
    )
    vdc_members = graphene.List(
        graphene.NonNull(UserAccess),
        required=True,
        vdc=graphene.ID(required=True),
        description="The members of a VDC. Needs ADMIN, or ORG_OWNER of the VDC's organization.",
    )

    @staticmethod
    @domain_errors
    def resolve_users(root: None, info: graphene.ResolveInfo, search: str) -> list[UserAccessModel]:
        return users.search_users(flexplane(info), search)

    @staticmethod
    @domain_errors
    def resolve_organizations(root: None, info: graphene.ResolveInfo) -> list[AllowanceUsage]:
        return organizations.list_allowances(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_vdc_members(root: None, info: graphene.ResolveInfo, vdc: str) -> list[UserAccessModel]:
        return memberships.vdc_members(flexplane(info), vdc)


class Mutation(graphene.ObjectType):
    grant_vdc_membership = GrantVdcMembership.Field()
    revoke_vdc_membership = RevokeVdcMembership.Field()
    set_platform_roles = SetPlatformRoles.Field()
    set_organization_allowance = SetOrganizationAllowance.Field()
    delete_organization_allowance = DeleteOrganizationAllowance.Field()
