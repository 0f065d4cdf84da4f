"""VDCs (virtual data centers): what a tenant may use, and how much of it.

A VDC's definition is a ConfigMap of the platform namespace; what it uses is read live from
Proxmox: the VMs tagged ``fp-vdc-<id>``, which sit in the pool ``fp-<id>`` of each zone.

A VDC is declared once, as the catalog's kinds are (``models.specs``): each field of :class:`Vdc` says
its type, label, words, limits and default. ``VDC_INPUTS`` is the view of them that the GraphQL inputs
(``graphql.vdcs``), the admin form (``portal.admin.forms``) and the service's checks
(``services.vdcs.definitions``) are made from. Its quota is given as one object (``QUOTA``).
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, ClassVar

from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass

from orchestrator.models.specs import (
    MAX_TITLE_LENGTH,
    SPEC_CONFIG,
    Group,
    Kind,
    NamedById,
    Stored,
    description_field,
    field,
    id_field,
)
from orchestrator.models.vms import VDC_TAG_PREFIX, requested_in
from orchestrator.sources.proxmox import Guest

POOL_PREFIX = "fp-"
# The networks a VDC may have when its quota does not say (``quota.networks``).
DEFAULT_NETWORKS_QUOTA = 10
# The public IPs a VDC may hold when its quota does not say (``quota.publicIps``).
DEFAULT_PUBLIC_IPS_QUOTA = 4
# How many snapshots each VM of a VDC may have when its quota does not say (``quota.snapshotsPerVm``).
DEFAULT_SNAPSHOTS_PER_VM = 10
# The most any VDC may allow (an organization owner sets their VDCs' quotas): every snapshot of a VM is
# kept in the same storage its disks share with every tenant's, and long snapshot chains slow its disks.
MAX_SNAPSHOTS_PER_VM = 50
# GraphQL's Int is 32 bits: no quota beyond what the API can carry.
_INT_MAX = 2**31 - 1
_MIB = 1024**2
_GIB = 1024**3


def pool_name(vdc_id: str) -> str:
    """The Proxmox pool that holds a VDC's VMs in each of its zones."""
    return f"{POOL_PREFIX}{vdc_id}"


@dataclass(frozen=True, config=SPEC_CONFIG)
class Usage(Stored):
    """Amounts of the quota'd resources: used by a VDC, allowed to it, or asked for (stored as a VDC's
    ``quota``, camelCase). A pydantic dataclass: amounts are added and compared as values."""

    vcpus: int = 0
    memory_mib: int = 0
    disk_gb: int = 0
    vms: int = 0
    networks: int = 0
    public_ips: int = 0

    # (attribute, how a message names it, unit)
    RESOURCES: ClassVar[tuple[tuple[str, str, str], ...]] = (
        ("vcpus", "vCPUs", ""),
        ("memory_mib", "memory", " MiB"),
        ("disk_gb", "disk", " GiB"),
        ("vms", "VMs", ""),
        ("networks", "networks", ""),
        ("public_ips", "public IPs", ""),
    )

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __sub__(self, other: Usage) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    @classmethod
    def of_guest(cls, guest: Guest) -> Usage:
        """What one ``/cluster/resources`` guest counts for: its vCPUs, memory, boot disk, and 1 VM; each
        at the larger of its live size and the size its create asked for (a clone being made is still
        its template's size). A holder counts its disk alone."""
        vcpus, memory_mib, disk_gb = guest.cpus, guest.memory // _MIB, math.ceil(guest.disk / _GIB)
        requested = requested_in(guest.tags)
        if guest.is_holder:  # a volume's (attached or not) or a volume snapshot's holder: its disk alone
            return cls(disk_gb=max(disk_gb, requested[2] if requested else 0))
        if requested is not None:
            vcpus, memory_mib, disk_gb = (
                max(vcpus, requested[0]),
                max(memory_mib, requested[1]),
                max(disk_gb, requested[2]),
            )
        return cls(vcpus=vcpus, memory_mib=memory_mib, disk_gb=disk_gb, vms=1)

    @staticmethod
    def key(resource: str) -> str:
        """The key a resource is stored under (``memory_mib`` -> ``memoryMib``)."""
        return to_camel(resource)


def _quota(
    name: str,
    default: int | None = None,
    *,
    label: str,
    high: int,
    help: str = "",
    api: str = "",
    **more: Any,
) -> Any:
    """A quota's limit, stored under ``quota`` (0 allows none). Without a default, a create needs it (and
    one stored without it reads as 0)."""
    return field(
        0 if default is None else default,
        label=label,
        help=help,
        api=api,
        required=default is None,
        ge=0,
        le=high,
        path=("quota", to_camel(name)),
        **more,
    )


def _allowed(what: str, api: str = "", **more: Any) -> Any:
    """An allow-list: catalog names (empty: none allowed)."""
    return field(label=f"Allowed {what}", api=api, default_factory=list, **more)


