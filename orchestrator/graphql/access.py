"""Access: users, their platform roles and VDC memberships, kept in Zitadel.

ADMIN manages every user and VDC; an ORG_OWNER the users and VDCs of the organizations they own
(anything else is NOT_FOUND, as a missing object). A change takes effect with the user's next token:
tokens already issued keep the roles they carry until they expire. When Zitadel does not answer,
these fields and mutations answer UNAVAILABLE naming Zitadel; everything else keeps working from the
tokens' claims.
"""

from __future__ import annotations

import graphene

from orchestrator.graphql.core import ADMIN, Role, ServiceMutation, flexplane
from orchestrator.graphql.errors import domain_errors, error_code_enum, error_type
from orchestrator.services.access_admin import memberships, users
from orchestrator.services.access_admin.users import UserAccess as UserAccessModel

ACCESS_MANAGER = Role(
    "ACCESS_MANAGER",
    "Needs ADMIN, or ORG_OWNER of the organization of the user and the VDC (others are NOT_FOUND).",
)
TAKES_EFFECT = "It takes effect with the user's next token."

AccessErrorCode = error_code_enum("AccessErrorCode")
AccessError = error_type("AccessError", AccessErrorCode)


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


class GrantVdcMembership(ServiceMutation):
    class Meta:
        role, service, result, error = ACCESS_MANAGER, memberships.grant_vdc_membership, "user", AccessError
        description = f"Make a user a member of a VDC (its role vdc:<id>). {TAKES_EFFECT}"

    class Arguments:
        user = graphene.ID(required=True, description="The user's id.")
        vdc = graphene.ID(required=True)

    user = graphene.Field(UserAccess, description="The user, as Zitadel now holds them.")


class RevokeVdcMembership(ServiceMutation):
    class Meta:
        role, service, result, error = ACCESS_MANAGER, memberships.revoke_vdc_membership, "user", AccessError
        description = f"End a user's membership of a VDC (none: nothing changes). {TAKES_EFFECT}"

    class Arguments:
        user = graphene.ID(required=True, description="The user's id.")
        vdc = graphene.ID(required=True)

    user = graphene.Field(UserAccess, description="The user, as Zitadel now holds them.")


class SetPlatformRoles(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, memberships.set_platform_roles, "user", AccessError
        description = f"Give a user exactly these platform roles (ADMIN, USER, ORG_OWNER). {TAKES_EFFECT}"

    class Arguments:
        user = graphene.ID(required=True, description="The user's id.")
        roles = graphene.List(graphene.NonNull(graphene.String), required=True)

    user = graphene.Field(UserAccess, description="The user, as Zitadel now holds them.")


class Query(graphene.ObjectType):
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
    def resolve_vdc_members(root: None, info: graphene.ResolveInfo, vdc: str) -> list[UserAccessModel]:
        return memberships.vdc_members(flexplane(info), vdc)


class Mutation(graphene.ObjectType):
    grant_vdc_membership = GrantVdcMembership.Field()
    revoke_vdc_membership = RevokeVdcMembership.Field()
    set_platform_roles = SetPlatformRoles.Field()
