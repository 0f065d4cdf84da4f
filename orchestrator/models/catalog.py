"""The platform catalog: what each kind's inputs are (declared once), and its offerings as models.

Each catalog kind (compute profile, storage profile, image, zone, host) declares its inputs here,
once: type, limits, choices, whether a create needs it, its default, and the words that describe
it. ``services.catalog`` validates by these declarations; the GraphQL inputs
(``graphql.catalog``, ``graphql.zones``, ``graphql.hosts``) and the portal's forms
(``portal.admin.forms``) are made from them.

Each offering is one ConfigMap of the platform namespace (see ``orchestrator.sources.kube``); its
spec is the JSON of ``to_spec()``, in the API's camelCase. VMs record what they were made from in
their own Proxmox config, so removing an offering from the catalog never touches a VM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import models

from agentclient.templates import IMAGE_NAME_MAX, IMAGE_NAME_RULE
from orchestrator.models.zones import (
    DEFAULT_CPU_OVERCOMMIT,
    DEFAULT_MEMORY_OVERCOMMIT,
    DEFAULT_NETWORK_BRIDGE,
    DEFAULT_NETWORK_ID_FIRST,
    DEFAULT_NETWORK_ID_LAST,
    DEFAULT_NETWORK_MTU,
    DEFAULT_NETWORK_TYPE,
    MAX_VLAN_TAG,
    MAX_VXLAN_ID,
    NETWORK_TYPES,
    NO_VLAN,
)

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

MAX_NAME_LENGTH = 63
# Profiles' and images' names: one rule for every catalog name, the one the agent holds an image's
# name to (it names the image's template and tags after it), dots allowed (ubuntu-24.04).
MAX_CATALOG_NAME_LENGTH = IMAGE_NAME_MAX
MAX_TITLE_LENGTH = 200
MAX_DESCRIPTION_LENGTH = 2000
MAX_GB = 65536


# ------------------------------------------------------------------------------ the declarations


def number(value: float) -> str:
    """A limit in words: 512, 4194304, 0.1."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Input:
    """One input field of a catalog kind."""

    name: str  # the service's name (snake_case); the API spells it in camelCase
    type: type  # str, int, float, bool, or list (the storages of a storage profile)
    label: str  # the portal's label
    help: str = ""  # what it is; the limits are added by ``description``
    required: bool = True  # whether a create needs it (an update may leave out any input)
    low: float | None = None
    high: float | None = None
    unit: str = ""  # after a number in words, e.g. " MiB"
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    default: Any = None  # what a create that leaves it out gets
    key: bool = False  # it identifies the object: an update never changes it
    widget: str = ""  # how the portal shows a string: "textarea" or "url" (default: one line)

    @property
    def description(self) -> str:
        """The API's description and the portal's help text: what it is, its limits, its default."""
        parts = [self.help] if self.help else []
        if self.low is not None and self.high is not None:
            parts.append(f"{number(self.low)} to {number(self.high)}{self.unit}.")
        if self.choices:
            parts.append(f"One of {', '.join(self.choices)}.")
        if self.default not in (None, "", False):
            parts.append(f"Default {self.default}.")
        return " ".join(parts)


