"""The platform catalog: compute and storage profiles, images, zones and hosts.

Reading needs USER or ADMIN; every mutation needs ADMIN (a caller without it gets a top-level
FORBIDDEN error). A mutation's expected failures are data: ``errors { field message code }``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import graphene

from orchestrator.errors import FlexPlaneError, Unavailable
from orchestrator.graphql.errors import domain_errors, error_code_enum, error_type, payload_errors
from orchestrator.graphql.partial import report_partial
from orchestrator.models import ComputeProfile as ComputeProfileModel
from orchestrator.models import Host as HostModel
from orchestrator.models import Image as ImageModel
from orchestrator.models import StorageProfile as StorageProfileModel
from orchestrator.models import Zone as ZoneModel
from orchestrator.services import catalog, hosts, inventory
from orchestrator.services.context import Context
from orchestrator.services.hosts import AgentReport, HostDetails, HostUsage
from orchestrator.services.hosts import HostDrain as HostDrainModel
from orchestrator.services.inventory import HostStatus, ZoneStatus

P = TypeVar("P", bound=graphene.ObjectType)

CatalogErrorCode = error_code_enum("CatalogErrorCode")
CatalogError = error_type("CatalogError", CatalogErrorCode)

ADMIN_ONLY = "Needs ADMIN."


def flexplane(info: graphene.ResolveInfo) -> Context:
    """The service context of the request being resolved."""
    ctx: Context = info.context.flexplane
    return ctx


def payload(cls: type[P], field: str, call: Callable[[], Any]) -> P:
    """A mutation's payload: ``field`` set to what ``call()`` made, or the failure in ``errors``.

    Authentication and authorization failures are not data: they stay top-level errors.
    """
    try:
        result = call()
    except FlexPlaneError as exc:
        return cls(errors=payload_errors(exc))
    return cls(**{field: result, "errors": []})


def payload_errors_field() -> graphene.List:
    return graphene.List(
        graphene.NonNull(CatalogError), required=True, description="Why it did not happen; empty on success."
    )


# ------------------------------------------------------------------------------------------ types


class ComputeProfile(graphene.ObjectType):
    """A VM size offered by the platform."""

    name = graphene.String(required=True)
    vcpus = graphene.Int(required=True, description="Virtual CPUs.")
    memory_mib = graphene.Int(required=True, description="Memory, MiB.")
    cpu_type = graphene.String(required=True, description="The CPU model QEMU presents, e.g. x86-64-v2-AES.")
    description = graphene.String(required=True)


class ZoneStorage(graphene.ObjectType):
    """The Proxmox storage a storage profile uses in one zone."""

    zone = graphene.String(required=True)
    storage = graphene.String(required=True, description="The Proxmox storage id, e.g. local-lvm.")


class StorageProfile(graphene.ObjectType):
    """Where and how a VM's disk lives."""

    name = graphene.String(required=True)
    storages = graphene.List(
        graphene.NonNull(ZoneStorage), required=True, description="The storage in each zone it is offered in."
    )
    default_gb = graphene.Int(required=True, description="Disk size when none is asked for, GiB.")
    min_gb = graphene.Int(required=True, description="Smallest disk, GiB.")
    max_gb = graphene.Int(required=True, description="Largest disk, GiB.")
    bus = graphene.String(required=True, description="Disk bus: scsi, virtio or sata.")
    format = graphene.String(required=True, description="Disk format: raw or qcow2.")
    read_mbps = graphene.Int(description="Read bandwidth limit, MB/s (null: unlimited).")
    write_mbps = graphene.Int(description="Write bandwidth limit, MB/s (null: unlimited).")
    read_iops = graphene.Int(description="Read IOPS limit (null: unlimited).")
    write_iops = graphene.Int(description="Write IOPS limit (null: unlimited).")
    description = graphene.String(required=True)

    @staticmethod
    def resolve_storages(profile: StorageProfileModel, info: graphene.ResolveInfo) -> list[ZoneStorage]:
        return [ZoneStorage(zone=zone, storage=storage) for zone, storage in sorted(profile.storages.items())]


