"""What a VDC offers its users when they make or resize a VM, and what a VM of it would use.

The choices are the catalog's offerings that the VDC allows (as ``services.vms`` checks them);
the quota figures are the VDC's live usage (``services.vdcs``) against its quota. The create form
shows them, and recomputes them over htmx while the user picks a profile or a disk size.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.models import ComputeProfile, Image, StorageProfile, Usage, Vdc
from orchestrator.services import catalog
from orchestrator.services.context import Context
from portal.templatetags.sizes import size

# Which form field a quota'd resource belongs to: what the user changes to use less of it.
QUOTA_FIELDS = {
    "vcpus": "compute_profile",
    "memory_mib": "compute_profile",
    "disk_gb": "disk_gb",
    "vms": None,
}


@dataclass(frozen=True)
class Offer:
    """The catalog offerings a VDC allows, by name, in the catalog's order."""

    vdc: Vdc
    compute_profiles: dict[str, ComputeProfile]
    storage_profiles: dict[str, StorageProfile]
    images: dict[str, Image]
    zones: list[str]

    @classmethod
    def of(cls, ctx: Context, vdc: Vdc) -> Offer:
        """Read from the request's catalog snapshot (no Proxmox call)."""
        return cls(
            vdc=vdc,
            compute_profiles={
                p.name: p for p in catalog.list_compute_profiles(ctx) if vdc.allows_compute_profile(p.name)
            },
            storage_profiles={
                p.name: p for p in catalog.list_storage_profiles(ctx) if vdc.allows_storage_profile(p.name)
            },
            images={i.name: i for i in catalog.list_images(ctx) if vdc.allows_image(i.name)},
            zones=[z.id for z in catalog.list_zones(ctx) if vdc.allows_zone(z.id)],
        )

    def smallest_compute_profile(self) -> str | None:
        """The compute profile a new VM starts from: the one asking the least of the quota."""
        profiles = sorted(self.compute_profiles.values(), key=lambda p: (p.vcpus, p.memory_mib, p.name))
        return profiles[0].name if profiles else None

    def default_disk_gb(self, storage_profile: str, image: str) -> int | None:
        """The disk a create gets when it names no size (the service's rule), if both are offered."""
        profile, chosen = self.storage_profiles.get(storage_profile), self.images.get(image)
        if profile is None or chosen is None:
            return None
        return max(profile.default_gb, chosen.min_disk_gb)


def compute_profile_label(profile: ComputeProfile) -> str:
    """A compute profile as the forms offer it: its name and size (``medium: 2 vCPU, 4 GiB``)."""
    return f"{profile.name}: {profile.vcpus} vCPU, {size(profile.memory_mib, 'MiB')}"


@dataclass(frozen=True)
class QuotaLine:
    """One quota'd resource: allowed, used now, what is asked for, and what would be left."""

    resource: str
    label: str
    unit: str
    limit: int
    used: int
    asked: int

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)

    @property
    def left_after(self) -> int:
        return self.limit - self.used - self.asked

    @property
    def over(self) -> bool:
        """Asking for it would go over the quota (only what grows counts, as the service checks)."""
        return self.asked > 0 and self.used + self.asked > self.limit

    @property
    def field(self) -> str | None:
        return QUOTA_FIELDS[self.resource]


def quota_lines(vdc: Vdc, used: Usage, asked: Usage) -> list[QuotaLine]:
    return [
        QuotaLine(
            attr, label, unit.strip(), getattr(vdc.quota, attr), getattr(used, attr), getattr(asked, attr)
        )
        for attr, label, unit in Usage.RESOURCES
        if attr in QUOTA_FIELDS  # what a VM uses (not the VDC's networks)
    ]


def over_quota(lines: Iterable[QuotaLine]) -> list[str | None]:
    """The fields of a form that ask for what would go over the quota (the compute profile for vCPUs and
    memory, the disk size for disk; None for the VM count): where a ``QuotaExceeded`` is shown."""
    return [line.field for line in lines if line.over]


def asked_for(
    offer: Offer, compute_profile: str, storage_profile: str, image: str, disk_gb: int | None
) -> Usage:
    """What one new VM of these choices uses; what is not (yet) chosen counts as nothing."""
    profile = offer.compute_profiles.get(compute_profile)
    disk = disk_gb if disk_gb is not None else offer.default_disk_gb(storage_profile, image)
    return Usage(
        vcpus=profile.vcpus if profile else 0,
        memory_mib=profile.memory_mib if profile else 0,
        disk_gb=max(0, disk or 0),
        vms=1,
    )
