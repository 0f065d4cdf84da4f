"""Agent releases (ADMIN): what the channel serves, and the pin that holds every agent at a version.

Pinning a version makes the channel serve it, and lets agents accept it even when it is older
than the one they run (a downgrade, refused otherwise). Unpinning lets the channel serve the
highest published version again.
"""

from __future__ import annotations

import graphene

from orchestrator.graphql.core import ADMIN, ServiceMutation, flexplane
from orchestrator.graphql.errors import domain_errors, error_code_enum, error_type
from orchestrator.services import releases
from orchestrator.services.releases import Channel, PublishedRelease

AgentReleaseErrorCode = error_code_enum("AgentReleaseErrorCode")
AgentReleaseError = error_type("AgentReleaseError", AgentReleaseErrorCode)


class AgentVersionPin(graphene.ObjectType):
    """The version an admin pinned: the channel serves it, and agents accept it even if older."""

    version = graphene.String(required=True)
    pinned_by = graphene.String(required=True, description="The subject of the admin who pinned it.")
    pinned_at = graphene.DateTime(required=True)


class AgentReleaseChannel(graphene.ObjectType):
    """The release channel agents update from."""

    versions = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="Every published version, oldest first."
    )
    pin = graphene.Field(AgentVersionPin, description="Null: the channel serves the highest version.")
    served_version = graphene.String(
        description="The version agents are told to run; null when there is none (e.g. the pin's is gone)."
    )

    @staticmethod
    def resolve_served_version(root: Channel, info: graphene.ResolveInfo) -> str | None:
        served: PublishedRelease | None = root.served
        return served.version if served else None


class PinAgentVersion(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, releases.pin_version, "pin", AgentReleaseError
        description = (
            "Serve `version` to every agent, even those running a newer one (which then downgrade). "
            "It must be published in the channel."
        )

    class Arguments:
        version = graphene.String(required=True, description="A published version, e.g. 1.4.0.")

    pin = graphene.Field(AgentVersionPin)


class UnpinAgentVersion(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, releases.unpin_version, "pin", AgentReleaseError
        description = "Remove the pin: the channel serves the highest published version again."

    pin = graphene.Field(AgentVersionPin, description="The pin removed; null if there was none.")


class Query(graphene.ObjectType):
    agent_release_channel = graphene.Field(
        AgentReleaseChannel,
        required=True,
        description=f"The agents' release channel: versions published and served, the pin. {ADMIN.doc}",
    )

    @staticmethod
    @domain_errors
    def resolve_agent_release_channel(root: None, info: graphene.ResolveInfo) -> Channel:
        return releases.channel(flexplane(info))


class Mutation(graphene.ObjectType):
    pin_agent_version = PinAgentVersion.Field()
    unpin_agent_version = UnpinAgentVersion.Field()