QUOTA = Group(
    "quota",
    doc="Quota limits; 0 allows none.",
    create="All four limits.",
    update="Only the limits that change.",
)


class Vdc(NamedById):
    """A tenant's virtual data center: allowed zones and catalog offerings, and its quota.

    An empty allow-list allows nothing. The quota bounds the sum over the VDC's VMs. Stored with its
    quota nested (``quota``), its organization only when it has one, and its security groups beside
    (``securityGroups``, ``models.security_groups``).
    """

    id: str = id_field(..., api="A lowercase slug (letters, digits, '-'); never changes.")
    name: str = field(
        "",
        label="Display name",
        api="Display name (default: the id).",
        api_update="",
        max_length=MAX_TITLE_LENGTH,
    )
    description: str = description_field(api="")
    zones: list[str] = _allowed(
        "zones",
        api="Allowed zones: each gets a pool.",
        api_update="A zone added gets the VDC's pool; one removed must hold none of its VMs.",
    )
    compute_profiles: list[str] = _allowed("compute profiles")
    storage_profiles: list[str] = _allowed("storage profiles")
    images: list[str] = _allowed("images")
    quota_vcpus: int = _quota("vcpus", label="vCPUs quota", high=1_000_000)
    quota_memory_mib: int = _quota(
        "memory_mib", label="Memory quota (MiB)", high=_INT_MAX, unit=" MiB", api="MiB."
    )
    quota_disk_gb: int = _quota("disk_gb", label="Disk quota (GiB)", high=_INT_MAX, unit=" GiB", api="GiB.")
    quota_vms: int = _quota("vms", label="VM quota", high=1_000_000, help="How many VMs at most.")
    # A VDC stored before networks had a quota may have a few (its default ones among them).
    quota_networks: int = _quota(
        "networks",
        DEFAULT_NETWORKS_QUOTA,
        label="Network quota",
        high=10_000,
        help=f"How many networks at most, its default ones included (empty: {DEFAULT_NETWORKS_QUOTA}).",
        api=f"Networks it may have, its default ones included (default {DEFAULT_NETWORKS_QUOTA}).",
    )
    quota_public_ips: int = _quota(
        "public_ips",
        DEFAULT_PUBLIC_IPS_QUOTA,
        label="Public IP quota",
        high=10_000,
        help=f"How many public IPs its edge gateways may hold (empty: {DEFAULT_PUBLIC_IPS_QUOTA}).",
        api="Public IPs its edge gateways may hold, each gateway's uplink address included "
        f"(default {DEFAULT_PUBLIC_IPS_QUOTA}).",
    )
    # Not a sum over the VDC like the others: the most snapshots any one of its VMs may have.
    quota_snapshots_per_vm: int = _quota(
        "snapshots_per_vm",
        DEFAULT_SNAPSHOTS_PER_VM,
        label="Snapshots per VM",
        high=MAX_SNAPSHOTS_PER_VM,
        help="How many snapshots each of its VMs may have.",
        api=f"Snapshots each VM may have (not a sum; default {DEFAULT_SNAPSHOTS_PER_VM}, at most "
        f"{MAX_SNAPSHOTS_PER_VM}, the platform's maximum).",
    )
    # The Zitadel organization (tenant) the VDC belongs to; empty for a VDC of the platform's own.
    organization: str = field(
        "",
        label="Organization",
        api="The organization it belongs to, within whose allowance it must fit (ADMIN: none for a "
        "VDC of the platform's own; ORG_OWNER: theirs, the default when they own one). Never changes.",
        key=True,
    )

    def __str__(self) -> str:
        return self.id

    def to_spec(self) -> dict[str, Any]:
        spec = super().to_spec()
        if not self.organization:
            del spec["organization"]
        return spec

    @property
    def quota(self) -> Usage:
        """Its quota as amounts: each resource's ``quota_<resource>``."""
        return Usage(**{f.name: getattr(self, f"quota_{f.name}") for f in fields(Usage)})

    @property
    def snapshots_per_vm(self) -> int:
        return int(self.quota_snapshots_per_vm)

    @property
    def label(self) -> str:
        """It as lists and messages name it: its name, its id beside it when they differ."""
        return f"{self.name} ({self.id})" if self.name and self.name != self.id else self.id

    @property
    def pool(self) -> str:
        """The Proxmox pool of this VDC (the same name in each of its zones)."""
        return pool_name(self.id)

    @property
    def tag(self) -> str:
        """The Proxmox tag every VM of this VDC carries."""
        return f"{VDC_TAG_PREFIX}{self.id}"

    def allows_zone(self, zone: str) -> bool:
        return zone in self.zones

    def allows_compute_profile(self, name: str) -> bool:
        return name in self.compute_profiles

    def allows_storage_profile(self, name: str) -> bool:
        return name in self.storage_profiles

    def allows_image(self, name: str) -> bool:
        return name in self.images


VDC_INPUTS = Kind.of(Vdc, "vdc", "VDC", groups=(QUOTA,))
