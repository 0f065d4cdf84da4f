"""Hosts: the Proxmox nodes of each zone, their life (add, change, cordon, drain, remove), and what
the admin sees of each (agent and Proxmox versions, certificate, usage, drain, the images it has cached).

Reading hosts needs USER or ADMIN (what the agent and Proxmox say of a host: ADMIN only); every
mutation needs ADMIN. A mutation's expected failures are data: ``errors { field message code }``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import graphene

from orchestrator.errors import Unavailable
from orchestrator.graphql.core import ADMIN, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.fields import attr, described_enum
from orchestrator.graphql.inputs import input_type
from orchestrator.graphql.partial import report_partial
from orchestrator.models import Host as HostModel
from orchestrator.services import catalog, hosts, image_cache, inventory, mesh
from orchestrator.services.hosts import AgentReport, DrainVm, HostDetails
from orchestrator.services.hosts import HostDrain as HostDrainModel
from orchestrator.services.image_cache import HostImage as HostImageModel
from orchestrator.services.image_cache import host_images
from orchestrator.services.inventory import HostStatus

HostErrorCode, HostError = error_types("Host")


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

    resolve_last_error = attr("last_error", blank_is_null=True)


class HostUpdate(graphene.ObjectType):
    """The agent's last self-update."""

    result = graphene.String(required=True, description="none, updated, refused, rolled-back or failed.")
    from_version = graphene.String(description="The version it ran before.")
    to_version = graphene.String(description="The version it tried.")
    message = graphene.String(description="What happened, in words.")
    at = graphene.DateTime(description="When (null: never).")

    resolve_from_version = attr("from_version", blank_is_null=True)
    resolve_to_version = attr("to_version", blank_is_null=True)
    resolve_message = attr("message", blank_is_null=True)


HostDrainState = described_enum(
    "HostDrainState",
    {
        "RUNNING": (hosts.RUNNING, "Moving the host's VMs away, one after another."),
        "DONE": (hosts.DONE, "Every VM moved: the host is empty."),
        "INCOMPLETE": (
            hosts.INCOMPLETE,
            "It ended; some VMs could not move (each says why): drainHost tries them again.",
        ),
        "FAILED": (hosts.FAILED, "The drain itself stopped (`message` says why); drainHost resumes it."),
        "INTERRUPTED": (hosts.INTERRUPTED, "The replica running it stopped; drainHost resumes it."),
    },
)

HostDrainVmState = described_enum(
    "HostDrainVmState",
    {
        "PENDING": (hosts.PENDING, "Still to move."),
        "MIGRATING": (hosts.MIGRATING, "Proxmox is migrating it (follow `taskId`)."),
        "MOVED": (hosts.MOVED, "It runs on `target` now."),
        "FAILED": (hosts.VM_FAILED, "It could not move; `reason` says why."),
        "GONE": (hosts.GONE, "It was deleted while the drain ran."),
    },
)


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

    resolve_state = attr("status")
    resolve_message = attr("message", blank_is_null=True)

    @staticmethod
    def resolve_virtual_machines(
        drain: HostDrainModel, info: graphene.ResolveInfo
    ) -> list[tuple[HostDrainModel, DrainVm]]:
        return [(drain, vm) for vm in drain.vms]


HostImageState = described_enum(
    "HostImageState",
    {
        "CACHED": (image_cache.CACHED, "Its template is ready: a VM is cloned from it without a download."),
        "IMPORTING": (image_cache.IMPORTING, "The host's agent is importing it into Proxmox."),
        "MISSING": (
            image_cache.MISSING,
            "Not there: being downloaded, failed, or not asked for yet (the host's next create of it, or "
            "publishing the image again, starts it).",
        ),
        "UNKNOWN": (image_cache.UNKNOWN, "The host's zone did not answer."),
    },
    doc="Whether a host holds an image's template, from which its VMs are cloned.",
)


