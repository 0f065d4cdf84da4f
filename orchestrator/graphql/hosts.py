"""Hosts over their life: cordon, drain, removal, and what the admin sees of each host.

Everything here needs ADMIN (a caller without it gets a top-level FORBIDDEN error); a mutation's
expected failures are data: ``errors { field message code }``. The admin's fields of ``Host`` itself
(agent version, certificate, usage, drain) are declared in ``graphql.catalog`` with the type.
"""

from __future__ import annotations

from datetime import datetime

import graphene

from orchestrator.graphql.catalog import ADMIN_ONLY, Host, flexplane, payload
from orchestrator.graphql.errors import domain_errors, error_code_enum, error_type
from orchestrator.services import hosts
from orchestrator.services.hosts import DrainVm
from orchestrator.services.hosts import HostDrain as HostDrainModel

HostErrorCode = error_code_enum("HostErrorCode")
HostError = error_type("HostError", HostErrorCode)


def _errors() -> graphene.List:
    return graphene.List(
        graphene.NonNull(HostError), required=True, description="Why it did not happen; empty on success."
    )


# ------------------------------------------------------------------------------------------ types


class HostCpuUsage(graphene.ObjectType):
    used_fraction = graphene.Float(description="The node's CPU load, 0 to 1 of all its threads.")
    cores = graphene.Int(description="CPU threads of the node.")


class HostByteUsage(graphene.ObjectType):
    used_bytes = graphene.BigInt()
    total_bytes = graphene.BigInt()


class HostUsage(graphene.ObjectType):
    """What the node uses, as Proxmox's /cluster/resources reports it (storage: the node's root disk)."""

    cpu = graphene.Field(HostCpuUsage, required=True)
    memory = graphene.Field(HostByteUsage, required=True)
    storage = graphene.Field(HostByteUsage, required=True)

    @staticmethod
    def resolve_cpu(usage: hosts.HostUsage, info: graphene.ResolveInfo) -> HostCpuUsage:
        return HostCpuUsage(used_fraction=usage.cpu_fraction, cores=usage.cpu_cores)

    @staticmethod
    def resolve_memory(usage: hosts.HostUsage, info: graphene.ResolveInfo) -> HostByteUsage:
        return HostByteUsage(used_bytes=usage.memory_used, total_bytes=usage.memory_total)

    @staticmethod
    def resolve_storage(usage: hosts.HostUsage, info: graphene.ResolveInfo) -> HostByteUsage:
        return HostByteUsage(used_bytes=usage.storage_used, total_bytes=usage.storage_total)


class HostCertificateRenewal(graphene.ObjectType):
    """How the agent's renewal of its certificate went."""

    last_success_at = graphene.DateTime(description="The last renewal that worked (null: none yet).")
    last_error = graphene.String(description="Why the last attempt failed (null when it did not).")
    failures = graphene.Int(required=True, description="Attempts failed in a row.")
    next_attempt_at = graphene.DateTime(description="When the agent tries next (null: not planned).")

    @staticmethod
    def resolve_last_error(renewal: hosts.CertificateRenewal, info: graphene.ResolveInfo) -> str | None:
        return renewal.last_error or None


class HostUpdate(graphene.ObjectType):
    """The agent's last self-update."""

    result = graphene.String(required=True, description="none, updated, refused, rolled-back or failed.")
    from_version = graphene.String(description="The version it ran before.")
    to_version = graphene.String(description="The version it tried.")
    message = graphene.String(description="What happened, in words.")
    at = graphene.DateTime(description="When (null: never).")

    @staticmethod
    def resolve_from_version(update: hosts.UpdateOutcome, info: graphene.ResolveInfo) -> str | None:
        return update.from_version or None

    @staticmethod
    def resolve_to_version(update: hosts.UpdateOutcome, info: graphene.ResolveInfo) -> str | None:
        return update.to_version or None

    @staticmethod
    def resolve_message(update: hosts.UpdateOutcome, info: graphene.ResolveInfo) -> str | None:
        return update.message or None


