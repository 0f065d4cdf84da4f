"""The platform catalog's offerings: compute profiles, storage profiles and images.

Each is one ConfigMap of the platform namespace (see ``orchestrator.sources.kube``); its spec
is the JSON of ``to_spec()``, in the API's camelCase. VMs record what they were made from in
their own Proxmox config, so removing an offering from the catalog never touches a VM.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models

DEFAULT_CPU_TYPE = "x86-64-v2-AES"

BUSES = ("scsi", "virtio", "sata")
FORMATS = ("raw", "qcow2")
OS_FAMILIES = (
    "debian",
    "ubuntu",
    "rhel",
    "rocky",
    "alma",
    "fedora",
    "centos",
    "opensuse",
    "windows",
    "other",
)
CHECKSUM_ALGORITHMS = {"sha256": 64, "sha512": 128}  # algorithm -> hex digits


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


class ComputeProfile(models.Model):
    """A VM size: vCPUs, memory and the CPU model QEMU presents."""

    name = models.CharField(primary_key=True, max_length=63)
    vcpus = models.PositiveIntegerField()
    memory_mib = models.PositiveIntegerField()
    cpu_type = models.CharField(max_length=64, default=DEFAULT_CPU_TYPE)
    description = models.TextField(blank=True, default="")

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.name

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> ComputeProfile:
        return cls(
            name=str(spec["name"]),
            vcpus=int(spec["vcpus"]),
            memory_mib=int(spec["memoryMib"]),
            cpu_type=str(spec.get("cpuType") or DEFAULT_CPU_TYPE),
            description=str(spec.get("description") or ""),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vcpus": self.vcpus,
            "memoryMib": self.memory_mib,
            "cpuType": self.cpu_type,
            "description": self.description,
        }


class StorageProfile(models.Model):
    """Where and how a VM's disk lives: the Proxmox storage per zone, sizes, bus, format, I/O limits.

    Limits left empty (None) are not set on the disk: unlimited.
    """

    name = models.CharField(primary_key=True, max_length=63)
    # zone id -> Proxmox storage id in that zone
    storages = models.JSONField(default=dict)
    default_gb = models.PositiveIntegerField()
    min_gb = models.PositiveIntegerField()
    max_gb = models.PositiveIntegerField()
    bus = models.CharField(max_length=8, default="scsi")
    format = models.CharField(max_length=8, default="raw")
    read_mbps = models.PositiveIntegerField(null=True, blank=True)
    write_mbps = models.PositiveIntegerField(null=True, blank=True)
    read_iops = models.PositiveIntegerField(null=True, blank=True)
    write_iops = models.PositiveIntegerField(null=True, blank=True)
    description = models.TextField(blank=True, default="")

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.name

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> StorageProfile:
        return cls(
            name=str(spec["name"]),
            storages={str(zone): str(storage) for zone, storage in dict(spec["storages"]).items()},
            default_gb=int(spec["defaultGb"]),
            min_gb=int(spec["minGb"]),
            max_gb=int(spec["maxGb"]),
            bus=str(spec.get("bus") or "scsi"),
            format=str(spec.get("format") or "raw"),
            read_mbps=_optional_int(spec.get("readMbps")),
            write_mbps=_optional_int(spec.get("writeMbps")),
            read_iops=_optional_int(spec.get("readIops")),
            write_iops=_optional_int(spec.get("writeIops")),
            description=str(spec.get("description") or ""),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "storages": dict(sorted(self.storages.items())),
            "defaultGb": self.default_gb,
            "minGb": self.min_gb,
            "maxGb": self.max_gb,
            "bus": self.bus,
            "format": self.format,
            "readMbps": self.read_mbps,
            "writeMbps": self.write_mbps,
            "readIops": self.read_iops,
            "writeIops": self.write_iops,
            "description": self.description,
        }

    def storage_in(self, zone: str) -> str | None:
        """The Proxmox storage this profile uses in ``zone``; None where it is not offered."""
        storage = self.storages.get(zone)
        return str(storage) if storage else None

    def disk_limits(self) -> dict[str, int]:
        """The I/O limits as Proxmox disk options (``mbps_rd``, ``mbps_wr``, ``iops_rd``, ``iops_wr``)."""
        limits = {
            "mbps_rd": self.read_mbps,
            "mbps_wr": self.write_mbps,
            "iops_rd": self.read_iops,
            "iops_wr": self.write_iops,
        }
        return {option: value for option, value in limits.items() if value is not None}


class Image(models.Model):
    """An OS image: where to download it, its checksum, and how to log in to VMs made from it."""

    name = models.CharField(primary_key=True, max_length=63)
    os_family = models.CharField(max_length=16)
    source_url = models.URLField(max_length=2048)
    # "<algorithm>:<hex digest>", algorithm sha256 or sha512
    checksum = models.CharField(max_length=140)
    default_user = models.CharField(max_length=32)
    min_disk_gb = models.PositiveIntegerField()
    description = models.TextField(blank=True, default="")

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.name

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Image:
        return cls(
            name=str(spec["name"]),
            os_family=str(spec["osFamily"]),
            source_url=str(spec["sourceUrl"]),
            checksum=str(spec["checksum"]),
            default_user=str(spec["defaultUser"]),
            min_disk_gb=int(spec["minDiskGb"]),
            description=str(spec.get("description") or ""),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "osFamily": self.os_family,
            "sourceUrl": self.source_url,
            "checksum": self.checksum,
            "defaultUser": self.default_user,
            "minDiskGb": self.min_disk_gb,
            "description": self.description,
        }

    @property
    def checksum_algorithm(self) -> str:
        """``sha256`` or ``sha512``."""
        return self.checksum.partition(":")[0]

    @property
    def checksum_digest(self) -> str:
        """The expected digest, lowercase hex."""
        return self.checksum.partition(":")[2]
