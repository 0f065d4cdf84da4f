"""Agent releases (ADMIN): what the channel serves, the pin that holds every agent at a version, and a
host's agent asked to update now.

Pinning a version makes the channel serve it, and lets agents accept it even when it is older
than the one they run (a downgrade, refused otherwise). Unpinning lets the channel serve the
highest published version again.
"""

from __future__ import annotations

import graphene

from orchestrator.graphql.core import ADMIN, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.hosts import Host
from orchestrator.services import releases
from orchestrator.services.releases import Channel, PublishedRelease

AgentReleaseErrorCode, AgentReleaseError = error_types("AgentRelease")


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


class PinMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(ADMIN, AgentReleaseError, "pin")
    pin = graphene.Field(AgentVersionPin)


class PinAgentVersion(PinMutation):
    class Meta:
        service = releases.pin_version
        description = (
            "Serve `version` to every agent, even those running a newer one (which then downgrade). "
            "It must be published in the channel."
        )

    class Arguments:
        version = graphene.String(required=True, description="A published version, e.g. 1.4.0.")


class UnpinAgentVersion(PinMutation):
    class Meta:
        service = releases.unpin_version
        description = "Remove the pin: the channel serves the highest published version again."

    pin = graphene.Field(AgentVersionPin, description="The pin removed; null if there was none.")


class HostUpdateNow(graphene.ObjectType):
    """What a host's agent did when asked to check the release channel now."""

    host = graphene.Field(Host, required=True)
    outcome = graphene.String(required=True, description="What the check did, in words.")
    offered_version = graphene.String(
        description="The version the channel offers; null when the check did not get that far."
    )
    applying = graphene.Boolean(
        required=True,
        description="Whether that release was installed and is being applied: the agent restarts into "
        "it, and rolls back if it does not answer; the host's lastUpdate says how it went.",
    )
    running_version = graphene.String(required=True, description="The version the agent ran when asked.")


class UpdateHostNow(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, releases.update_host_now, "update", AgentReleaseError
        description = (
            "Have a host's agent check the release channel now, as it does every update interval (the "
            "same rules: signature, downgrade, rollback). CONFLICT when the host does not update itself."
        )

    class Arguments:
        zone = graphene.String(required=True)
        host = graphene.String(required=True, description="The host's name (its Proxmox node).")

    update = graphene.Field(HostUpdateNow)


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
    update_host_now = UpdateHostNow.Field()
