"""Host enrollment: join tokens for new Proxmox nodes (ADMIN).

``createHostJoinToken`` answers the token once, with its expiry and the command to run on the
node; the platform keeps only its hash. ``hostJoinTokens`` lists what is stored, never a secret.
"""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.graphql.core import ADMIN, ServiceMutation, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.fields import attr
from orchestrator.services import enrollment
from orchestrator.services.enrollment import JoinTokenRecord, NewJoinToken

EnrollmentErrorCode, EnrollmentError = error_types("Enrollment")


class HostJoinToken(graphene.ObjectType):
    """A new join token: single use, until it expires. Shown once: only its hash is stored."""

    token = graphene.String(required=True, description="The token to give the node's bootstrap.")
    zone = graphene.String(required=True)
    host = graphene.String(required=True, description="The host's name (its Proxmox node).")
    expires_at = graphene.DateTime(required=True)
    command = graphene.String(
        required=True, description="The command to run on the node, as root, to enroll it."
    )


class StoredHostJoinToken(graphene.ObjectType):
    """A join token as the platform keeps it: no secret, only who it is for and whether it was used."""

    id = graphene.ID(required=True, description="The token's id (its fourth part, not a secret).")
    zone = graphene.String(required=True)
    host = graphene.String(required=True, description="The host's name (its Proxmox node).")
    expires_at = graphene.DateTime(required=True)
    created_by = graphene.String(required=True, description="The subject of the admin who created it.")
    used_at = graphene.DateTime(description="When a node enrolled with it; null while unused.")
    used_by = graphene.String(description="The endpoint of the node that used it.")

    resolve_id = attr("ident")
    resolve_used_by = attr("used_by", blank_is_null=True)


class CreateHostJoinToken(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, enrollment.create_join_token, "join_token", EnrollmentError
        description = (
            "A single-use token that enrolls the host `host` (a Proxmox node) into `zone`, valid for an hour "
            "by default; the answer is the only time it is shown."
        )

    class Arguments:
        zone = graphene.String(required=True, description="An existing zone's id.")
        host = graphene.String(required=True, description="The host's name (its Proxmox node; a DNS label).")

    join_token = graphene.Field(HostJoinToken)

    @classmethod
    def call(cls, info: graphene.ResolveInfo, **args: Any) -> NewJoinToken:
        """The command in the answer points at the orchestrator as this request reached it."""
        return enrollment.create_join_token(
            flexplane(info), args["zone"], args["host"], info.context.request.build_absolute_uri("/")
        )


class Query(graphene.ObjectType):
    host_join_tokens = graphene.List(
        graphene.NonNull(StoredHostJoinToken),
        required=True,
        description=f"Join tokens kept by the platform, unused or recently used or expired. {ADMIN.doc}",
    )

    @staticmethod
    @domain_errors
    def resolve_host_join_tokens(root: None, info: graphene.ResolveInfo) -> list[JoinTokenRecord]:
        return enrollment.list_join_tokens(flexplane(info))


class Mutation(graphene.ObjectType):
    create_host_join_token = CreateHostJoinToken.Field()