class HostDrainState(graphene.Enum):
    RUNNING = hosts.RUNNING
    DONE = hosts.DONE
    INCOMPLETE = hosts.INCOMPLETE
    FAILED = hosts.FAILED
    INTERRUPTED = hosts.INTERRUPTED

    @property
    def description(self) -> str:
        return {
            "RUNNING": "Moving the host's VMs away, one after another.",
            "DONE": "Every VM moved: the host is empty.",
            "INCOMPLETE": "It ended; some VMs could not move (each says why): drainHost tries them again.",
            "FAILED": "The drain itself stopped (`message` says why); drainHost resumes it.",
            "INTERRUPTED": "The replica running it stopped; drainHost resumes it.",
        }[self.name]


class HostDrainVmState(graphene.Enum):
    PENDING = hosts.PENDING
    MIGRATING = hosts.MIGRATING
    MOVED = hosts.MOVED
    FAILED = hosts.VM_FAILED
    GONE = hosts.GONE

    @property
    def description(self) -> str:
        return {
            "PENDING": "Still to move.",
            "MIGRATING": "Proxmox is migrating it (follow `taskId`).",
            "MOVED": "It runs on `target` now.",
            "FAILED": "It could not move; `reason` says why.",
            "GONE": "It was deleted while the drain ran.",
        }[self.name]


