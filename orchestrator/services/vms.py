"""Virtual machines: listing and reading them, creating them, and their whole life.

Authorization: every call needs USER or ADMIN. A VM is visible to the members of its VDC (and to
ADMIN); one of another VDC is reported exactly like one that does not exist. Creating needs the
VDC named by the request (the ``FlexPlane-VDC-ID`` header).

A create follows ARCHITECTURE.md's flow. Under the VDC's lock (which serializes creates of one VDC
across replicas): an existing VM of the same idempotency key or name is returned instead of a second
one; the quota is checked against the VDC's live usage; placement picks the host; the VM is cloned
from the image's template and tagged, so that it is visible (and counted) before the lock is
released. Then, outside the lock, it is configured (profile, cloud-init), its disk grown, and started.
Whatever fails after the clone removes the VM again, so that nothing half-made is left behind.

A tenant's own cloud-init data (``user_data``) reaches the VM as cloud-init *vendor* data: Proxmox reads
custom cloud-init only from a snippet file on the node, so the node's agent writes it as
``fp-<vdc>-<vmid>-vendor.yaml`` and the VM's ``cicustom`` names it. Proxmox keeps generating the user
data (user, SSH keys, network), and cloud-init merges the tenant's cloud-config in. The snippet goes
with the VM: a failed create and a delete remove it.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import json
import logging
import math
import random
import re
import struct
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings

from agentclient import AgentDeadlineExceeded, AgentError, AgentUnavailable, ProxmoxUnreachable
from agentclient.errors import ImageRefused
from agentclient.snippets import check_snippet_name
from agentclient.templates import TemplateRef
from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    NotFound,
    Unavailable,
    UpstreamFailure,
    ValidationFailed,
)
from orchestrator.models import ComputeProfile, Host, Image, StorageProfile, Usage, Vdc
from orchestrator.models.tasks import Task
from orchestrator.models.vms import (
    COMPUTE_PROFILE_TAG_PREFIX,
    GIB,
    IMAGE_TAG_PREFIX,
    STORAGE_PROFILE_TAG_PREFIX,
    VirtualMachine,
    idempotency_tag,
    is_tag,
    join_tags,
    parse_tags,
    parse_vm_id,
    vdc_in,
    vdc_of,
)
from orchestrator.services import access, catalog, inventory, locks, vdcs
from orchestrator.services.context import Context
from orchestrator.services.placement import Placement, PlacementRequest, place
from orchestrator.services.tasks import ZoneApi
from orchestrator.sources.proxmox import proxmox

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_PAGE_SIZE = 50

# How long a request follows Proxmox's tasks before it answers with the task still running (seconds).
CLONE_TIMEOUT = 300.0
TASK_TIMEOUT = 120.0
# A graceful shutdown may take its whole timeout; the answer waits at most this long for it.
SHUTDOWN_WAIT = 30.0
DEFAULT_SHUTDOWN_TIMEOUT = 60
MAX_SHUTDOWN_TIMEOUT = 3600
# Downloading and importing an image the first time it is used on a host.
TEMPLATE_TIMEOUT = 1800.0
# The VDC's lock: held from the idempotency check until the new VM is tagged.
LOCK_TTL = 120.0
LOCK_WAIT = 120.0
# Concurrent creates in one zone can be handed the same next free VMID: the loser asks again.
VMID_ATTEMPTS = 8

MAX_SSH_KEYS = 32
MAX_SSH_KEY_LENGTH = 16 * 1024
MAX_USER_DATA_BYTES = 64 * 1024
# How user data must begin for cloud-init to use it (as vendor data): cloud-config, a script, an
# include list, a boothook, a part handler, a Jinja template or a MIME multipart archive.
USER_DATA_HEADERS = (
    "#cloud-config",
    "#!",
    "#include",
    "#cloud-boothook",
    "#part-handler",
    "## template: jinja",
    "Content-Type: multipart/",
)
MAX_IDEMPOTENCY_KEY_LENGTH = 255
# What Proxmox accepts as a VM name, and what makes a good hostname: one lowercase DNS label.
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# The OpenSSH public key types accepted (DSA is not: OpenSSH itself no longer accepts it).
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
MIN_RSA_BITS = 2048
_DRIVE = re.compile(r"^(scsi|virtio|sata|ide)(\d+)$")
_SIZE = re.compile(r"(?:^|,)size=(\d+(?:\.\d+)?)([KMGT]?)(?:,|$)")
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
VM = "virtual machine"


# ------------------------------------------------------------------------------------------ reading

SortKey = tuple[str, str, int]


@dataclass(frozen=True)
class Page:
    """One page of a listing, with keyset cursors (stable while VMs come and go)."""

    items: list[VirtualMachine]
    cursors: list[str]
    has_next: bool

    @property
    def end_cursor(self) -> str | None:
        return self.cursors[-1] if self.cursors else None


@dataclass(frozen=True)
class VmFilter:
    """Which VMs a listing shows: all the conditions given hold."""

    status: str | None = None
    zone: str | None = None
    name_contains: str | None = None

    def matches(self, zone: str, item: Mapping[str, Any]) -> bool:
        if self.zone is not None and zone != self.zone:
            return False
        if self.status is not None and item.get("status") != self.status:
            return False
        return self.name_contains is None or self.name_contains.lower() in str(item.get("name") or "").lower()


def encode_cursor(key: SortKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str) -> SortKey:
    try:
        name, zone, vmid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return (str(name), str(zone), int(vmid))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ValidationFailed("after", "'after' is not a cursor this API handed out") from None


def _sort_key(zone: str, item: Mapping[str, Any]) -> SortKey:
    return (str(item.get("name") or ""), zone, int(item["vmid"]))


def list_vms(
    ctx: Context, first: int | None = None, after: str | None = None, where: VmFilter | None = None
) -> Page:
    """The VMs of the VDCs the request may see, sorted by name, one Proxmox call per zone.

    Listings never ask a VM's guest agent: ``ip_addresses`` stays unknown (``None``).
    """
    size = DEFAULT_PAGE_SIZE if first is None else first
    if not 1 <= size <= settings.FLEXPLANE_PAGE_SIZE_MAX:
        raise ValidationFailed("first", f"'first' must be between 1 and {settings.FLEXPLANE_PAGE_SIZE_MAX}")
    start = decode_cursor(after) if after else None
    visible = access.visible_vdcs(ctx)
    where = where or VmFilter()
    filtering = where != VmFilter()

    rows: list[tuple[SortKey, str, dict[str, Any]]] = []
    for zone, guests in inventory.zone_resources(ctx).guests.items():
        if where.zone is not None and zone != where.zone:
            continue
        for item in guests:
            vdc = vdc_in(item.get("tags"))
            if vdc is None or (visible is not None and vdc not in visible):
                continue
            if filtering and not where.matches(zone, item):
                continue
            key = _sort_key(zone, item)
            if start is None or key > start:
                rows.append((key, zone, item))
    # Only the page (and one more, to know whether another follows) is sorted and built.
    page = heapq.nsmallest(size + 1, rows, key=lambda row: row[0])
    return Page(
        items=[VirtualMachine.from_resource(zone, item) for _, zone, item in page[:size]],
        cursors=[encode_cursor(key) for key, _, _ in page[:size]],
        has_next=len(page) > size,
    )


def _guest(items: Iterable[dict[str, Any]], vmid: int) -> dict[str, Any] | None:
    """The QEMU guest (not a template) of that VMID among ``/cluster/resources`` entries."""
    for item in items:
        if item.get("type") == "qemu" and str(item.get("vmid")) == str(vmid) and not item.get("template"):
            return item
    return None


def _find(api: ZoneApi, vmid: int) -> dict[str, Any] | None:
    return _guest(api.resources("vm"), vmid)


def _locate(ctx: Context, ident: str) -> tuple[ZoneApi, VirtualMachine]:
    """A VM the caller may see, read live from its zone (one call); ``NotFound`` otherwise."""
    visible = access.visible_vdcs(ctx)
    parsed = parse_vm_id(ident)
    if parsed is None:
        raise NotFound(VM, ident)
    zone, vmid = parsed
    try:
        api = ZoneApi(ctx, zone)
    except NotFound:
        raise NotFound(VM, ident) from None
    item = _find(api, vmid)
    if item is not None:
        vm = VirtualMachine.from_resource(zone, item)
        if vm.vdc and (visible is None or vm.vdc in visible):
            return api, vm
    raise NotFound(VM, ident)


def _guest_addresses(api: ZoneApi, vm: VirtualMachine) -> VirtualMachine:
    """The VM with its addresses from the guest agent, when it runs one (``None`` otherwise)."""
    if not vm.running:
        return vm
    try:
        answer = api.guest_interfaces(vm.host, vm.vmid)
    except (UpstreamFailure, Unavailable, Conflict) as exc:
        # No guest agent, or it does not answer: the addresses are unknown, the VM itself is not.
        logger.debug("no addresses for %s: %s", vm.id, exc.message)
        return vm
    return vm.with_interfaces(answer)


def get_vm(ctx: Context, ident: str) -> VirtualMachine:
    """One VM, live, with its IP addresses from its guest agent where Proxmox has them."""
    api, vm = _locate(ctx, ident)
    return _guest_addresses(api, vm)


def _reread(api: ZoneApi, vm: VirtualMachine) -> VirtualMachine:
    """The VM as Proxmox reports it now (after an operation); as it was if it is gone meanwhile."""
    item = _find(api, vm.vmid)
    return VirtualMachine.from_resource(api.zone, item) if item is not None else vm


# ------------------------------------------------------------------------------------------ validation


def validate_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise ValidationFailed(
            "name",
            f"{name!r} is not a valid VM name: use 1 to 63 lowercase letters, digits and hyphens, "
            "starting and ending with a letter or digit (a DNS label)",
        )
    return name


def _ssh_string(blob: bytes, offset: int) -> tuple[bytes, int]:
    if offset + 4 > len(blob):
        raise ValueError("truncated")
    (length,) = struct.unpack(">I", blob[offset : offset + 4])
    end = offset + 4 + length
    if end > len(blob):
        raise ValueError("truncated")
    return blob[offset + 4 : end], end


def parse_ssh_key(line: str, index: int) -> str:
    """One OpenSSH public key (``<type> <base64> [comment]``), checked; ``ValidationFailed`` otherwise."""

    def refuse(why: str) -> ValidationFailed:
        return ValidationFailed("ssh_keys", f"SSH key {index + 1} is not a valid public key: {why}")

    text = line.strip()
    if len(text) > MAX_SSH_KEY_LENGTH:
        raise refuse(f"it is longer than {MAX_SSH_KEY_LENGTH} characters")
    if any(ch in text for ch in "\r\n\x00"):
        raise refuse("give one key per entry, on a single line")
    parts = text.split(None, 2)
    if len(parts) < 2:
        raise refuse("expected '<type> <base64 key> [comment]'")
    kind, body = parts[0], parts[1]
    if kind not in SSH_KEY_TYPES:
        raise refuse(f"unknown key type {kind[:40]!r} (accepted: {', '.join(SSH_KEY_TYPES)})")
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise refuse("the key is not valid base64") from None
    try:
        embedded, offset = _ssh_string(blob, 0)
        if embedded.decode("ascii", "replace") != kind:
            raise refuse(
                f"the key data is of type {embedded[:40].decode('ascii', 'replace')!r}, not {kind!r}"
            )
        if kind == "ssh-rsa":
            _exponent, offset = _ssh_string(blob, offset)
            modulus, offset = _ssh_string(blob, offset)
            bits = int.from_bytes(modulus, "big").bit_length()
            if bits < MIN_RSA_BITS:
                raise refuse(f"RSA keys need at least {MIN_RSA_BITS} bits, this one has {bits}")
        elif kind == "ssh-ed25519":
            key, offset = _ssh_string(blob, offset)
            if len(key) != 32:
                raise refuse("an Ed25519 key is 32 bytes long")
        else:
            _curve, offset = _ssh_string(blob, offset)
            _point, offset = _ssh_string(blob, offset)
    except ValueError:
        raise refuse("the key data is truncated") from None
    if len(parts) == 3 and not parts[2].isprintable():
        raise refuse("the comment contains control characters")
    return " ".join(parts)


def parse_ssh_keys(keys: Sequence[str]) -> list[str]:
    if len(keys) > MAX_SSH_KEYS:
        raise ValidationFailed("ssh_keys", f"at most {MAX_SSH_KEYS} SSH keys may be given")
    return [parse_ssh_key(key, index) for index, key in enumerate(keys)]


def validate_user_data(user_data: str | None) -> str | None:
    """The tenant's cloud-init data if cloud-init can use it (None when none is given)."""
    if user_data is None or user_data == "":
        return None
    size = len(user_data.encode("utf-8", "surrogatepass"))
    if size > MAX_USER_DATA_BYTES:
        raise ValidationFailed(
            "user_data", f"user data is {size} bytes; at most {MAX_USER_DATA_BYTES} bytes are accepted"
        )
    if "\x00" in user_data:
        raise ValidationFailed("user_data", "user data must be text, without NUL characters")
    try:
        user_data.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationFailed("user_data", "user data must be valid UTF-8 text") from None
    if not user_data.lstrip("\ufeff").startswith(USER_DATA_HEADERS):
        raise ValidationFailed(
            "user_data",
            "cloud-init would ignore this user data: begin it with #cloud-config (or #!, #include, "
            "#cloud-boothook, #part-handler, ## template: jinja, or a MIME multipart header)",
        )
    return user_data


