"""The platform catalog: its offerings as models, each kind's inputs declared once on its model.

Each catalog kind (compute profile, storage profile, image; zones and hosts in ``models.zones``,
Kubernetes versions in ``models.clusters``) is one pydantic model (``models.specs``): each field
declares its type, limits, choices, whether a create needs it, its default, the words that describe
it and its stored camelCase key. ``services.catalog`` validates by that declaration; the GraphQL
inputs (``graphql.catalog``, ``graphql.zones``, ``graphql.hosts``) and the portal's forms
(``portal.admin.forms``) are made from its :class:`Kind` (``COMPUTE_PROFILE_INPUTS``, ...).

Each offering is one ConfigMap of the platform namespace (see ``orchestrator.sources.kube``); its
spec is the JSON of ``to_spec()``, in the API's camelCase. VMs record what they were made from in
their own Proxmox config, so removing an offering from the catalog never touches a VM.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_serializer

from agentclient.templates import IMAGE_NAME_MAX, IMAGE_NAME_RULE
from orchestrator.models.specs import MAX_DESCRIPTION_LENGTH as MAX_DESCRIPTION_LENGTH
from orchestrator.models.specs import MAX_NAME_LENGTH as MAX_NAME_LENGTH
from orchestrator.models.specs import MAX_TITLE_LENGTH as MAX_TITLE_LENGTH
from orchestrator.models.specs import Input as Input
from orchestrator.models.specs import Kind, Spec, description_field, field
from orchestrator.models.specs import number as number
from orchestrator.models.zones import Host, Zone

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

# Profiles' and images' names: one rule for every catalog name, the one the agent holds an image's
# name to (it names the image's template and tags after it), dots allowed (ubuntu-24.04).
MAX_CATALOG_NAME_LENGTH = IMAGE_NAME_MAX
MAX_GB = 65536


# ---------------------------------------------------------------------------------- the models


def _name() -> Any:
    return field(
        label="Name",
        help=f"{IMAGE_NAME_RULE}; it cannot change later.",
        required=True,
        max_length=MAX_CATALOG_NAME_LENGTH,
        key=True,
    )


def _limit(label: str, high: int, unit: str) -> Any:
    return field(label=label, help="Empty or null: no limit.", ge=1, le=high, unit=unit)


def _gib(label: str, help: str = "") -> Any:
    return field(label=label, help=help, required=True, ge=1, le=MAX_GB, unit=" GiB")


class ComputeProfile(Spec):
    """A VM size: vCPUs, memory and the CPU model QEMU presents."""

    name: str = _name()
    vcpus: int = field(label="vCPUs", help="Virtual CPUs:", required=True, ge=1, le=512)
    memory_mib: int = field(
        label="Memory (MiB)", help="Memory in MiB:", required=True, ge=128, le=4 * 1024 * 1024, unit=" MiB"
    )
    cpu_type: str = field(
        DEFAULT_CPU_TYPE, label="CPU type", help="The CPU model QEMU presents.", max_length=64
    )
    description: str = description_field()

    def __str__(self) -> str:
        return self.name


class StorageProfile(Spec):
    """Where and how a VM's disk lives: the Proxmox storage per zone, sizes, bus, format, I/O limits.

    Limits left empty (None) are not set on the disk: unlimited.
    """

    name: str = _name()
    # zone id -> Proxmox storage id in that zone (stored sorted by zone)
    storages: dict[str, str] = field(
        label="Storages",
        help="The Proxmox storage to use in each zone it is offered in.",
        required=True,
        default_factory=dict,
    )
    default_gb: int = _gib(
        "Default disk size (GiB)", "Disk size when none is asked for, from the smallest to the largest disk:"
    )
    min_gb: int = _gib("Smallest disk (GiB)")
    max_gb: int = _gib("Largest disk (GiB)")
    bus: str = field("scsi", label="Disk bus", choices=BUSES)
    format: str = field("raw", label="Disk format", choices=FORMATS)
    read_mbps: int | None = _limit("Read limit (MiB/s)", 100_000, " MiB/s")
    write_mbps: int | None = _limit("Write limit (MiB/s)", 100_000, " MiB/s")
    read_iops: int | None = _limit("Read limit (IOPS)", 10_000_000, " IOPS")
    write_iops: int | None = _limit("Write limit (IOPS)", 10_000_000, " IOPS")
    description: str = description_field()

    def __str__(self) -> str:
        return self.name

    @field_serializer("storages")
    def _sorted(self, storages: dict[str, str]) -> dict[str, str]:
        return dict(sorted(storages.items()))

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


class Image(Spec):
    """An OS image: where to download it, its checksum, and how to log in to VMs made from it."""

    name: str = _name()
    os_family: str = field(label="OS family", required=True, choices=OS_FAMILIES)
    source_url: str = field(
        label="Download URL",
        help="Where hosts download it from: http or https; loopback, link-local and private addresses "
        "are refused unless allowlisted.",
        required=True,
        max_length=2048,
        widget="url",
    )
    # "<algorithm>:<hex digest>", algorithm sha256 or sha512
    checksum: str = field(
        label="Checksum", help="sha256:<hex> or sha512:<hex>.", required=True, max_length=140
    )
    default_user: str = field(
        label="Default user", help="The login user cloud-init sets up.", required=True, max_length=32
    )
    min_disk_gb: int = _gib("Smallest disk (GiB)", "The smallest disk it fits on:")
    description: str = description_field()

    def __str__(self) -> str:
        return self.name


COMPUTE_PROFILE_INPUTS = Kind.of(ComputeProfile, "compute-profile", "compute profile")
STORAGE_PROFILE_INPUTS = Kind.of(StorageProfile, "storage-profile", "storage profile")
IMAGE_INPUTS = Kind.of(Image, "image", "image")
ZONE_INPUTS = Kind.of(Zone, "zone", "zone")
HOST_INPUTS = Kind.of(Host, "host", "host")

CATALOG_KINDS = (COMPUTE_PROFILE_INPUTS, STORAGE_PROFILE_INPUTS, IMAGE_INPUTS, ZONE_INPUTS, HOST_INPUTS)