@dataclass(frozen=True)
class Kind:
    """A catalog kind: its ConfigMap kind, the noun messages use, its inputs."""

    kind: str
    noun: str
    inputs: tuple[Input, ...]

    def __getitem__(self, name: str) -> Input:
        return next(i for i in self.inputs if i.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    @property
    def key_fields(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.key)

    @property
    def defaults(self) -> dict[str, Any]:
        return {i.name: i.default for i in self.inputs if i.default is not None}


def _name() -> Input:
    return Input(
        "name",
        str,
        "Name",
        f"{IMAGE_NAME_RULE}; it cannot change later.",
        max_length=MAX_CATALOG_NAME_LENGTH,
        key=True,
    )


def _description() -> Input:
    return Input(
        "description",
        str,
        "Description",
        required=False,
        default="",
        max_length=MAX_DESCRIPTION_LENGTH,
        widget="textarea",
    )


def _limit(name: str, label: str, high: int, unit: str) -> Input:
    return Input(name, int, label, "Empty or null: no limit.", required=False, low=1, high=high, unit=unit)


def _gib(name: str, label: str, help: str = "") -> Input:
    return Input(name, int, label, help, low=1, high=MAX_GB, unit=" GiB")


COMPUTE_PROFILE_INPUTS = Kind(
    "compute-profile",
    "compute profile",
    (
        _name(),
        Input("vcpus", int, "vCPUs", "Virtual CPUs:", low=1, high=512),
        Input(
            "memory_mib", int, "Memory (MiB)", "Memory in MiB:", low=128, high=4 * 1024 * 1024, unit=" MiB"
        ),
        Input(
            "cpu_type",
            str,
            "CPU type",
            "The CPU model QEMU presents.",
            required=False,
            max_length=64,
            default=DEFAULT_CPU_TYPE,
        ),
        _description(),
    ),
)

STORAGE_PROFILE_INPUTS = Kind(
    "storage-profile",
    "storage profile",
    (
        _name(),
        Input("storages", list, "Storages", "The Proxmox storage to use in each zone it is offered in."),
        _gib(
            "default_gb",
            "Default disk size (GiB)",
            "Disk size when none is asked for, from the smallest to the largest disk:",
        ),
        _gib("min_gb", "Smallest disk (GiB)"),
        _gib("max_gb", "Largest disk (GiB)"),
        Input("bus", str, "Disk bus", required=False, choices=BUSES, default="scsi"),
        Input("format", str, "Disk format", required=False, choices=FORMATS, default="raw"),
        _limit("read_mbps", "Read limit (MiB/s)", 100_000, " MiB/s"),
        _limit("write_mbps", "Write limit (MiB/s)", 100_000, " MiB/s"),
        _limit("read_iops", "Read limit (IOPS)", 10_000_000, " IOPS"),
        _limit("write_iops", "Write limit (IOPS)", 10_000_000, " IOPS"),
        _description(),
    ),
)

IMAGE_INPUTS = Kind(
    "image",
    "image",
    (
        _name(),
        Input("os_family", str, "OS family", choices=OS_FAMILIES),
        Input(
            "source_url",
            str,
            "Download URL",
            "Where hosts download it from: http or https; loopback, link-local and private addresses "
            "are refused unless allowlisted.",
            max_length=2048,
            widget="url",
        ),
        Input("checksum", str, "Checksum", "sha256:<hex> or sha512:<hex>.", max_length=140),
        Input("default_user", str, "Default user", "The login user cloud-init sets up.", max_length=32),
        _gib("min_disk_gb", "Smallest disk (GiB)", "The smallest disk it fits on:"),
        _description(),
    ),
)

ZONE_INPUTS = Kind(
    "zone",
    "zone",
    (
        Input(
            "id",
            str,
            "Id",
            "A lowercase slug of letters, digits and '-'; it cannot change later.",
            max_length=MAX_NAME_LENGTH,
            key=True,
        ),
        Input(
            "name",
            str,
            "Display name",
            "Its name on pages (default: the id).",
            required=False,
            max_length=MAX_TITLE_LENGTH,
        ),
        _description(),
        Input(
            "network_type",
            str,
            "Tenant networks",
            "How its tenant networks are built: VXLAN among its hosts, or VLANs on one bridge.",
            required=False,
            choices=NETWORK_TYPES,
            default=DEFAULT_NETWORK_TYPE,
        ),
        Input(
            "network_bridge",
            str,
            "VLAN bridge",
            "The bridge tenant VLANs ride on (VLAN only), e.g. vmbr0.",
            required=False,
            max_length=15,
            default=DEFAULT_NETWORK_BRIDGE,
        ),
        Input(
            "network_id_first",
            int,
            "First network id",
            "The first VXLAN id or VLAN tag flex.plane may hand out:",
            required=False,
            low=1,
            high=MAX_VXLAN_ID,
            default=DEFAULT_NETWORK_ID_FIRST,
        ),
        Input(
            "network_id_last",
            int,
            "Last network id",
            "The last VXLAN id or VLAN tag flex.plane may hand out (a VLAN tag is at most 4094):",
            required=False,
            low=1,
            high=MAX_VXLAN_ID,
            default=DEFAULT_NETWORK_ID_LAST,
        ),
        Input(
            "network_mtu",
            int,
            "Network MTU",
            "The MTU of tenant networks (VXLAN needs 50 bytes less than the hosts' links):",
            required=False,
            low=576,
            high=9000,
            default=DEFAULT_NETWORK_MTU,
        ),
        Input(
            "network_ranges",
            str,
            "Other address ranges",
            "IPv4 ranges tenants may use besides RFC 1918's, comma-separated CIDRs (empty: none).",
            required=False,
            max_length=1000,
            default="",
        ),
        Input(
            "network_dns",
            str,
            "DNS servers",
            "The resolvers a new network gets unless its creator names others, comma-separated "
            "IPv4 addresses (empty: none).",
            required=False,
            max_length=200,
            default="",
        ),
        Input(
            "external_bridge",
            str,
            "External bridge",
            "The bridge of the external network edge gateways' uplinks are on, e.g. vmbr1 "
            "(empty: no edge gateways in this zone).",
            required=False,
            max_length=15,
            default="",
        ),
        Input(
            "external_vlan",
            int,
            "External VLAN",
            "The VLAN tag of the external network on that bridge (0: untagged):",
            required=False,
            low=0,
            high=MAX_VLAN_TAG,
            default=NO_VLAN,
        ),
        Input(
            "external_cidr",
            str,
            "External CIDR",
            "The external network's IPv4 subnet, e.g. 203.0.113.0/24.",
            required=False,
            max_length=18,
            default="",
        ),
        Input(
            "external_gateway",
            str,
            "External gateway",
            "The external network's router, an address of its CIDR.",
            required=False,
            max_length=15,
            default="",
        ),
        Input(
            "external_pool",
            str,
            "Public address pool",
            "The addresses flex.plane hands to edge gateways and public IPs, comma-separated ranges "
            "(203.0.113.10-203.0.113.99), CIDRs or addresses, all in the external CIDR.",
            required=False,
            max_length=1000,
            default="",
        ),
        Input(
            "gateway_nodes",
            str,
            "Gateway hosts",
            "The hosts (Proxmox nodes) that may run edge gateways, comma-separated (empty: any host of "
            "the zone).",
            required=False,
            max_length=1000,
            default="",
        ),
    ),
)

HOST_INPUTS = Kind(
    "host",
    "host",
    (
        Input("zone", str, "Zone", "A zone's id.", max_length=MAX_NAME_LENGTH, key=True),
        Input(
            "node", str, "Host", "The host's name (its Proxmox node).", max_length=MAX_NAME_LENGTH, key=True
        ),
        Input("endpoint", str, "Agent endpoint", "The agent's address, host:port.", max_length=255),
        Input("cordoned", bool, "Cordoned", "Cordoned hosts take no new VMs.", required=False, default=False),
        Input(
            "memory_overcommit",
            float,
            "Memory overcommit",
            "Placement counts the host's memory times this ratio:",
            required=False,
            low=0.1,
            high=8.0,
            default=DEFAULT_MEMORY_OVERCOMMIT,
        ),
        Input(
            "cpu_overcommit",
            float,
            "CPU overcommit",
            "Placement counts the host's CPU threads times this ratio:",
            required=False,
            low=0.1,
            high=64.0,
            default=DEFAULT_CPU_OVERCOMMIT,
        ),
    ),
)

CATALOG_KINDS = (COMPUTE_PROFILE_INPUTS, STORAGE_PROFILE_INPUTS, IMAGE_INPUTS, ZONE_INPUTS, HOST_INPUTS)


# ---------------------------------------------------------------------------------- the models


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


class ComputeProfile(models.Model):
    """A VM size: vCPUs, memory and the CPU model QEMU presents."""

    name = models.CharField(primary_key=True, max_length=MAX_CATALOG_NAME_LENGTH)
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

    name = models.CharField(primary_key=True, max_length=MAX_CATALOG_NAME_LENGTH)
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

    name = models.CharField(primary_key=True, max_length=MAX_CATALOG_NAME_LENGTH)
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
