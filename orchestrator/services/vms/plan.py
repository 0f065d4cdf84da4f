"""A create, planned: what it asks for, checked against the catalog and the VDC; and what the VDC has
now (its VMs in every zone, what they use, the one an earlier create made), read under its lock."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace

from orchestrator.errors import Conflict, Unavailable, ValidationFailed
from orchestrator.models import ComputeProfile, Image, StorageProfile, Usage, Vdc
from orchestrator.models.security_groups import DEFAULT_GROUP, group_tag
from orchestrator.models.tasks import Task
from orchestrator.models.vms import (
    COMPUTE_PROFILE_TAG_PREFIX,
    IMAGE_TAG_PREFIX,
    SPEC_TAG_PREFIX,
    STORAGE_PROFILE_TAG_PREFIX,
    VirtualMachine,
    idempotency_tag,
    is_tag,
    request_tag,
    tag_value,
    vdc_in,
)
from orchestrator.services import access, catalog, locks, security_groups, vdcs
from orchestrator.services.context import Context
from orchestrator.services.networks import nics
from orchestrator.services.networks.nics import NicRequest
from orchestrator.services.placement import Placement, PlacementRequest
from orchestrator.services.vms.inputs import (
    catalog_choice,
    parse_ssh_keys,
    validate_idempotency_key,
    validate_name,
    validate_user_data,
)
from orchestrator.sources.proxmox import ClusterResources
from orchestrator.sources.qemu_config import MAX_NICS

# The tag of a VM with cloud-init user and meta snippets of its own (``Bootstrap``): its delete removes them.
BOOTSTRAP_TAG = "fp-ci-bootstrap"
# The VDC's lock: held from the idempotency check until the new VM is tagged.
LOCK_TTL = 120.0
LOCK_WAIT = 120.0


@dataclass(frozen=True)
class Bootstrap:
    """Cloud-init data that replaces what Proxmox generates, for a VM another system configures (a Cluster
    API machine): its user data (``user=`` snippet, instead of the user and SSH keys Proxmox writes) and
    its meta data (``meta=`` snippet): ``instance-id`` the VM's SMBIOS uuid, ``local-hostname``
    ``hostname``. The network configuration stays Proxmox's (the NICs' addresses)."""

    user_data: str
    hostname: str


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
    # The NICs to give it (None: one on the VDC's default network in the zone it goes to).
    networks: tuple[NicRequest, ...] | None = None
    # The VDC's security groups it is in (None: ``default``).
    security_groups: tuple[str, ...] | None = None
    # Cloud-init user and meta data of its own (None: Proxmox generates them; ``user_data`` is vendor data).
    bootstrap: Bootstrap | None = None
    # Hosts (``<zone>/<node>``) placement must not choose: ones whose agent a caller found away.
    avoid_hosts: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Created:
    """A create's answer. ``created`` is False when an earlier create's VM was returned."""

    vm: VirtualMachine
    task: Task | None
    placement: Placement | None
    created: bool


@dataclass(frozen=True)
class Plan:
    """A create, validated: everything it needs from the catalog and the request.

    ``zone`` is None when the create named none and its VDC may use several: placement then chooses
    among ``storages``' zones (each with the storage the disk goes to there), and ``in_zone`` gives the
    plan in the zone chosen.
    """

    vdc: Vdc
    name: str
    compute: ComputeProfile
    storage_profile: StorageProfile
    image: Image
    zone: str | None
    storages: Mapping[str, str]
    disk_gb: int
    ssh_keys: list[str]
    user_data: str | None
    idempotency_key: str | None
    requested_by: str
    # The NICs asked for; None: one on the VDC's default network of the zone it goes to; (): none.
    networks: tuple[NicRequest, ...] | None = None
    # The VDC's security groups its firewall follows (checked; ``default`` unless the create names any).
    security_groups: tuple[str, ...] = (DEFAULT_GROUP,)
    bootstrap: Bootstrap | None = None

    @property
    def usage(self) -> Usage:
        return Usage(
            vcpus=self.compute.vcpus, memory_mib=self.compute.memory_mib, disk_gb=self.disk_gb, vms=1
        )

    @property
    def placed(self) -> str:
        """The zone, once there is one (named by the create, or chosen by placement)."""
        if self.zone is None:
            raise AssertionError("the plan has no zone yet: place it first (in_zone)")
        return self.zone

    @property
    def storage(self) -> str:
        return self.storages[self.placed]

    def in_zone(self, zone: str) -> Plan:
        return replace(self, zone=zone)

    def request_in(self, zone: str) -> PlacementRequest:
        return PlacementRequest(
            zone=zone,
            vdc=self.vdc.id,
            vcpus=self.compute.vcpus,
            memory_mib=self.compute.memory_mib,
            disk_gb=self.disk_gb,
            storage=self.storages[zone],
            image=self.image.name,
        )

    @property
    def placement_request(self) -> PlacementRequest:
        return self.request_in(self.placed)

    @property
    def placement_requests(self) -> dict[str, PlacementRequest]:
        """One request per zone the VM may go to: the named zone, or every zone placement may choose."""
        zones = [self.zone] if self.zone is not None else list(self.storages)
        return {zone: self.request_in(zone) for zone in zones}

    @property
    def spec_tag(self) -> str:
        """The tag recording what the create asked for (a hash): a create of the same name asking for
        something else is another request, not a retry of this one."""
        asked = {
            "compute_profile": self.compute.name,
            "storage_profile": self.storage_profile.name,
            "image": self.image.name,
            "disk_gb": self.disk_gb,
            # The zones it may go to, as asked (placement's choice, ``in_zone``, changes nothing here).
            "zones": sorted(self.storages),
            "ssh_keys": self.ssh_keys,
            "user_data": self.user_data,
        }
        if self.networks is not None:  # absent from specs of VMs made before networks or on the default
            asked["networks"] = [[n.network, n.address] for n in self.networks]
        if self.security_groups != (DEFAULT_GROUP,):
            asked["security_groups"] = list(self.security_groups)
        if self.bootstrap is not None:
            asked["bootstrap"] = [self.bootstrap.user_data, self.bootstrap.hostname]
        digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
        return SPEC_TAG_PREFIX + digest[:16]

    @property
    def idempotency_tag(self) -> str | None:
        return idempotency_tag(self.idempotency_key) if self.idempotency_key else None

    @property
    def tags(self) -> tuple[str, ...]:
        """What the VM records about itself: its VDC, the create that made it, what it was made from,
        and the size it asked for (the quota counts the clone at that size before it has it)."""
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
        tags.extend(group_tag(group) for group in self.security_groups)
        if self.bootstrap is not None:
            tags.append(BOOTSTRAP_TAG)
        tags.append(request_tag(self.compute.vcpus, self.compute.memory_mib, self.disk_gb))
        tags.append(self.spec_tag)
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


def allowed_compute_profile(ctx: Context, vdc: Vdc, name: str, field: str) -> ComputeProfile:
    """The compute profile ``name`` if ``vdc`` allows it, else ``ValidationFailed`` naming ``field``."""
    read = functools.partial(catalog.compute_profile, ctx, name)
    return catalog_choice(field, "compute profile", vdc.allows_compute_profile(name), vdc, name, read)


def allowed_storage_profile(ctx: Context, vdc: Vdc, name: str, field: str) -> StorageProfile:
    """The storage profile ``name`` if ``vdc`` allows it, else ``ValidationFailed`` naming ``field``."""
    read = functools.partial(catalog.storage_profile, ctx, name)
    return catalog_choice(field, "storage profile", vdc.allows_storage_profile(name), vdc, name, read)


def plan(ctx: Context, spec: CreateVm) -> Plan:
    """The create checked: the caller may create in the request's VDC, which allows what is asked."""
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC to create the VM in with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)  # a member of the VDC, or ADMIN
    vdc = vdcs.get_vdc(ctx, ctx.vdc)
    name = validate_name(spec.name)
    compute = allowed_compute_profile(ctx, vdc, spec.compute_profile, "compute_profile")
    storage_profile = allowed_storage_profile(ctx, vdc, spec.storage_profile, "storage_profile")
    image = catalog_choice(
        "image",
        "image",
        vdc.allows_image(spec.image),
        vdc,
        spec.image,
        lambda: catalog.image(ctx, spec.image),
    )

    known = {z.id for z in catalog.zones(ctx)}
    zone = spec.zone or None
    requests = tuple(spec.networks) if spec.networks is not None else None
    named = nics.zone_of(requests or (), "networks")
    if named is not None:
        if zone is not None and zone != named:
            raise ValidationFailed("networks", f"the VM goes to zone {zone}: its networks must be there too")
        zone = named
    if requests is not None and len(requests) > MAX_NICS:
        raise ValidationFailed("networks", f"a VM has at most {MAX_NICS} NICs")
    if zone is None:
        # Placement chooses among the zones the VDC may use where the storage profile has storage.
        usable = [z for z in vdc.zones if z in known]
        if not usable:
            raise ValidationFailed("zone", f"VDC {vdc.id} may use no zone")
        storages = {z: s for z in usable if (s := storage_profile.storage_in(z)) is not None}
        if not storages:
            raise ValidationFailed(
                "storage_profile",
                f"storage profile {storage_profile.name!r} offers no storage in zone(s) {', '.join(usable)}",
            )
        if len(storages) == 1:
            [zone] = storages
    else:
        if not vdc.allows_zone(zone) or zone not in known:
            raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone!r}")
        storage = storage_profile.storage_in(zone)
        if storage is None:
            raise ValidationFailed(
                "storage_profile",
                f"storage profile {storage_profile.name!r} offers no storage in zone {zone}",
            )
        storages = {zone: storage}

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
    bootstrap = _bootstrap(spec.bootstrap)
    key = validate_idempotency_key(spec.idempotency_key)
    principal = ctx.principal
    return Plan(
        vdc=vdc,
        name=name,
        compute=compute,
        storage_profile=storage_profile,
        image=image,
        zone=zone,
        storages=storages,
        disk_gb=disk_gb,
        ssh_keys=ssh_keys,
        user_data=user_data,
        idempotency_key=key,
        networks=requests,
        security_groups=tuple(security_groups.check_membership(ctx, vdc, spec.security_groups)),
        bootstrap=bootstrap,
        requested_by=f"{principal.name or principal.subject} ({principal.email or principal.subject})",
    )