class Image(graphene.ObjectType):
    """An OS image VMs are made from."""

    name = graphene.String(required=True)
    os_family = graphene.String(
        required=True,
        description="debian, ubuntu, rhel, rocky, alma, fedora, centos, opensuse, windows or other.",
    )
    source_url = graphene.String(required=True, description="Where hosts download it from (http or https).")
    checksum = graphene.String(required=True, description="sha256:<hex> or sha512:<hex>.")
    default_user = graphene.String(required=True, description="The login user cloud-init sets up.")
    min_disk_gb = graphene.Int(required=True, description="The smallest disk it fits on, GiB.")
    description = graphene.String(required=True)


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


_HOSTS = "orchestrator.graphql.hosts"
_ADMIN_FIELD = "ADMIN only: null for others"
_FROM_AGENT = f"{_ADMIN_FIELD}, and when the agent does not answer (an UNAVAILABLE error names the host)."


class Host(graphene.ObjectType):
    """A Proxmox node of a zone, with the flex.plane agent running on it."""

    id = graphene.ID(required=True, description="<zone>/<node>.")
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
    agent_version = graphene.String(description=f"The flex.plane agent's version. {_FROM_AGENT}")
    proxmox_version = graphene.String(description=f"The node's Proxmox VE version. {_FROM_AGENT}")
    certificate_expires_at = graphene.DateTime(
        description=f"When the agent's certificate expires. {_FROM_AGENT}"
    )
    certificate_renewal = graphene.Field(
        f"{_HOSTS}.HostCertificateRenewal", description=f"How the agent's renewals went. {_FROM_AGENT}"
    )
    last_update = graphene.Field(
        f"{_HOSTS}.HostUpdate", description=f"The agent's last self-update. {_FROM_AGENT}"
    )
    usage = graphene.Field(
        f"{_HOSTS}.HostUsage",
        description=f"CPU, memory and storage in use, from Proxmox. {_ADMIN_FIELD}, and when Proxmox "
        "does not report the node (offline, or its zone does not answer).",
    )
    drain = graphene.Field(
        f"{_HOSTS}.HostDrain", description=f"Its drain, if it is being drained. {_ADMIN_FIELD}."
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

    @staticmethod
    @domain_errors
    def resolve_agent_version(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> str | None:
        agent = _agent(info, root)
        return agent.version if agent else None

    @staticmethod
    @domain_errors
    def resolve_proxmox_version(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> str | None:
        agent = _agent(info, root)
        return (agent.proxmox_version or None) if agent else None

    @staticmethod
    @domain_errors
    def resolve_certificate_expires_at(
        root: HostStatus | HostModel, info: graphene.ResolveInfo
    ) -> datetime | None:
        agent = _agent(info, root)
        return agent.certificate_expires_at if agent else None

    @staticmethod
    @domain_errors
    def resolve_certificate_renewal(
        root: HostStatus | HostModel, info: graphene.ResolveInfo
    ) -> hosts.CertificateRenewal | None:
        agent = _agent(info, root)
        return agent.renewal if agent else None

    @staticmethod
    @domain_errors
    def resolve_last_update(
        root: HostStatus | HostModel, info: graphene.ResolveInfo
    ) -> hosts.UpdateOutcome | None:
        agent = _agent(info, root)
        return agent.last_update if agent else None

    @staticmethod
    @domain_errors
    def resolve_usage(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> HostUsage | None:
        details = _details(info, root)
        return details.usage if details else None

    @staticmethod
    @domain_errors
    def resolve_drain(root: HostStatus | HostModel, info: graphene.ResolveInfo) -> HostDrainModel | None:
        details = _details(info, root)
        return details.drain if details else None


def _zone(root: ZoneStatus | ZoneModel) -> ZoneModel:
    return root.zone if isinstance(root, ZoneStatus) else root


class Zone(graphene.ObjectType):
    """A Proxmox cluster that VMs are placed in."""

    id = graphene.ID(required=True)
    name = graphene.String(required=True)
    description = graphene.String(required=True)
    hosts = graphene.List(graphene.NonNull(Host), required=True)

    @staticmethod
    def resolve_id(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> str:
        return _zone(root).id

    @staticmethod
    def resolve_name(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> str:
        return _zone(root).name

    @staticmethod
    def resolve_description(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> str:
        return _zone(root).description

    @staticmethod
    def resolve_hosts(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> list[HostStatus]:
        if isinstance(root, ZoneStatus):
            return root.hosts
        return next((z.hosts for z in inventory.zone_statuses(flexplane(info)) if z.zone.id == root.id), [])


# ----------------------------------------------------------------------------------------- inputs


class ComputeProfileInput(graphene.InputObjectType):
    name = graphene.String(required=True, description="A lowercase name (letters, digits, '-', '.').")
    vcpus = graphene.Int(required=True, description="1 to 512.")
    memory_mib = graphene.Int(required=True, description="128 MiB to 4 TiB, in MiB.")
    cpu_type = graphene.String(description="The QEMU CPU model (default x86-64-v2-AES).")
    description = graphene.String()


class ComputeProfileUpdateInput(graphene.InputObjectType):
    """The fields to change; those left out keep their value."""

    vcpus = graphene.Int()
    memory_mib = graphene.Int()
    cpu_type = graphene.String()
    description = graphene.String()


class ZoneStorageInput(graphene.InputObjectType):
    zone = graphene.String(required=True, description="A zone id.")
    storage = graphene.String(required=True, description="The Proxmox storage id in that zone.")


class StorageProfileInput(graphene.InputObjectType):
    name = graphene.String(required=True, description="A lowercase name (letters, digits, '-', '.').")
    storages = graphene.List(
        graphene.NonNull(ZoneStorageInput), required=True, description="The storage to use in each zone."
    )
    default_gb = graphene.Int(required=True, description="Between minGb and maxGb.")
    min_gb = graphene.Int(required=True)
    max_gb = graphene.Int(required=True, description="Up to 65536.")
    bus = graphene.String(description="scsi (default), virtio or sata.")
    format = graphene.String(description="raw (default) or qcow2.")
    read_mbps = graphene.Int(description="MB/s; null or absent: unlimited.")
    write_mbps = graphene.Int(description="MB/s; null or absent: unlimited.")
    read_iops = graphene.Int(description="Null or absent: unlimited.")
    write_iops = graphene.Int(description="Null or absent: unlimited.")
    description = graphene.String()


class StorageProfileUpdateInput(graphene.InputObjectType):
    """The fields to change; those left out keep their value. A limit set to null is removed."""

    storages = graphene.List(graphene.NonNull(ZoneStorageInput))
    default_gb = graphene.Int()
    min_gb = graphene.Int()
    max_gb = graphene.Int()
    bus = graphene.String()
    format = graphene.String()
    read_mbps = graphene.Int()
    write_mbps = graphene.Int()
    read_iops = graphene.Int()
    write_iops = graphene.Int()
    description = graphene.String()


class ImageInput(graphene.InputObjectType):
    name = graphene.String(required=True, description="A lowercase name (letters, digits, '-', '.').")
    os_family = graphene.String(
        required=True,
        description="debian, ubuntu, rhel, rocky, alma, fedora, centos, opensuse, windows or other.",
    )
    source_url = graphene.String(
        required=True,
        description="http(s) URL; loopback, link-local and private addresses are refused unless allowlisted.",
    )
    checksum = graphene.String(required=True, description="sha256:<hex> or sha512:<hex>.")
    default_user = graphene.String(required=True)
    min_disk_gb = graphene.Int(required=True)
    description = graphene.String()


class ImageUpdateInput(graphene.InputObjectType):
    """The fields to change; those left out keep their value."""

    os_family = graphene.String()
    source_url = graphene.String()
    checksum = graphene.String()
    default_user = graphene.String()
    min_disk_gb = graphene.Int()
    description = graphene.String()


class ZoneInput(graphene.InputObjectType):
    id = graphene.ID(required=True, description="A lowercase slug (letters, digits, '-').")
    name = graphene.String(description="Display name (default: the id).")
    description = graphene.String()


class ZoneUpdateInput(graphene.InputObjectType):
    name = graphene.String()
    description = graphene.String()


class HostInput(graphene.InputObjectType):
    zone = graphene.String(required=True)
    node = graphene.String(required=True, description="The node's name in Proxmox.")
    endpoint = graphene.String(required=True, description="The agent's address, host:port.")
    cordoned = graphene.Boolean(description="Default false.")
    memory_overcommit = graphene.Float(description="0.1 to 8 (default 1.0).")
    cpu_overcommit = graphene.Float(description="0.1 to 64 (default 4.0).")


class HostUpdateInput(graphene.InputObjectType):
    """The fields to change; those left out keep their value."""

    endpoint = graphene.String()
    cordoned = graphene.Boolean()
    memory_overcommit = graphene.Float()
    cpu_overcommit = graphene.Float()


# -------------------------------------------------------------------------------------- mutations


class CreateComputeProfile(graphene.Mutation):
    class Meta:
        name = "CreateComputeProfilePayload"
        description = f"Add a compute profile. {ADMIN_ONLY}"

    class Arguments:
        input = ComputeProfileInput(required=True)

    compute_profile = graphene.Field(ComputeProfile)
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, input: dict[str, Any]) -> CreateComputeProfile:
        return payload(
            CreateComputeProfile,
            "compute_profile",
            lambda: catalog.create_compute_profile(flexplane(info), input),
        )


class UpdateComputeProfile(graphene.Mutation):
    class Meta:
        name = "UpdateComputeProfilePayload"
        description = f"Change a compute profile; VMs already made keep their size. {ADMIN_ONLY}"

    class Arguments:
        name = graphene.String(required=True)
        input = ComputeProfileUpdateInput(required=True)

    compute_profile = graphene.Field(ComputeProfile)
    errors = payload_errors_field()

    @staticmethod
    def mutate(
        root: None, info: graphene.ResolveInfo, name: str, input: dict[str, Any]
    ) -> UpdateComputeProfile:
        return payload(
            UpdateComputeProfile,
            "compute_profile",
            lambda: catalog.update_compute_profile(flexplane(info), name, input),
        )


class DeleteComputeProfile(graphene.Mutation):
    class Meta:
        name = "DeleteComputeProfilePayload"
        description = (
            f"Remove a compute profile from the catalog; VMs made from it keep running. {ADMIN_ONLY}"
        )

    class Arguments:
        name = graphene.String(required=True)

    compute_profile = graphene.Field(ComputeProfile, description="The profile as it was.")
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, name: str) -> DeleteComputeProfile:
        return payload(
            DeleteComputeProfile,
            "compute_profile",
            lambda: catalog.delete_compute_profile(flexplane(info), name),
        )


class CreateStorageProfile(graphene.Mutation):
    class Meta:
        name = "CreateStorageProfilePayload"
        description = f"Add a storage profile. {ADMIN_ONLY}"

    class Arguments:
        input = StorageProfileInput(required=True)

    storage_profile = graphene.Field(StorageProfile)
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, input: dict[str, Any]) -> CreateStorageProfile:
        return payload(
            CreateStorageProfile,
            "storage_profile",
            lambda: catalog.create_storage_profile(flexplane(info), input),
        )


class UpdateStorageProfile(graphene.Mutation):
    class Meta:
        name = "UpdateStorageProfilePayload"
        description = f"Change a storage profile; existing disks are untouched. {ADMIN_ONLY}"

    class Arguments:
        name = graphene.String(required=True)
        input = StorageProfileUpdateInput(required=True)

    storage_profile = graphene.Field(StorageProfile)
    errors = payload_errors_field()

    @staticmethod
    def mutate(
        root: None, info: graphene.ResolveInfo, name: str, input: dict[str, Any]
    ) -> UpdateStorageProfile:
        return payload(
            UpdateStorageProfile,
            "storage_profile",
            lambda: catalog.update_storage_profile(flexplane(info), name, input),
        )


class DeleteStorageProfile(graphene.Mutation):
    class Meta:
        name = "DeleteStorageProfilePayload"
        description = f"Remove a storage profile from the catalog; existing disks are untouched. {ADMIN_ONLY}"

    class Arguments:
        name = graphene.String(required=True)

    storage_profile = graphene.Field(StorageProfile, description="The profile as it was.")
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, name: str) -> DeleteStorageProfile:
        return payload(
            DeleteStorageProfile,
            "storage_profile",
            lambda: catalog.delete_storage_profile(flexplane(info), name),
        )


class CreateImage(graphene.Mutation):
    class Meta:
        name = "CreateImagePayload"
        description = f"Add an image. {ADMIN_ONLY}"

    class Arguments:
        input = ImageInput(required=True)

    image = graphene.Field(Image)
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, input: dict[str, Any]) -> CreateImage:
        return payload(CreateImage, "image", lambda: catalog.create_image(flexplane(info), input))


class UpdateImage(graphene.Mutation):
    class Meta:
        name = "UpdateImagePayload"
        description = f"Change an image. {ADMIN_ONLY}"

    class Arguments:
        name = graphene.String(required=True)
        input = ImageUpdateInput(required=True)

    image = graphene.Field(Image)
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, name: str, input: dict[str, Any]) -> UpdateImage:
        return payload(UpdateImage, "image", lambda: catalog.update_image(flexplane(info), name, input))


class DeleteImage(graphene.Mutation):
    class Meta:
        name = "DeleteImagePayload"
        description = f"Remove an image from the catalog; VMs made from it keep running. {ADMIN_ONLY}"

    class Arguments:
        name = graphene.String(required=True)

    image = graphene.Field(Image, description="The image as it was.")
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, name: str) -> DeleteImage:
        return payload(DeleteImage, "image", lambda: catalog.delete_image(flexplane(info), name))


class CreateZone(graphene.Mutation):
    class Meta:
        name = "CreateZonePayload"
        description = f"Add a zone (a Proxmox cluster); add its hosts next. {ADMIN_ONLY}"

    class Arguments:
        input = ZoneInput(required=True)

    zone = graphene.Field(Zone)
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, input: dict[str, Any]) -> CreateZone:
        return payload(CreateZone, "zone", lambda: catalog.create_zone(flexplane(info), input))