def validate_idempotency_key(key: str | None) -> str | None:
    if key is None or key == "":
        return None
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH or not key.isprintable():
        raise ValidationFailed(
            "idempotency_key",
            f"the idempotency key must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} printable characters",
        )
    return key


# ------------------------------------------------------------------------------------------ create


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
class _Plan:
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
    def tags(self) -> str:
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
        return join_tags(tags)

    @property
    def description(self) -> str:
        return (
            f"{_marker(self.vdc)}\n"
            f"Compute profile: {self.compute.name}. Storage profile: {self.storage_profile.name}. "
            f"Image: {self.image.name}.\n"
            f"Created by: {self.requested_by}."
        )


def _marker(vdc: Vdc) -> str:
    """The first line of the description of every VM flex.plane clones for a VDC."""
    return f"Managed by flex.plane: a VM of VDC {vdc.id}."


def _catalog_choice(field: str, noun: str, allowed: bool, vdc: Vdc, name: str, read: Callable[[], T]) -> T:
    """A catalog object the VDC allows, or ``ValidationFailed`` naming the field."""
    try:
        found = read()
    except NotFound:
        raise ValidationFailed(field, f"there is no {noun} {name!r}") from None
    if not allowed:
        raise ValidationFailed(field, f"VDC {vdc.id} does not allow {noun} {name!r}")
    return found


