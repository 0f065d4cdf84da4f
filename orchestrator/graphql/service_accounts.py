"""Service accounts: a tenant's credentials for scripts, USER in one VDC, kept in Zitadel.

The key is answered once, by ``createServiceAccount``: a JSON key file (Zitadel's JWT profile key) that a
script exchanges at Zitadel's token endpoint for an access token (RFC 7523), then sends as a bearer token.
Its calls are audited under the service account's own id. ``revokeServiceAccount`` deletes it: its key
gives no next token. When Zitadel does not answer, these answer UNAVAILABLE naming Zitadel.
"""

from __future__ import annotations

import graphene

from orchestrator.graphql.core import Role, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.services import service_accounts
from orchestrator.services.service_accounts import CreatedServiceAccount
from orchestrator.services.service_accounts import ServiceAccount as ServiceAccountModel

SERVICE_ACCOUNT_MANAGER = Role(
    "SERVICE_ACCOUNT_MANAGER",
    "Needs USER and membership of the account's VDC, or ADMIN (another VDC's account or a VDC one is not a "
    "member of is NOT_FOUND).",
)

ServiceAccountErrorCode, ServiceAccountError = error_types("ServiceAccount")


class ServiceAccount(graphene.ObjectType):
    """A service account: never its key."""

    id = graphene.ID(
        required=True, description="Its Zitadel user id: the `sub` of its tokens, in the audit log."
    )
    name = graphene.String(required=True, description="Unique within its VDC.")
    vdc = graphene.ID(required=True, description="The one VDC it acts in, as USER.")
    created = graphene.DateTime()
    expires = graphene.DateTime(description="When its key stops giving tokens.")
    created_by = graphene.String(required=True, description="The id of the user who made it.")


class ServiceAccountMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(SERVICE_ACCOUNT_MANAGER, ServiceAccountError, "service_account")
    service_account = graphene.Field(ServiceAccount)


class CreateServiceAccount(ServiceAccountMutation):
    class Meta:
        service = service_accounts.create_service_account
        description = (
            "Make a service account with USER in this VDC only, and its key, answered this once (`key`). "
            f"A key lives at most {service_accounts.MAX_LIFETIME.days} days; a name already taken in the "
            "VDC is CONFLICT."
        )

    class Arguments:
        vdc = graphene.ID(required=True)
        name = graphene.String(required=True, description="1-40 lowercase letters, digits and '-'.")
        expires_at = graphene.DateTime(required=True, description="When the key stops giving tokens.")

    key = graphene.String(
        description="The key file (JSON: type, keyId, key, userId): keep it secret, it is not shown again."
    )

    @classmethod
    def answer(cls, result: CreatedServiceAccount) -> dict[str, object]:
        return {"service_account": result.account, "key": result.key}


class RevokeServiceAccount(ServiceAccountMutation):
    class Meta:
        service = service_accounts.revoke_service_account
        description = (
            "Delete a service account: its key gives no next token (a token already issued lasts until it "
            "expires)."
        )

    class Arguments:
        id = graphene.ID(required=True)


class Query(graphene.ObjectType):
    service_accounts = graphene.List(
        graphene.NonNull(ServiceAccount),
        required=True,
        vdc=graphene.ID(description="Its VDC; left out: every VDC the caller is a member of (ADMIN: all)."),
        description=f"Service accounts, without their keys. {SERVICE_ACCOUNT_MANAGER.doc}",
    )

    @staticmethod
    @domain_errors
    def resolve_service_accounts(
        root: None, info: graphene.ResolveInfo, vdc: str | None = None
    ) -> list[ServiceAccountModel]:
        return service_accounts.service_accounts(flexplane(info), vdc)


class Mutation(graphene.ObjectType):
    create_service_account = CreateServiceAccount.Field()
    revoke_service_account = RevokeServiceAccount.Field()
