"""Who am I: the caller as the API sees them."""

from __future__ import annotations

import graphene

from orchestrator.auth import Principal
from orchestrator.services.context import Context


class Me(graphene.ObjectType):
    """The authenticated caller."""

    subject = graphene.String(required=True, description="The identity provider's stable id of the caller.")
    name = graphene.String(required=True)
    email = graphene.String(required=True)
    roles = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="Platform roles: ADMIN, USER."
    )
    vdcs = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="The VDCs the caller is a member of."
    )

    @staticmethod
    def resolve_roles(principal: Principal, info: graphene.ResolveInfo) -> list[str]:
        return sorted(r for r in principal.roles if not r.startswith("vdc:"))

    @staticmethod
    def resolve_vdcs(principal: Principal, info: graphene.ResolveInfo) -> list[str]:
        return sorted(principal.vdcs)


class Query(graphene.ObjectType):
    me = graphene.Field(Me, required=True, description="The caller. Any valid token may ask.")

    @staticmethod
    def resolve_me(root: None, info: graphene.ResolveInfo) -> Principal:
        ctx: Context = info.context.flexplane
        return ctx.principal