class UpdateZone(graphene.Mutation):
    class Meta:
        name = "UpdateZonePayload"
        description = f"Change a zone's name or description. {ADMIN_ONLY}"

    class Arguments:
        id = graphene.ID(required=True)
        input = ZoneUpdateInput(required=True)

    zone = graphene.Field(Zone)
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, id: str, input: dict[str, Any]) -> UpdateZone:
        return payload(UpdateZone, "zone", lambda: catalog.update_zone(flexplane(info), id, input))


class DeleteZone(graphene.Mutation):
    class Meta:
        name = "DeleteZonePayload"
        description = f"Remove a zone; refused (CONFLICT) while it has hosts or VDCs allow it. {ADMIN_ONLY}"

    class Arguments:
        id = graphene.ID(required=True)

    zone = graphene.Field(Zone, description="The zone as it was.")
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, id: str) -> DeleteZone:
        return payload(DeleteZone, "zone", lambda: catalog.delete_zone(flexplane(info), id))


class CreateHost(graphene.Mutation):
    class Meta:
        name = "CreateHostPayload"
        description = f"Add a host (a Proxmox node running the agent) to a zone. {ADMIN_ONLY}"

    class Arguments:
        input = HostInput(required=True)

    host = graphene.Field(Host)
    errors = payload_errors_field()

    @staticmethod
    def mutate(root: None, info: graphene.ResolveInfo, input: dict[str, Any]) -> CreateHost:
        return payload(CreateHost, "host", lambda: catalog.create_host(flexplane(info), input))