def _bootstrap(bootstrap: Bootstrap | None) -> Bootstrap | None:
    """The bootstrap data checked: user data cloud-init uses, a hostname that is a DNS label."""
    if bootstrap is None:
        return None
    try:
        user_data = validate_user_data(bootstrap.user_data)
    except ValidationFailed as exc:
        raise ValidationFailed("bootstrap.user_data", exc.message) from None
    if user_data is None:
        raise ValidationFailed("bootstrap.user_data", "bootstrap user data must not be empty")
    try:
        hostname = validate_name(bootstrap.hostname)
    except ValidationFailed:
        raise ValidationFailed(
            "bootstrap.hostname", f"{bootstrap.hostname!r} is not a hostname (one lowercase DNS label)"
        ) from None
    return Bootstrap(user_data, hostname)


# ------------------------------------------------------------------------------------------ the VDC now


def existing(zones: Mapping[str, ClusterResources], plan: Plan) -> VirtualMachine | None:
    """The VM an earlier create of this one made: the same idempotency key, else the same name and the
    same spec, in the same VDC (a retry). The same name with another spec is another request for a
    name taken: ``ValidationFailed`` on the name."""
    by_name: VirtualMachine | None = None
    for zone, resources in zones.items():
        for guest in resources.vms:
            if vdc_in(guest.tags) != plan.vdc.id:
                continue
            if plan.idempotency_tag and plan.idempotency_tag in guest.tag_list:
                return VirtualMachine.from_guest(zone, guest)
            if guest.name == plan.name and by_name is None:
                by_name = VirtualMachine.from_guest(zone, guest)
    if by_name is not None and not _same_spec(by_name, plan):
        raise ValidationFailed(
            "name",
            f"VDC {plan.vdc.id} already has a VM named {plan.name!r} ({by_name.id}), made with another "
            "spec: choose another name (the same name and spec return that VM, as a retry does)",
        )
    return by_name


