"""VDCs (virtual data centers): what a tenant may use, and how much of it.

A VDC's definition is a ConfigMap of the platform namespace; what it uses is read live from
Proxmox: the VMs tagged ``fp-vdc-<id>``, which sit in the pool ``fp-<id>`` of each zone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from django.db import models

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
_MIB = 1024**2
_GIB = 1024**3


def pool_name(vdc_id: str) -> str:
    """The Proxmox pool that holds a VDC's VMs in each of its zones."""
    return f"{POOL_PREFIX}{vdc_id}"


@dataclass(frozen=True)
class Usage:
    """Amounts of the four quota'd resources: used by a VDC, allowed to it, or asked for."""

    vcpus: int = 0
    memory_mib: int = 0
    disk_gb: int = 0
    vms: int = 0
    networks: int = 0
    public_ips: int = 0

    # (attribute, how a message names it, unit)
    RESOURCES = (
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
        its template's size)."""
        vcpus, memory_mib, disk_gb = guest.cpus, guest.memory // _MIB, math.ceil(guest.disk / _GIB)
        requested = requested_in(guest.tags)
        if requested is not None:
            vcpus, memory_mib, disk_gb = (
                max(vcpus, requested[0]),
                max(memory_mib, requested[1]),
                max(disk_gb, requested[2]),
            )
        return cls(vcpus=vcpus, memory_mib=memory_mib, disk_gb=disk_gb, vms=1)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Usage:
        return cls(
            vcpus=int(spec.get("vcpus") or 0),
            memory_mib=int(spec.get("memoryMib") or 0),
            disk_gb=int(spec.get("diskGb") or 0),
            vms=int(spec.get("vms") or 0),
            networks=int(spec.get("networks") or 0),
            public_ips=int(spec.get("publicIps") or 0),
        )

    def to_spec(self) -> dict[str, int]:
        return {
            "vcpus": self.vcpus,
            "memoryMib": self.memory_mib,
            "diskGb": self.disk_gb,
            "vms": self.vms,
            "networks": self.networks,
            "publicIps": self.public_ips,
        }


class Vdc(models.Model):
    """A tenant's virtual data center: allowed zones and catalog offerings, and its quota.

    An empty allow-list allows nothing. The quota bounds the sum over the VDC's VMs.
    """

    id = models.CharField(primary_key=True, max_length=63)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    zones = models.JSONField(default=list)
    compute_profiles = models.JSONField(default=list)
    storage_profiles = models.JSONField(default=list)
    images = models.JSONField(default=list)
    quota_vcpus = models.PositiveIntegerField()
    quota_memory_mib = models.PositiveIntegerField()
    quota_disk_gb = models.PositiveIntegerField()
    quota_vms = models.PositiveIntegerField()
    quota_networks = models.PositiveIntegerField(default=DEFAULT_NETWORKS_QUOTA)
    quota_public_ips = models.PositiveIntegerField(default=DEFAULT_PUBLIC_IPS_QUOTA)
    # Not a sum over the VDC like the four above: the most snapshots any one of its VMs may have.
    quota_snapshots_per_vm = models.PositiveIntegerField(default=DEFAULT_SNAPSHOTS_PER_VM)
    # The Zitadel organization (tenant) the VDC belongs to; empty for a VDC of the platform's own.
    organization = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.id

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Vdc:
        quota_spec = spec.get("quota") or {}
        quota = Usage.from_spec(quota_spec)
        snapshots = (spec.get("quota") or {}).get("snapshotsPerVm")
        return cls(
            id=str(spec["id"]),
            name=str(spec.get("name") or spec["id"]),
            description=str(spec.get("description") or ""),
            zones=[str(z) for z in spec.get("zones") or []],
            compute_profiles=[str(p) for p in spec.get("computeProfiles") or []],
            storage_profiles=[str(p) for p in spec.get("storageProfiles") or []],
            images=[str(i) for i in spec.get("images") or []],
            quota_vcpus=quota.vcpus,
            quota_memory_mib=quota.memory_mib,
            quota_disk_gb=quota.disk_gb,
            quota_vms=quota.vms,
            # A VDC stored before networks had a quota may have a few (its default ones among them).
            quota_networks=quota.networks if "networks" in quota_spec else DEFAULT_NETWORKS_QUOTA,
            quota_public_ips=quota.public_ips if "publicIps" in quota_spec else DEFAULT_PUBLIC_IPS_QUOTA,
            quota_snapshots_per_vm=DEFAULT_SNAPSHOTS_PER_VM if snapshots is None else int(snapshots),
            organization=str(spec.get("organization") or ""),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "zones": list(self.zones),
            "computeProfiles": list(self.compute_profiles),
            "storageProfiles": list(self.storage_profiles),
            "images": list(self.images),
            "quota": {**self.quota.to_spec(), "snapshotsPerVm": self.quota_snapshots_per_vm},
            **({"organization": self.organization} if self.organization else {}),
        }

    @property
    def quota(self) -> Usage:
        return Usage(
            vcpus=self.quota_vcpus,
            memory_mib=self.quota_memory_mib,
            disk_gb=self.quota_disk_gb,
            vms=self.quota_vms,
            networks=self.quota_networks,
            public_ips=self.quota_public_ips,
        )

    @property
    def snapshots_per_vm(self) -> int:
        return int(self.quota_snapshots_per_vm)

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
