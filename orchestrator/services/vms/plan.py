"""A create, planned: what it asks for, checked against the catalog and the VDC; and what the VDC has
now (its VMs in every zone, what they use, the one an earlier create made), read under its lock."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from orchestrator.errors import Conflict, Unavailable, ValidationFailed
from orchestrator.models import ComputeProfile, Image, StorageProfile, Usage, Vdc
from orchestrator.models.tasks import Task
from orchestrator.models.vms import (
    COMPUTE_PROFILE_TAG_PREFIX,
    IMAGE_TAG_PREFIX,
    STORAGE_PROFILE_TAG_PREFIX,
    VirtualMachine,
    idempotency_tag,
    is_tag,
    vdc_in,
)
from orchestrator.services import access, catalog, locks, vdcs
from orchestrator.services.context import Context
from orchestrator.services.placement import Placement, PlacementRequest
from orchestrator.services.vms.inputs import (
    catalog_choice,
    parse_ssh_keys,
    validate_idempotency_key,
    validate_name,
    validate_user_data,
)
from orchestrator.sources.proxmox import ClusterResources, proxmox

# The VDC's lock: held from the idempotency check until the new VM is tagged.
LOCK_TTL = 120.0
LOCK_WAIT = 120.0


@dataclass(frozen=True)
class CreateVm:
    """What a create asks for (unvalidated: ``create_vm`` checks every field)."""

    name: str
    compute_profile: str
    storage_profile: str
    image: str
    disk_gb: int | None = None
    zone: str | None = None
    ssh_keys: tuple[str, ...] = ()
    user_data: str | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Created:
    """A create's answer. ``created`` is False when an earlier create's VM was returned."""

    vm: VirtualMachine
    task: Task | None
    placement: Placement | None
    created: bool


@dataclass(frozen=True)
class Plan:
    """A create, validated: everything it needs from the catalog and the request."""

    vdc: Vdc
    name: str
    compute: ComputeProfile
    storage_profile: StorageProfile
    image: Image
    zone: str
    storage: str
    disk_gb: int
    ssh_keys: list[str]
    user_data: str | None
    idempotency_key: str | None
    requested_by: str

    @property
    def usage(self) -> Usage:
        return Usage(
            vcpus=self.compute.vcpus, memory_mib=self.compute.memory_mib, disk_gb=self.disk_gb, vms=1
        )

    @property
    def placement_request(self) -> PlacementRequest:
        return PlacementRequest(
            zone=self.zone,
            vdc=self.vdc.id,
            vcpus=self.compute.vcpus,
            memory_mib=self.compute.memory_mib,
            disk_gb=self.disk_gb,
            storage=self.storage,
        )

    @property
    def idempotency_tag(self) -> str | None:
        return idempotency_tag(self.idempotency_key) if self.idempotency_key else None

    @property
    def tags(self) -> tuple[str, ...]:
        """What the VM records about itself: its VDC, the create that made it, what it was made from."""
        tags = [self.vdc.tag]
        if self.idempotency_tag:
            tags.append(self.idempotency_tag)
        for prefix, name in (
            (COMPUTE_PROFILE_TAG_PREFIX, self.compute.name),
            (STORAGE_PROFILE_TAG_PREFIX, self.storage_profile.name),
            (IMAGE_TAG_PREFIX, self.image.name),
        ):
            if is_tag(prefix + name):
                tags.append(prefix + name)
        return tuple(dict.fromkeys(tags))

    @property
    def description(self) -> str:
        return (
            f"{marker(self.vdc)}\n"
            f"Compute profile: {self.compute.name}. Storage profile: {self.storage_profile.name}. "
            f"Image: {self.image.name}.\n"
            f"Created by: {self.requested_by}."
        )


def marker(vdc: Vdc) -> str:
    """The first line of the description of every VM flex.plane clones for a VDC."""
    return f"Managed by flex.plane: a VM of VDC {vdc.id}."


def plan(ctx: Context, spec: CreateVm) -> Plan:
    """The create checked: the caller may create in the request's VDC, which allows what is asked."""
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC to create the VM in with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)  # a member of the VDC, or ADMIN
    vdc = vdcs.get_vdc(ctx, ctx.vdc)
    name = validate_name(spec.name)
    compute = catalog_choice(
        "compute_profile",
        "compute profile",
        vdc.allows_compute_profile(spec.compute_profile),
        vdc,
        spec.compute_profile,
        lambda: catalog.compute_profile(ctx, spec.compute_profile),
    )
    storage_profile = catalog_choice(
        "storage_profile",
        "storage profile",
        vdc.allows_storage_profile(spec.storage_profile),
        vdc,
        spec.storage_profile,
        lambda: catalog.storage_profile(ctx, spec.storage_profile),
    )
    image = catalog_choice(
        "image",
        "image",
        vdc.allows_image(spec.image),
        vdc,
        spec.image,
        lambda: catalog.image(ctx, spec.image),
    )

    zone = spec.zone
    if not zone:
        if len(vdc.zones) != 1:
            raise ValidationFailed(
                "zone", f"name the zone: VDC {vdc.id} may use {', '.join(vdc.zones) or 'none'}"
            )
        zone = vdc.zones[0]
    if not vdc.allows_zone(zone) or zone not in {z.id for z in catalog.zones(ctx)}:
        raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone!r}")
    storage = storage_profile.storage_in(zone)
    if storage is None:
        raise ValidationFailed(
            "storage_profile", f"storage profile {storage_profile.name!r} offers no storage in zone {zone}"
        )

    disk_gb = spec.disk_gb if spec.disk_gb is not None else max(storage_profile.default_gb, image.min_disk_gb)
    if disk_gb < image.min_disk_gb:
        raise ValidationFailed(
            "disk_gb", f"image {image.name} needs a disk of at least {image.min_disk_gb} GiB"
        )
    if not storage_profile.min_gb <= disk_gb <= storage_profile.max_gb:
        raise ValidationFailed(
            "disk_gb",
            f"storage profile {storage_profile.name} allows disks of {storage_profile.min_gb} to "
            f"{storage_profile.max_gb} GiB, not {disk_gb}",
        )
    ssh_keys = parse_ssh_keys(spec.ssh_keys)
    user_data = validate_user_data(spec.user_data)
    key = validate_idempotency_key(spec.idempotency_key)
    principal = ctx.principal
    return Plan(
        vdc=vdc,
        name=name,
        compute=compute,
        storage_profile=storage_profile,
        image=image,
        zone=zone,
        storage=storage,
        disk_gb=disk_gb,
        ssh_keys=ssh_keys,
        user_data=user_data,
        idempotency_key=key,
        requested_by=f"{principal.name or principal.subject} ({principal.email or principal.subject})",
    )