def _same_spec(vm: VirtualMachine, plan: Plan) -> bool:
    """Whether ``vm`` is what ``plan`` asks for: its spec tag; a VM made before spec tags were recorded
    is compared by what its tags say it was made from, and its zone."""
    recorded = tag_value(vm.tags, SPEC_TAG_PREFIX)
    if recorded is not None:
        return SPEC_TAG_PREFIX + recorded == plan.spec_tag
    return (
        tag_value(vm.tags, COMPUTE_PROFILE_TAG_PREFIX) in (None, plan.compute.name)
        and tag_value(vm.tags, STORAGE_PROFILE_TAG_PREFIX) in (None, plan.storage_profile.name)
        and tag_value(vm.tags, IMAGE_TAG_PREFIX) in (None, plan.image.name)
        and vm.zone in plan.storages
    )


def everything_now(ctx: Context, vdc: Vdc) -> dict[str, ClusterResources]:
    """``/cluster/resources`` of each of the VDC's zones, read now (under its lock); ``Unavailable``
    unless all answered: a zone that does not could hold the VM an earlier create made, or VMs the
    quota counts. (A zone holding VMs of the VDC cannot be taken from it.)
    """
    fan = ctx.proxmox.cluster_resources([z for z in catalog.zone_targets(ctx) if vdc.allows_zone(z.zone)])
    if fan.failures:
        zone, failure = sorted(fan.failures.items())[0]
        raise Unavailable(
            zone,
            f"cannot create a VM in VDC {vdc.id} while zone(s) {', '.join(sorted(fan.failures))} do not "
            f"answer: its VMs there count against its quota ({failure.message})",
        )
    return fan.results


def usage(zones: Iterable[ClusterResources], vdc: Vdc) -> Usage:
    """What the VDC's VMs and volumes use, from every zone's resources."""
    total = Usage()
    for resources in zones:
        for guest in (*resources.vms, *resources.holders):
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