class UpdateHost(graphene.Mutation):
    class Meta:
        name = "UpdateHostPayload"
        description = f"Change a host: cordon it, move its agent, set its overcommit. {ADMIN_ONLY}"

    class Arguments:
        zone = graphene.String(required=True)
        node = graphene.String(required=True)
        input = HostUpdateInput(required=True)

    host = graphene.Field(Host)
    errors = payload_errors_field()

    @staticmethod
    def mutate(
        root: None, info: graphene.ResolveInfo, zone: str, node: str, input: dict[str, Any]
    ) -> UpdateHost:
        return payload(UpdateHost, "host", lambda: catalog.update_host(flexplane(info), zone, node, input))


# ------------------------------------------------------------------------------------------- root


class Query(graphene.ObjectType):
    zones = graphene.List(
        graphene.NonNull(Zone),
        required=True,
        description="Every zone with its hosts. Needs USER or ADMIN. A zone that does not answer is "
        "listed with its hosts offline and an UNAVAILABLE error naming it.",
    )
    hosts = graphene.List(
        graphene.NonNull(Host),
        required=True,
        zone=graphene.String(description="Only this zone's hosts."),
        description="Every host, by zone then node. Needs USER or ADMIN (endpoints, and what the agent "
        "and Proxmox say of each host: ADMIN only).",
    )
    compute_profiles = graphene.List(
        graphene.NonNull(ComputeProfile),
        required=True,
        description="Every compute profile. Needs USER or ADMIN.",
    )
    storage_profiles = graphene.List(
        graphene.NonNull(StorageProfile),
        required=True,
        description="Every storage profile. Needs USER or ADMIN.",
    )
    images = graphene.List(
        graphene.NonNull(Image), required=True, description="Every image. Needs USER or ADMIN."
    )

    @staticmethod
    @domain_errors
    def resolve_zones(root: None, info: graphene.ResolveInfo) -> list[ZoneStatus]:
        return report_partial(info, inventory.zone_statuses(flexplane(info)))

    @staticmethod
    @domain_errors
    def resolve_hosts(root: None, info: graphene.ResolveInfo, zone: str | None = None) -> list[HostStatus]:
        statuses = inventory.zone_statuses(flexplane(info))
        return report_partial(
            info, [h for z in statuses for h in z.hosts if zone is None or h.host.zone == zone]
        )

    @staticmethod
    @domain_errors
    def resolve_compute_profiles(root: None, info: graphene.ResolveInfo) -> list[ComputeProfileModel]:
        return catalog.list_compute_profiles(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_storage_profiles(root: None, info: graphene.ResolveInfo) -> list[StorageProfileModel]:
        return catalog.list_storage_profiles(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_images(root: None, info: graphene.ResolveInfo) -> list[ImageModel]:
        return catalog.list_images(flexplane(info))


class Mutation(graphene.ObjectType):
    create_compute_profile = CreateComputeProfile.Field()
    update_compute_profile = UpdateComputeProfile.Field()
    delete_compute_profile = DeleteComputeProfile.Field()
    create_storage_profile = CreateStorageProfile.Field()
    update_storage_profile = UpdateStorageProfile.Field()
    delete_storage_profile = DeleteStorageProfile.Field()
    create_image = CreateImage.Field()
    update_image = UpdateImage.Field()
    delete_image = DeleteImage.Field()
    create_zone = CreateZone.Field()
    update_zone = UpdateZone.Field()
    delete_zone = DeleteZone.Field()
    create_host = CreateHost.Field()
    update_host = UpdateHost.Field()