# ------------------------------------------------------------------------------------------ the VDC now


def existing(zones: Mapping[str, ClusterResources], plan: Plan) -> VirtualMachine | None:
    """The VM an earlier create made: same idempotency key, else same name, in the same VDC."""
    by_name: VirtualMachine | None = None
    for zone, resources in zones.items():
        for guest in resources.vms:
            if vdc_in(guest.tags) != plan.vdc.id:
                continue
            if plan.idempotency_tag and plan.idempotency_tag in guest.tag_list:
                return VirtualMachine.from_guest(zone, guest)
            if guest.name == plan.name and by_name is None:
                by_name = VirtualMachine.from_guest(zone, guest)
    return by_name


def everything_now(ctx: Context, vdc: Vdc) -> dict[str, ClusterResources]:
    """``/cluster/resources`` of each of the VDC's zones, read now (under its lock); ``Unavailable``
    unless all answered: a zone that does not could hold the VM an earlier create made, or VMs the
    quota counts. (A zone holding VMs of the VDC cannot be taken from it.)
    """
    fan = proxmox().cluster_resources([z for z in catalog.zone_targets(ctx) if vdc.allows_zone(z.zone)])
    if fan.failures:
        zone, failure = sorted(fan.failures.items())[0]
        raise Unavailable(
            zone,
            f"cannot create a VM in VDC {vdc.id} while zone(s) {', '.join(sorted(fan.failures))} do not "
            f"answer: its VMs there count against its quota ({failure.message})",
        )
    return fan.results


def usage(zones: Iterable[ClusterResources], vdc: Vdc) -> Usage:
    """What the VDC's VMs use, from every zone's resources."""
    total = Usage()
    for resources in zones:
        for guest in resources.vms:
            if vdc_in(guest.tags) == vdc.id:
                total = total + Usage.of_guest(guest)
    return total


@contextmanager
def vdc_lock(ctx: Context, vdc: Vdc) -> Iterator[locks.HeldLock]:
    with locks.vdc_lock(ctx, vdc.id, ttl=LOCK_TTL, wait=LOCK_WAIT) as held:
        yield held


def still_held(held: locks.HeldLock, vdc: Vdc) -> None:
    """Before a write the lock guards: it may have been lost (this replica stalled past its ttl)."""
    if held.lost:
        raise Conflict(f"VDC {vdc.id} was busy (this request lost its lock), retry")