class HostImage(graphene.ObjectType):
    """An image a VDC offers in the host's zone, on one storage its zone's storage profiles name."""

    image = graphene.String(required=True)
    storage = graphene.String(required=True, description="The Proxmox storage of the template.")
    state = graphene.Field(HostImageState, required=True)


def _host_status(info: graphene.ResolveInfo, root: HostStatus | HostModel) -> HostStatus:
    if isinstance(root, HostStatus):
        return root
    statuses = (
        s for z in inventory.zone_statuses(flexplane(info)) for s in z.hosts if s.host.key == root.key
    )
    return next(statuses, HostStatus(root, False))


def _host(root: HostStatus | HostModel) -> HostModel:
    return root.host if isinstance(root, HostStatus) else root


def _details(info: graphene.ResolveInfo, root: HostStatus | HostModel) -> HostDetails | None:
    """The host as the admin sees it (read once per request for every host); None for others."""
    return hosts.details_of(flexplane(info), _host(root))


def _report_host(info: graphene.ResolveInfo, problem: Unavailable) -> None:
    """The host's data is partial: one UNAVAILABLE error at the host's path, however many fields miss."""
    path = info.path.prev.as_list() if info.path.prev is not None else info.path.as_list()
    partial = info.context.partial
    if not any(where == path and problem in problems for where, problems in partial):
        partial.append((path, [problem]))


def _agent(info: graphene.ResolveInfo, root: HostStatus | HostModel) -> AgentReport | None:
    details = _details(info, root)
    if details is None:
        return None
    if details.agent is None and details.agent_problem is not None:
        _report_host(info, details.agent_problem)
    return details.agent