def _plan(ctx: Context, spec: CreateVm) -> _Plan:
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC to create the VM in with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)  # a member of the VDC, or ADMIN
    vdc = vdcs.get_vdc(ctx, ctx.vdc)
    name = validate_name(spec.name)
    compute = _catalog_choice(
        "compute_profile",
        "compute profile",
        vdc.allows_compute_profile(spec.compute_profile),
        vdc,
        spec.compute_profile,
        lambda: catalog.compute_profile(ctx, spec.compute_profile),
    )
    storage_profile = _catalog_choice(
        "storage_profile",
        "storage profile",
        vdc.allows_storage_profile(spec.storage_profile),
        vdc,
        spec.storage_profile,
        lambda: catalog.storage_profile(ctx, spec.storage_profile),
    )
    image = _catalog_choice(
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
    return _Plan(
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


def _existing(guests: Mapping[str, Iterable[Mapping[str, Any]]], plan: _Plan) -> VirtualMachine | None:
    """The VM an earlier create made: same idempotency key, else same name, in the same VDC."""
    by_name: VirtualMachine | None = None
    for zone, items in guests.items():
        for item in items:
            tags = parse_tags(item.get("tags"))
            if item.get("type") != "qemu" or item.get("template") or vdc_of(tags) != plan.vdc.id:
                continue
            if plan.idempotency_tag and plan.idempotency_tag in tags:
                return VirtualMachine.from_resource(zone, item)
            if item.get("name") == plan.name and by_name is None:
                by_name = VirtualMachine.from_resource(zone, item)
    return by_name


def _everything_now(ctx: Context, vdc: Vdc) -> dict[str, list[dict[str, Any]]]:
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


def _usage(results: Mapping[str, Iterable[Mapping[str, Any]]], vdc: Vdc) -> Usage:
    """What the VDC's VMs use, from every zone's resources."""
    total = Usage()
    for items in results.values():
        for item in items:
            guest = item.get("type") == "qemu" and not item.get("template")
            if guest and vdc_of(parse_tags(item.get("tags"))) == vdc.id:
                total = total + Usage.of_guest(item)
    return total


def _host(ctx: Context, zone: str, node: str) -> Host:
    for host in catalog.hosts(ctx):
        if host.zone == zone and host.node == node:
            return host
    raise Unavailable(f"{zone}/{node}", f"host {node} of zone {zone} is no longer in the catalog")


def _ensure_template(ctx: Context, plan: _Plan, node: str) -> TemplateRef:
    """The image's template on ``node`` (downloaded and imported by the host's agent the first time)."""
    host = _host(ctx, plan.zone, node)
    where = f"{plan.zone}/{node}"
    try:
        return proxmox().pool.ensure_template(
            host.target,
            plan.image.name,
            plan.image.source_url,
            plan.image.checksum,
            plan.storage,
            timeout=TEMPLATE_TIMEOUT,
        )
    except ValueError as exc:
        raise ValidationFailed("image", f"image {plan.image.name} cannot be used: {exc}") from exc
    except ImageRefused as exc:
        raise ValidationFailed("image", f"image {plan.image.name} cannot be used: {exc}") from exc
    except (AgentUnavailable, ProxmoxUnreachable, AgentDeadlineExceeded) as exc:
        raise Unavailable(where, f"the image's template could not be made ready on {node}: {exc}") from exc
    except AgentError as exc:
        raise UpstreamFailure(where, str(exc)) from exc


@contextmanager
def _vdc_lock(ctx: Context, vdc: Vdc) -> Iterator[locks.HeldLock]:
    with locks.vdc_lock(ctx, vdc.id, ttl=LOCK_TTL, wait=LOCK_WAIT) as held:
        yield held


def _still_held(held: locks.HeldLock, vdc: Vdc) -> None:
    """Before a write the lock guards: it may have been lost (this replica stalled past its ttl)."""
    if held.lost:
        raise Conflict(f"VDC {vdc.id} was busy (this request lost its lock), retry")


def _clone(api: ZoneApi, plan: _Plan, template: TemplateRef, node: str) -> tuple[int, Task]:
    """A linked clone of the template on ``node``, in the VDC's pool; retried on a VMID taken meanwhile."""
    params: dict[str, Any] = {"name": plan.name, "pool": plan.vdc.pool, "description": plan.description}
    if template.node != node:
        params["target"] = node
    for attempt in range(VMID_ATTEMPTS):
        vmid = api.next_vmid()
        try:
            answer = api.clone(template.node, template.vmid, vmid, {**params, "full": False})
        except UpstreamFailure as exc:
            # Another create took the id between nextid and clone: nothing was made, ask again.
            if "already exists" in exc.message and attempt + 1 < VMID_ATTEMPTS:
                time.sleep(random.uniform(0.01, 0.1))  # noqa: S311 - jitter, not security
                continue
            raise
        try:
            task = api.run(answer, plan.vdc.id, f"cloning VM {plan.name}", CLONE_TIMEOUT)
            if task.running:
                raise Unavailable(
                    f"{api.zone}/{template.node}",
                    f"the clone of VM {plan.name} ({api.zone}/{vmid}) did not end within {CLONE_TIMEOUT:g} s",
                )
        except FlexPlaneError as exc:
            _discard(api, plan, vmid, exc, tagged=False)
            raise
        return vmid, task
    raise AssertionError("unreachable: the last attempt returns or raises")


def _drive_size(value: str) -> int:
    found = _SIZE.search(value)
    return int(float(found.group(1)) * _SIZE_UNITS[found.group(2)]) if found else 0


def _boot_disk(zone: str, config: Mapping[str, Any]) -> tuple[str, str]:
    """The key and value of the VM's boot disk: the first disk of the boot order, else the first disk."""
    disks = {
        key: str(value)
        for key, value in config.items()
        if _DRIVE.match(key) and "media=cdrom" not in str(value) and "cloudinit" not in str(value)
    }
    order = str(config.get("boot") or "")
    if order.startswith("order="):
        for device in order[len("order=") :].split(";"):
            if device in disks:
                return device, disks[device]
    for prefix in ("scsi", "virtio", "sata", "ide"):
        keys = sorted((k for k in disks if k.startswith(prefix)), key=lambda k: int(k[len(prefix) :]))
        if keys:
            return keys[0], disks[keys[0]]
    raise UpstreamFailure(zone, "the VM has no disk to boot from: its template has none")


def _with_limits(drive: str, limits: Mapping[str, int]) -> str:
    """A drive value with the storage profile's I/O limits set (others kept)."""
    parts = [p for p in drive.split(",") if p.split("=", 1)[0] not in limits]
    return ",".join(parts + [f"{option}={value}" for option, value in sorted(limits.items())])


def _cloud_init_drive(config: Mapping[str, Any]) -> bool:
    """Whether the VM has a cloud-init drive: a CD-ROM drive whose volume is neither empty nor an ISO.

    Proxmox names it ``vm-<vmid>-cloudinit`` and re-creates it for a clone; it is the only CD-ROM
    volume that is not an ISO image.
    """
    for key, value in config.items():
        volume, _, options = str(value).partition(",")
        if not _DRIVE.match(key):
            continue
        if "cloudinit" in volume:
            return True
        if "media=cdrom" in options and volume not in ("none", "cdrom") and "iso/" not in volume:
            return True
    return False


def _free_ide(zone: str, config: Mapping[str, Any]) -> str:
    for n in (2, 3, 1, 0):
        if f"ide{n}" not in config:
            return f"ide{n}"
    raise UpstreamFailure(zone, "the VM has no free IDE slot for its cloud-init drive")


def _configure(api: ZoneApi, plan: _Plan, node: str, vmid: int, cicustom: str | None) -> tuple[str, int]:
    """Profile, cloud-init and I/O limits in one config write; answers the boot disk and its size."""
    config = api.config(node, vmid)
    disk, drive = _boot_disk(api.zone, config)
    params: dict[str, Any] = {
        "cores": plan.compute.vcpus,
        "sockets": 1,
        "memory": plan.compute.memory_mib,
        "cpu": plan.compute.cpu_type,
        "agent": "1",
        "ciuser": plan.image.default_user,
        "ipconfig0": "ip=dhcp",
    }
    if plan.ssh_keys:
        # Proxmox wants the keys URL-encoded (its 'urlencoded' format), spaces as %20.
        params["sshkeys"] = urllib.parse.quote("\n".join(plan.ssh_keys) + "\n", safe="")
    if cicustom:
        params["cicustom"] = cicustom
    if not _cloud_init_drive(config):
        params[_free_ide(api.zone, config)] = f"{plan.storage}:cloudinit"
    limits = plan.storage_profile.disk_limits()
    if limits:
        params[disk] = _with_limits(drive, limits)
    api.set_config(node, vmid, params)
    return disk, _drive_size(drive)


def _grow(
    api: ZoneApi, vdc: str, node: str, vmid: int, disk: str, size_bytes: int, want_gb: int
) -> Task | None:
    """Grow the disk to ``want_gb`` GiB (Proxmox never shrinks one); nothing to do when it is that big."""
    if size_bytes >= want_gb * GIB:
        return None
    answer = api.resize_disk(node, vmid, disk, f"{want_gb}G")
    if answer is None:  # Proxmox releases before 8 resize synchronously
        return None
    return api.run(answer, vdc, f"growing the disk of VM {vmid} to {want_gb} GiB", TASK_TIMEOUT)


def _power(api: ZoneApi, vm: VirtualMachine, action: str, doing: str, wait: float, **params: Any) -> Task:
    answer = api.power(vm.host, vm.vmid, action, params or None)
    return api.run(answer, vm.vdc, doing, wait)


def _destroy(api: ZoneApi, vm: VirtualMachine) -> Task:
    """Stop (if need be) and destroy the VM with its disks; it leaves its pool and nothing remains."""
    if vm.status != "stopped":
        _power(api, vm, "stop", f"stopping VM {vm.name}", TASK_TIMEOUT)
    answer = api.destroy(vm.host, vm.vmid)
    return api.run(answer, vm.vdc, f"deleting VM {vm.name}", TASK_TIMEOUT)


def _discard(api: ZoneApi, plan: _Plan, vmid: int, error: FlexPlaneError, *, tagged: bool) -> None:
    """Remove a VM whose create failed; the error then says whether that worked."""
    try:
        item = _find(api, vmid)
        if item is None:
            note = "nothing was left behind"
        else:
            vm = VirtualMachine.from_resource(api.zone, item)
            _destroy(api, vm)
            note = f"the half-made VM {vm.id} was removed"
    except FlexPlaneError as cleanup:
        logger.warning("create of %s: VM %s/%s could not be removed: %s", plan.name, api.zone, vmid, cleanup)
        where = (
            f"it stays in VDC {plan.vdc.id}, tagged, for you to delete once its host is back"
            if tagged
            else f"the VDC's next create removes it once its host is back (it sits untagged in pool "
            f"{plan.vdc.pool})"
        )
        note = f"the half-made VM {api.zone}/{vmid} could not be removed ({cleanup.message}): {where}"
    error.message = f"{error.message}; {note}"
    error.args = (error.message,)


def vendor_snippet_name(vdc: str, vmid: int) -> str:
    """The cloud-init snippet holding a VM's vendor data (its tenant's user data), on the VM's node."""
    return f"fp-{vdc}-{vmid}-vendor.yaml"


def _write_vendor_data(api: ZoneApi, plan: _Plan, node: str, vmid: int) -> str | None:
    """Write the plan's user data as the VM's vendor-data snippet; the VM's ``cicustom`` (None without)."""
    if plan.user_data is None:
        return None
    volume = api.write_snippet(node, vendor_snippet_name(plan.vdc.id, vmid), plan.user_data.encode("utf-8"))
    return f"vendor={volume}"


def _remove_vendor_data(api: ZoneApi, vdc: str, node: str, vmid: int) -> str | None:
    """Remove a VM's vendor-data snippet (there may be none); a problem to report, or None."""
    name = vendor_snippet_name(vdc, vmid)
    try:
        check_snippet_name(name)
    except ValueError:
        return None  # a VDC id no snippet could have been written for
    try:
        api.delete_snippet(node, name)
    except FlexPlaneError as exc:
        logger.warning("snippet %s on %s/%s not removed: %s", name, api.zone, node, exc.message)
        return f"its cloud-init snippet {name} on host {node} could not be removed ({exc.message})"
    return None


def _remove_leftovers(ctx: Context, now: Mapping[str, Iterable[Mapping[str, Any]]], vdc: Vdc) -> None:
    """Remove what failed creates of the VDC could not remove at the time (their host was away).

    A leftover sits in the VDC's pool without the VDC's tag (it failed before it was tagged), is not
    being cloned, and its description is flex.plane's for this VDC: a VM an admin moved into the pool
    by hand is never touched. Called under the VDC's lock, so no create of the VDC is between its clone
    and its tag. What still cannot be removed is left for the next time.
    """
    for zone, items in now.items():
        for item in items:
            tags = parse_tags(item.get("tags"))
            if (
                item.get("type") != "qemu"
                or item.get("template")
                or item.get("pool") != vdc.pool
                or vdc_of(tags) is not None
                or item.get("lock") == "clone"
            ):
                continue
            vm = VirtualMachine.from_resource(zone, item)
            try:
                api = ZoneApi(ctx, zone)
                config = api.config(vm.host, vm.vmid)
                if str(config.get("description") or "").startswith(_marker(vdc)):
                    _destroy(api, vm)
                    logger.info("removed %s, left over by a failed create in VDC %s", vm.id, vdc.id)
            except FlexPlaneError as exc:
                logger.warning("leftover %s of VDC %s not removed yet: %s", vm.id, vdc.id, exc.message)


def create_vm(ctx: Context, spec: CreateVm) -> Created:
    """Create, configure and start a VM; or return the one an earlier create of it made."""
    plan = _plan(ctx, spec)
    seen = inventory.zone_resources(ctx).guests
    earlier = _existing(seen, plan)
    if earlier is not None:
        return Created(earlier, None, None, created=False)
    # Fail fast, without the lock, when even this read shows the quota full (it is checked again under it).
    vdcs.check_quota(ctx, plan.vdc, plan.usage, current=_usage(seen, plan.vdc))

    api = ZoneApi(ctx, plan.zone)
    hosts = catalog.hosts(ctx)
    # Make the template ready on the likely host before taking the lock: a first download takes long.
    likely = place(plan.placement_request, hosts, api.resources())
    assert likely.host is not None  # place() raises NoCapacity otherwise
    template = _ensure_template(ctx, plan, likely.host)

    with _vdc_lock(ctx, plan.vdc) as held:
        now = _everything_now(ctx, plan.vdc)
        earlier = _existing(now, plan)
        if earlier is not None:
            return Created(earlier, None, None, created=False)
        _remove_leftovers(ctx, now, plan.vdc)
        vdcs.check_quota(ctx, plan.vdc, plan.usage, current=_usage(now, plan.vdc))
        placement = place(plan.placement_request, hosts, now.get(plan.zone, []))
        assert placement.host is not None
        node = placement.host
        if template.node != node:
            template = _ensure_template(ctx, plan, node)
        _still_held(held, plan.vdc)
        vmid, _clone_task = _clone(api, plan, template, node)
        try:
            # Tagged before the lock is released: from now on the VM is found, counted and listed.
            api.set_config(node, vmid, {"tags": plan.tags})
        except FlexPlaneError as exc:
            _discard(api, plan, vmid, exc, tagged=False)
            raise

    try:
        cicustom = _write_vendor_data(api, plan, node, vmid)
        disk, size = _configure(api, plan, node, vmid, cicustom)
        _grow(api, plan.vdc.id, node, vmid, disk, size, plan.disk_gb)
        vm = VirtualMachine.from_resource(
            api.zone, {"vmid": vmid, "name": plan.name, "node": node, "status": "stopped", "tags": plan.tags}
        )
        task = _power(api, vm, "start", f"starting VM {plan.name}", TASK_TIMEOUT)
    except FlexPlaneError as exc:
        _discard(api, plan, vmid, exc, tagged=True)
        # Also when the write itself failed: one that timed out may have written the file.
        if plan.user_data is not None and (problem := _remove_vendor_data(api, plan.vdc.id, node, vmid)):
            exc.message = f"{exc.message}; {problem}"
            exc.args = (exc.message,)
        raise
    return Created(_reread(api, vm), task, placement, created=True)


# ------------------------------------------------------------------------------------------ lifecycle


@dataclass(frozen=True)
class Outcome:
    """A VM after an operation, and the Proxmox task that did it (None when there was nothing to do)."""

    vm: VirtualMachine
    task: Task | None


def start_vm(ctx: Context, ident: str) -> Outcome:
    """Start a stopped VM; a running one is left as it is."""
    api, vm = _locate(ctx, ident)
    if vm.running:
        return Outcome(vm, None)
    task = _power(api, vm, "start", f"starting VM {vm.name}", TASK_TIMEOUT)
    return Outcome(_reread(api, vm), task)


def stop_vm(ctx: Context, ident: str) -> Outcome:
    """Stop a VM at once (power off); a stopped one is left as it is."""
    api, vm = _locate(ctx, ident)
    if vm.status == "stopped":
        return Outcome(vm, None)
    task = _power(api, vm, "stop", f"stopping VM {vm.name}", TASK_TIMEOUT)
    return Outcome(_reread(api, vm), task)


def shutdown_vm(ctx: Context, ident: str, timeout: int | None = None) -> Outcome:
    """Ask the guest OS to power off, giving up after ``timeout`` seconds (the VM keeps running then).

    The answer waits for the shutdown at most ``SHUTDOWN_WAIT`` seconds; beyond that its task is
    returned still running, to be followed with ``task(id)``.
    """
    seconds = DEFAULT_SHUTDOWN_TIMEOUT if timeout is None else timeout
    if not 1 <= seconds <= MAX_SHUTDOWN_TIMEOUT:
        raise ValidationFailed("timeout", f"the timeout must be between 1 and {MAX_SHUTDOWN_TIMEOUT} seconds")
    api, vm = _locate(ctx, ident)
    if vm.status == "stopped":
        return Outcome(vm, None)
    wait = min(seconds + 5.0, SHUTDOWN_WAIT)
    task = _power(api, vm, "shutdown", f"shutting down VM {vm.name}", wait, timeout=seconds, forceStop=False)
    return Outcome(_reread(api, vm), task)


def reboot_vm(ctx: Context, ident: str) -> Outcome:
    """Reboot a running VM through its guest OS (it picks up pending configuration changes)."""
    api, vm = _locate(ctx, ident)
    if not vm.running:
        raise Conflict(f"VM {vm.name} is {vm.status}, not running: start it instead")
    task = _power(api, vm, "reboot", f"rebooting VM {vm.name}", TASK_TIMEOUT)
    return Outcome(_reread(api, vm), task)


def delete_vm(ctx: Context, ident: str) -> Outcome:
    """Stop the VM and destroy it with its disks and its cloud-init snippet; it leaves its VDC's pool.
    ``vm`` is its last state."""
    api, vm = _locate(ctx, ident)
    task = _destroy(api, vm)
    if not task.running:  # while the destroy may still fail, the VM keeps its cloud-init data
        _remove_vendor_data(api, vm.vdc, vm.host, vm.vmid)
    vm.status = "deleted"
    return Outcome(vm, task)


def resize_vm(
    ctx: Context, ident: str, compute_profile: str | None = None, disk_gb: int | None = None
) -> Outcome:
    """Move a VM to another compute profile (it must be stopped) and/or grow its disk (never shrink).

    Checked against the VDC's quota under its lock, as a create is.
    """
    if not compute_profile and disk_gb is None:
        raise ValidationFailed("compute_profile", "give a compute profile, a disk size, or both")
    api, vm = _locate(ctx, ident)
    vdc = vdcs.get_vdc(ctx, vm.vdc)
    compute: ComputeProfile | None = None
    if compute_profile:
        compute = _catalog_choice(
            "compute_profile",
            "compute profile",
            vdc.allows_compute_profile(compute_profile),
            vdc,
            compute_profile,
            lambda: catalog.compute_profile(ctx, compute_profile),
        )
    if disk_gb is not None:
        _check_disk_size(ctx, vm, disk_gb)

    with _vdc_lock(ctx, vdc) as held:
        now = _everything_now(ctx, vdc)  # read again, under the lock
        item = _guest(now.get(vm.zone, []), vm.vmid)
        if item is None:
            raise NotFound(VM, ident)
        vm = VirtualMachine.from_resource(vm.zone, item)
        current_gb = vm.disk_bytes / GIB
        if disk_gb is not None and disk_gb < current_gb:
            raise ValidationFailed(
                "disk_gb", f"disks only grow: this one has {current_gb:g} GiB, it cannot shrink to {disk_gb}"
            )
        change_profile = compute is not None and (
            compute.name != vm.compute_profile
            or compute.vcpus != vm.cores
            or compute.memory_mib != vm.memory_mb
        )
        if change_profile and vm.status != "stopped":
            raise Conflict(
                f"VM {vm.name} is {vm.status}: stop it before moving it to another compute profile"
            )
        grow_gb = disk_gb if disk_gb is not None and disk_gb > current_gb else None
        if not change_profile and grow_gb is None:
            return Outcome(vm, None)
        delta = Usage(
            vcpus=max(0, compute.vcpus - vm.cores) if compute and change_profile else 0,
            memory_mib=max(0, compute.memory_mib - vm.memory_mb) if compute and change_profile else 0,
            disk_gb=max(0, grow_gb - math.ceil(current_gb)) if grow_gb else 0,
        )
        vdcs.check_quota(ctx, vdc, delta, current=_usage(now, vdc))
        _still_held(held, vdc)
        task: Task | None = None
        if compute is not None and change_profile:
            tags = [t for t in vm.tags if not t.startswith(COMPUTE_PROFILE_TAG_PREFIX)]
            if is_tag(COMPUTE_PROFILE_TAG_PREFIX + compute.name):
                tags.append(COMPUTE_PROFILE_TAG_PREFIX + compute.name)
            answer = api.change_config(
                vm.host,
                vm.vmid,
                {
                    "cores": compute.vcpus,
                    "sockets": 1,
                    "memory": compute.memory_mib,
                    "cpu": compute.cpu_type,
                    "tags": join_tags(tags),
                },
            )
            task = api.run(
                answer, vm.vdc, f"moving VM {vm.name} to compute profile {compute.name}", TASK_TIMEOUT
            )
        if grow_gb is not None:
            config = api.config(vm.host, vm.vmid)
            disk, drive = _boot_disk(api.zone, config)
            task = _grow(api, vm.vdc, vm.host, vm.vmid, disk, _drive_size(drive), grow_gb) or task
    return Outcome(_reread(api, vm), task)


def _check_disk_size(ctx: Context, vm: VirtualMachine, disk_gb: int) -> None:
    """The new size against the limits of the VM's storage profile (when it still is in the catalog)."""
    if disk_gb < 1:
        raise ValidationFailed("disk_gb", "the disk size is in GiB and at least 1")
    if not vm.storage_profile:
        return
    try:
        profile = catalog.storage_profile(ctx, vm.storage_profile)
    except NotFound:
        return  # removed from the catalog since: the VM keeps working, only the floor (its size) applies
    if disk_gb > profile.max_gb:
        raise ValidationFailed(
            "disk_gb", f"storage profile {profile.name} allows disks of at most {profile.max_gb} GiB"
        )