class HostDrainVm(graphene.ObjectType):
    """One VM of a drain."""

    virtual_machine_id = graphene.ID(required=True, description="<zone>/<vmid>.")
    vmid = graphene.Int(required=True)
    name = graphene.String(required=True)
    state = graphene.Field(HostDrainVmState, required=True)
    target = graphene.String(description="The host it moves or moved to.")
    reason = graphene.String(description="Why it could not move, or a note on how it moved.")
    task_id = graphene.ID(description="Its migration task, to follow with task(id).")
    started_at = graphene.DateTime()
    ended_at = graphene.DateTime()

    @staticmethod
    def resolve_virtual_machine_id(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> str:
        return f"{vm[0].zone}/{vm[1].vmid}"

    @staticmethod
    def resolve_vmid(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> int:
        return vm[1].vmid

    @staticmethod
    def resolve_name(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> str:
        return vm[1].name

    @staticmethod
    def resolve_state(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> str:
        return vm[1].state

    @staticmethod
    def resolve_target(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> str | None:
        return vm[1].target

    @staticmethod
    def resolve_reason(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> str | None:
        return vm[1].reason or None

    @staticmethod
    def resolve_task_id(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> str | None:
        return vm[0].task_id(vm[1])

    @staticmethod
    def resolve_started_at(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> datetime | None:
        return vm[1].started_at

    @staticmethod
    def resolve_ended_at(vm: tuple[HostDrainModel, DrainVm], info: graphene.ResolveInfo) -> datetime | None:
        return vm[1].ended_at


class HostDrain(graphene.ObjectType):
    """A host's drain: its VMs moving to other hosts, as recorded in the management cluster.

    Not a Task: each VM's migration is a Proxmox task of its own (`virtualMachines.taskId`).
    """

    zone = graphene.String(required=True)
    host = graphene.String(required=True, description="The host being drained (its Proxmox node).")
    state = graphene.Field(HostDrainState, required=True)
    message = graphene.String(description="How it ended, or why it stopped.")
    requested_by = graphene.String(required=True)
    started_at = graphene.DateTime(required=True)
    updated_at = graphene.DateTime(required=True, description="Its last write (a running drain's heartbeat).")
    ended_at = graphene.DateTime()
    virtual_machines = graphene.List(graphene.NonNull(HostDrainVm), required=True)

    @staticmethod
    def resolve_host(drain: HostDrainModel, info: graphene.ResolveInfo) -> str:
        return drain.node

    @staticmethod
    def resolve_state(drain: HostDrainModel, info: graphene.ResolveInfo) -> str:
        return drain.status

    @staticmethod
    def resolve_message(drain: HostDrainModel, info: graphene.ResolveInfo) -> str | None:
        return drain.message or None

    @staticmethod
    def resolve_virtual_machines(
        drain: HostDrainModel, info: graphene.ResolveInfo
    ) -> list[tuple[HostDrainModel, DrainVm]]:
        return [(drain, vm) for vm in drain.vms]


# -------------------------------------------------------------------------------------- mutations


class CordonHost(graphene.Mutation):
    class Meta:
        name = "CordonHostPayload"
        description = f"Keep new VMs off a host; the VMs on it keep running. {ADMIN_ONLY}"

    class Arguments:
        zone = graphene.String(required=True)
        host = graphene.String(required=True, description="The host's name (its Proxmox node).")

    host = graphene.Field(Host)
    errors = _errors()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, zone: str, host: str) -> CordonHost:
        return payload(CordonHost, "host", lambda: hosts.cordon_host(flexplane(info), zone, host))


class UncordonHost(graphene.Mutation):
    class Meta:
        name = "UncordonHostPayload"
        description = (
            f"Let placement use a host again; refused (CONFLICT) while it is being drained. {ADMIN_ONLY}"
        )

    class Arguments:
        zone = graphene.String(required=True)
        host = graphene.String(required=True, description="The host's name (its Proxmox node).")

    host = graphene.Field(Host)
    errors = _errors()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, zone: str, host: str) -> UncordonHost:
        return payload(UncordonHost, "host", lambda: hosts.uncordon_host(flexplane(info), zone, host))


class DrainHost(graphene.Mutation):
    class Meta:
        name = "DrainHostPayload"
        description = (
            "Cordon a host and move its VMs to the hosts placement picks, one after another, in the "
            "background; follow it with hostDrain. Calling it again is safe: a running drain is returned "
            f"as it is, any other resumes with the VMs on the host now. {ADMIN_ONLY}"
        )

    class Arguments:
        zone = graphene.String(required=True)
        host = graphene.String(required=True, description="The host's name (its Proxmox node).")

    drain = graphene.Field(HostDrain, description="The drain as it starts (or runs).")
    errors = _errors()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, zone: str, host: str) -> DrainHost:
        return payload(DrainHost, "drain", lambda: hosts.drain_host(flexplane(info), zone, host))


class RemoveHost(graphene.Mutation):
    class Meta:
        name = "RemoveHostPayload"
        description = (
            "Remove a host from flex.plane: its agent is no longer dialled, Proxmox and the node are "
            "untouched. Refused (CONFLICT) while VMs are on it: drain it first. When no host of its zone "
            f"answers, refused (UNAVAILABLE) unless `force`. {ADMIN_ONLY}"
        )

    class Arguments:
        zone = graphene.String(required=True)
        host = graphene.String(required=True, description="The host's name (its Proxmox node).")
        force = graphene.Boolean(
            description="Remove it even when Proxmox cannot be asked whether VMs are on it (a dead zone, "
            "a host added with a wrong address). Never when Proxmox says VMs are on it. Default false."
        )

    host = graphene.Field(Host, description="The host as it was.")
    errors = _errors()

    @staticmethod
    def mutate(
        root: None, info: graphene.ResolveInfo, zone: str, host: str, force: bool | None = None
    ) -> RemoveHost:
        return payload(
            RemoveHost, "host", lambda: hosts.remove_host(flexplane(info), zone, host, force=bool(force))
        )


# ------------------------------------------------------------------------------------------- root


class Query(graphene.ObjectType):
    host_drain = graphene.Field(
        HostDrain,
        zone=graphene.String(required=True),
        host=graphene.String(required=True, description="The host's name (its Proxmox node)."),
        description="A host's drain, with each VM's progress; null when the host is not being drained "
        f"(an uncordoned or never drained host). {ADMIN_ONLY}",
    )

    @staticmethod
    @domain_errors
    def resolve_host_drain(
        root: None, info: graphene.ResolveInfo, zone: str, host: str
    ) -> HostDrainModel | None:
        return hosts.drain_status(flexplane(info), zone, host)


class Mutation(graphene.ObjectType):
    cordon_host = CordonHost.Field()
    uncordon_host = UncordonHost.Field()
    drain_host = DrainHost.Field()
    remove_host = RemoveHost.Field()
