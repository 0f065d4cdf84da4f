"""Agent releases (ADMIN): what the channel serves, the pin that holds every agent at a version, a
staged rollout (canaries first, the rest after a healthy soak, halted by a failed health check), and a
host's agent asked to update now.

Pinning a version makes the channel serve it, and lets agents accept it even when it is older
than the one they run (a downgrade, refused otherwise). Unpinning lets the channel serve the
highest published version again.
"""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.graphql.core import ADMIN, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.hosts import Host
from orchestrator.services import releases, rollouts
from orchestrator.services.releases import Channel, PublishedRelease
from orchestrator.services.rollouts import RolloutStatus

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
        description="The version agents are told to run (during a rollout, those outside its canaries); "
        "null when there is none (e.g. the pin's is gone)."
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
            "It must be published in the channel. It ends any agent rollout."
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


AgentRolloutPhase = graphene.Enum(
    "AgentRolloutPhase",
    [(phase, phase) for phase in rollouts.PHASES],
    description="CANARY: the canaries get the version; SOAKING: they all run it healthy, for the soak "
    "time; ROLLING_OUT: every host gets it; COMPLETE: every host runs it; HALTED: no further host gets "
    "it (a health check failed, or an admin halted it).",
)


def _status_or_rollout(attname: str, default_value: Any, root: RolloutStatus, info: Any, **args: Any) -> Any:
    """A field of the rollout's status (its phase, the hosts updated), else of the rollout as stored."""
    source = root if hasattr(root, attname) else root.rollout
    return getattr(source, attname, default_value)


class AgentRollout(graphene.ObjectType):
    """A staged rollout of an agent version, as stored and as the hosts reported since."""

    class Meta:
        default_resolver = _status_or_rollout

    version = graphene.String(required=True)
    baseline = graphene.String(
        required=True, description="What the other hosts are served meanwhile (empty: nothing)."
    )
    phase = graphene.Field(AgentRolloutPhase, required=True)
    canaries = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="The canary hosts, zone/host."
    )
    canary_percent = graphene.Int(description="The percentage the canaries were picked by, if one was.")
    soak_minutes = graphene.Int(required=True)
    healthy_since = graphene.DateTime(
        description="Since when every canary runs the version (the soak counts from there); null until."
    )
    promotes_at = graphene.DateTime(
        description="When every host gets the version; null until the canaries do."
    )
    updated_hosts = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="The hosts that reported running it."
    )
    failed_host = graphene.String(
        description="Where it halted: the host whose health check failed (null: not halted, or an admin "
        "halted it)."
    )
    message = graphene.String(description="Why it halted; null while it goes on.")
    started_by = graphene.String(required=True)
    started_at = graphene.DateTime(required=True)

    @staticmethod
    def resolve_failed_host(root: RolloutStatus, info: graphene.ResolveInfo) -> str | None:
        halt = root.rollout.halt
        return halt.host or None if halt is not None else None

    @staticmethod
    def resolve_message(root: RolloutStatus, info: graphene.ResolveInfo) -> str | None:
        return root.rollout.halt.message if root.rollout.halt is not None else None


class RolloutMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(ADMIN, AgentReleaseError, "rollout")
    rollout = graphene.Field(AgentRollout)


class StartAgentRollout(RolloutMutation):
    class Meta:
        service = rollouts.start_rollout
        description = (
            "Serve `version` to the canary hosts now, and to every host once each canary has run it "
            "healthy for `soakMinutes`; a failed health check anywhere halts it. Name the canaries or a "
            "percentage of the hosts, not both. The other hosts keep what the channel served them (the "
            "pin, which this removes, or the last rollout's version). CONFLICT while another rollout is "
            "in its canary or soak phase."
        )

    class Arguments:
        version = graphene.String(required=True, description="A published version, e.g. 1.4.0.")
        canary_hosts = graphene.List(
            graphene.NonNull(graphene.String), description="Canary hosts by name, zone/host."
        )
        canary_percent = graphene.Int(description="Or: this percentage of the hosts (1 to 100), rounded up.")
        soak_minutes = graphene.Int(
            description=f"How long the canaries must run it healthy (0 to {rollouts.MAX_SOAK_MINUTES}; "
            f"default {rollouts.DEFAULT_SOAK_MINUTES})."
        )


class HaltAgentRollout(RolloutMutation):
    class Meta:
        service = rollouts.halt_rollout
        description = "Stop the rollout where it is: no further host gets its version."

    class Arguments:
        reason = graphene.String(description="Why, for the rollout's message.")


class ResumeAgentRollout(RolloutMutation):
    class Meta:
        service = rollouts.resume_rollout
        description = (
            "Go on with a halted rollout. The host whose health check failed is excused: its failure "
            "halts it no more, and as a canary it is no longer waited for."
        )


class Query(graphene.ObjectType):
    agent_rollout = graphene.Field(
        AgentRollout, description=f"The agents' staged rollout; null when none was started. {ADMIN.doc}"
    )

    @staticmethod
    @domain_errors
    def resolve_agent_rollout(root: None, info: graphene.ResolveInfo) -> RolloutStatus | None:
        return rollouts.rollout(flexplane(info))

    agent_release_channel = graphene.Field(
        AgentReleaseChannel,
        required=True,
        description=f"The agents' release channel: versions published and served, the pin. {ADMIN.doc}",
    )

    @staticmethod
    @domain_errors
    def resolve_agent_release_channel(root: None, info: graphene.ResolveInfo) -> Channel:
        return rollouts.channel(flexplane(info))


class Mutation(graphene.ObjectType):
    start_agent_rollout = StartAgentRollout.Field()
    halt_agent_rollout = HaltAgentRollout.Field()
    resume_agent_rollout = ResumeAgentRollout.Field()
    pin_agent_version = PinAgentVersion.Field()
    unpin_agent_version = UnpinAgentVersion.Field()
    update_host_now = UpdateHostNow.Field()