def _from_agent(read: Callable[[AgentReport], Any]) -> Callable[[HostStatus | HostModel, Any], Any]:
    """A resolver of a field the host's agent reports (None when it is unknown)."""

    @domain_errors
    def resolve(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> Any:
        agent = _agent(info, root)
        return read(agent) if agent else None

    return resolve


def _from_peer(read: Callable[[mesh.MeshPeer], Any]) -> Callable[[HostStatus | HostModel, Any], Any]:
    """A resolver of a field of the host's peer on the mesh (None when it has none)."""

    @domain_errors
    def resolve(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> Any:
        host = _host(root)
        peer = mesh.peer_of_host(flexplane(info), host.zone, host.node)
        return read(peer) if peer else None

    return resolve


_ADMIN_FIELD = "ADMIN only: null for others"
_FROM_AGENT = f"{_ADMIN_FIELD}, and when the agent does not answer (an UNAVAILABLE error names the host)."


class Host(graphene.ObjectType):
    """A Proxmox node of a zone, with the flex.plane agent running on it."""

    id = graphene.ID(required=True, description="<zone>/<name>.")
    zone = graphene.String(required=True)
    name = graphene.String(required=True, description="The node's name in Proxmox.")
    online = graphene.Boolean(required=True, description="Whether Proxmox reports the node online.")
    cordoned = graphene.Boolean(
        required=True, description="Cordoned hosts take no new VMs; theirs keep running."
    )
    endpoint = graphene.String(description="The agent's address, host:port. ADMIN only: null for others.")
    memory_overcommit = graphene.Float(
        required=True, description="Placement counts the host's memory times this ratio."
    )
    cpu_overcommit = graphene.Float(
        required=True, description="Placement counts the host's CPU threads times this ratio."
    )
    agent_version = graphene.String(
        description=f"The flex.plane agent's version: the release it runs (self-update). {_FROM_AGENT}"
    )
    agent_package_version = graphene.String(
        description="The version of the flexplane-agent Debian package installed on the node, which the "
        f"agent's release runs on; null when the agent does not run from the package. {_FROM_AGENT}"
    )
    proxmox_version = graphene.String(description=f"The node's Proxmox VE version. {_FROM_AGENT}")
    certificate_expires_at = graphene.DateTime(
        description=f"When the agent's certificate expires. {_FROM_AGENT}"
    )
    certificate_renewal = graphene.Field(
        HostCertificateRenewal, description=f"How the agent's renewals went. {_FROM_AGENT}"
    )
    last_update = graphene.Field(HostUpdate, description=f"The agent's last self-update. {_FROM_AGENT}")
    usage = graphene.Field(
        HostUsage,
        description=f"CPU, memory and storage in use, from Proxmox. {_ADMIN_FIELD}, and when Proxmox "
        "does not report the node (offline, or its zone does not answer).",
    )
    drain = graphene.Field(HostDrain, description=f"Its drain, if it is being drained. {_ADMIN_FIELD}.")
    mesh_address = graphene.String(
        description=f"The node's address on the WireGuard mesh the orchestrator reaches it over. "
        f"{_ADMIN_FIELD}, and when the platform runs no mesh."
    )
    mesh_last_handshake = graphene.DateTime(
        description=f"When the mesh's hub last shook hands with the node (null: never). {_ADMIN_FIELD}."
    )
    image_cache = graphene.List(
        graphene.NonNull(HostImage),
        description="Every image a VDC offers in the host's zone, on every storage of the zone, and whether "
        "the host has it cached (its template), from one read of each zone's Proxmox whatever the number of "
        f"hosts and images. {_ADMIN_FIELD}.",
    )

    @staticmethod
    def resolve_id(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> str:
        return _host(root).key

    @staticmethod
    def resolve_zone(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> str:
        return _host(root).zone

    @staticmethod
    def resolve_name(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> str:
        return _host(root).node

    @staticmethod
    def resolve_online(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> bool:
        return _host_status(info, root).online

    @staticmethod
    def resolve_cordoned(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> bool:
        return _host(root).cordoned

    @staticmethod
    def resolve_endpoint(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> str | None:
        return catalog.host_endpoint(flexplane(info), _host(root))

    @staticmethod
    def resolve_memory_overcommit(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> float:
        return _host(root).memory_overcommit

    @staticmethod
    def resolve_cpu_overcommit(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> float:
        return _host(root).cpu_overcommit

    resolve_agent_version = staticmethod(_from_agent(lambda agent: agent.version))
    resolve_agent_package_version = staticmethod(_from_agent(lambda agent: agent.package_version or None))
    resolve_proxmox_version = staticmethod(_from_agent(lambda agent: agent.proxmox_version or None))
    resolve_certificate_expires_at = staticmethod(_from_agent(lambda agent: agent.certificate_expires_at))
    resolve_certificate_renewal = staticmethod(_from_agent(lambda agent: agent.renewal))
    resolve_last_update = staticmethod(_from_agent(lambda agent: agent.last_update))

    @staticmethod
    @domain_errors
    def resolve_usage(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> hosts.HostUsage | None:
        details = _details(info, root)
        return details.usage if details else None

    resolve_mesh_address = staticmethod(_from_peer(lambda peer: peer.address))
    resolve_mesh_last_handshake = staticmethod(_from_peer(lambda peer: peer.handshake_at))

    @staticmethod
    @domain_errors
    def resolve_image_cache(
        root: HostStatus | HostModel, info: graphene.ResolveInfo
    ) -> list[HostImageModel] | None:
        ctx = flexplane(info)
        if not ctx.principal.is_admin:
            return None
        return host_images(ctx).get(_host(root).key, [])

    @staticmethod
    @domain_errors
    def resolve_drain(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> HostDrainModel | None:
        details = _details(info, root)
        return details.drain if details else None


# ----------------------------------------------------------------------------------------- inputs

_HOST_NAME = "The host's name (its Proxmox node)."


HostInput = input_type("HostInput", hosts.HOST_INPUTS)
HostUpdateInput = input_type("HostUpdateInput", hosts.HOST_INPUTS, update=True)


# -------------------------------------------------------------------------------------- mutations


class HostArguments:
    """The arguments naming a host."""

    zone = graphene.String(required=True)
    host = graphene.String(required=True, description=_HOST_NAME)


class HostMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(ADMIN, HostError, "host")
    host = graphene.Field(Host)


class CreateHost(HostMutation):
    class Meta:
        service = hosts.add_host
        description = "Add a host (a Proxmox node running the agent) to a zone."

    class Arguments:
        input = HostInput(required=True)


class UpdateHost(HostMutation):
    class Meta:
        service = catalog.update_host
        description = "Change a host: cordon it, move its agent, set its overcommit."

    class Arguments(HostArguments):
        input = HostUpdateInput(required=True)


class CordonHost(HostMutation):
    class Meta:
        service = hosts.cordon_host
        description = "Keep new VMs off a host; the VMs on it keep running."

    Arguments = HostArguments


class UncordonHost(HostMutation):
    class Meta:
        service = hosts.uncordon_host
        description = "Let placement use a host again; refused (CONFLICT) while it is being drained."

    Arguments = HostArguments


class DrainHost(ServiceMutation):
    class Meta:
        role, service, result, error = ADMIN, hosts.drain_host, "drain", HostError
        description = (
            "Cordon a host and move its VMs to the hosts placement picks, one after another, in the "
            "background; follow it with hostDrain. Calling it again is safe: a running drain is returned "
            "as it is, any other resumes with the VMs on the host now."
        )

    Arguments = HostArguments

    drain = graphene.Field(HostDrain, description="The drain as it starts (or runs).")


def _remove_host(ctx: Any, zone: str, host: str, force: bool | None) -> HostModel:
    return hosts.remove_host(ctx, zone, host, force=bool(force))


class RemoveHost(HostMutation):
    class Meta:
        service = _remove_host
        description = (
            "Remove a host from flex.plane: its agent is no longer dialled, Proxmox and the node are "
            "untouched. Refused (CONFLICT) while VMs are on it: drain it first. When no host of its zone "
            "answers, refused (UNAVAILABLE) unless `force`."
        )

    class Arguments(HostArguments):
        force = graphene.Boolean(
            description="Remove it even when Proxmox cannot be asked whether VMs are on it (a dead zone, "
            "a host added with a wrong address). Never when Proxmox says VMs are on it. Default false."
        )

    host = graphene.Field(Host, description="The host as it was.")


# ------------------------------------------------------------------------------------------- root


class Query(graphene.ObjectType):
    hosts = graphene.List(
        graphene.NonNull(Host),
        required=True,
        zone=graphene.String(description="Only this zone's hosts."),
        description="Every host, by zone then name. Needs USER or ADMIN (endpoints, and what the agent "
        "and Proxmox say of each host: ADMIN only).",
    )
    host_drain = graphene.Field(
        HostDrain,
        zone=graphene.String(required=True),
        host=graphene.String(required=True, description=_HOST_NAME),
        description="A host's drain, with each VM's progress; null when the host is not being drained "
        f"(an uncordoned or never drained host). {ADMIN.doc}",
    )

    @staticmethod
    @domain_errors
    def resolve_hosts(root: None, info: graphene.ResolveInfo, zone: str | None = None) -> list[HostStatus]:
        statuses = inventory.zone_statuses(flexplane(info))
        return report_partial(
            info, [h for z in statuses for h in z.hosts if zone is None or h.host.zone == zone]
        )

    @staticmethod
    @domain_errors
    def resolve_host_drain(
        root: None, info: graphene.ResolveInfo, zone: str, host: str
    ) -> HostDrainModel | None:
        return hosts.drain_status(flexplane(info), zone, host)


class Mutation(graphene.ObjectType):
    create_host = CreateHost.Field()
    update_host = UpdateHost.Field()
    cordon_host = CordonHost.Field()
    uncordon_host = UncordonHost.Field()
    drain_host = DrainHost.Field()
    remove_host = RemoveHost.Field()
