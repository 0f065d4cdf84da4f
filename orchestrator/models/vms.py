"""Virtual machines, as Proxmox reports them in ``/cluster/resources`` (and, for one VM, its guest agent).

What a VM was made from is recorded on the VM itself, in Proxmox, as tags: its VDC (``fp-vdc-<vdc>``),
the idempotency key of the request that created it (``fp-idem-<hash>``), and its compute profile,
storage profile and image (``fp-cp-<name>``, ``fp-sp-<name>``, ``fp-img-<name>``), and the size its create
(or its last resize) asked for (``fp-req-<vcpus>c<memory MiB>m<disk GiB>g``), and a hash of everything
its create asked for (``fp-spec-<hash>``: a create of its name asking for the same is a retry). Tags travel in
``/cluster/resources``, so a listing learns all of it with one call per zone.

The size asked for is what the VDC's quota counts while the VM is still being made: a clone has its
template's size until it is configured and its disk grown, outside the VDC's lock, so a create that
counted only live sizes could let the next one past the quota. A VM counts at the larger of its live
size and the size asked for (``Usage.of_guest``), read from its tags, statelessly.

A VM whose create has not ended carries ``fp-state-creating``: it is tagged (and so found, counted and listed)
before it is configured, given its firewall and started, and the tag goes last, once it runs. A retry of
its create that finds it so completes it instead of returning it half-made (``services.vms.create``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from django.db import models

from orchestrator.sources.proxmox import Guest, GuestInterface
from orchestrator.sources.qemu_config import is_tag, parse_tags, render_tags

__all__ = [
    "COMPUTE_PROFILE_TAG_PREFIX",
    "CREATING_TAG",
    "GIB",
    "IDEMPOTENCY_TAG_PREFIX",
    "IMAGE_TAG_PREFIX",
    "MIB",
    "REQUEST_TAG_PREFIX",
    "SPEC_TAG_PREFIX",
    "STORAGE_PROFILE_TAG_PREFIX",
    "VDC_TAG_PREFIX",
    "VirtualMachine",
    "idempotency_tag",
    "is_tag",
    "parse_tags",
    "parse_vm_id",
    "render_tags",
    "request_tag",
    "requested_in",
    "tag_value",
    "vdc_in",
    "vdc_of",
    "vm_id",
]

VDC_TAG_PREFIX = "fp-vdc-"
IDEMPOTENCY_TAG_PREFIX = "fp-idem-"
COMPUTE_PROFILE_TAG_PREFIX = "fp-cp-"
STORAGE_PROFILE_TAG_PREFIX = "fp-sp-"
IMAGE_TAG_PREFIX = "fp-img-"
REQUEST_TAG_PREFIX = "fp-req-"
SPEC_TAG_PREFIX = "fp-spec-"
CREATING_TAG = "fp-state-creating"
GIB = 1024**3
MIB = 1024**2


def tag_value(tags: Iterable[str], prefix: str) -> str | None:
    """The value of the first tag ``<prefix><value>``, or ``None``."""
    for tag in tags:
        if tag.startswith(prefix) and len(tag) > len(prefix):
            return tag[len(prefix) :]
    return None


_TAG_SEPARATOR_CHARS = ";, "
_TAG_END = re.compile(r"[;, ]")


def vdc_in(raw: str | None) -> str | None:
    """``vdc_of(parse_tags(raw))``, straight from Proxmox's tag string: the listing's hot loop, run for
    every guest of the fleet. ``str.find`` of the prefix then the tag's end is 3x faster than one regex
    search (``(?:^|[;, ])fp-vdc-...``, whose alternation defeats the regex engine's literal scan), which
    was itself 4x faster than splitting the tags."""
    if not raw:
        return None
    start = raw.find(VDC_TAG_PREFIX)
    while start >= 0:
        if start == 0 or raw[start - 1] in _TAG_SEPARATOR_CHARS:
            begin = start + len(VDC_TAG_PREFIX)
            end = _TAG_END.search(raw, begin)
            value = raw[begin : end.start() if end else len(raw)]
            if value:
                return value
        start = raw.find(VDC_TAG_PREFIX, start + 1)
    return None


def vdc_of(tags: list[str]) -> str | None:
    """The VDC a VM belongs to, from its ``fp-vdc-<vdc>`` tag; ``None`` for VMs flex.plane does not manage."""
    return tag_value(tags, VDC_TAG_PREFIX)


# The size tag inside a raw tag string (ASCII digits only: ``\\d`` would take other scripts' digits too).
_REQUEST_IN_TAGS = re.compile(
    rf"(?:^|[;, ]){REQUEST_TAG_PREFIX}([0-9]{{1,9}})c([0-9]{{1,12}})m([0-9]{{1,12}})g(?=\Z|[;, ])"
)


def request_tag(vcpus: int, memory_mib: int, disk_gb: int) -> str:
    """The tag recording the size a create (or a resize) asked for."""
    return f"{REQUEST_TAG_PREFIX}{vcpus}c{memory_mib}m{disk_gb}g"


def requested_in(raw: str | None) -> tuple[int, int, int] | None:
    """``(vcpus, memory MiB, disk GiB)`` of the size tag in Proxmox's tag string, or ``None``.

    The one place the tag is read: the quota's usage (``Usage.of_guest``) and a resize's new tag.
    """
    if not raw or REQUEST_TAG_PREFIX not in raw:  # most guests: no regex at all
        return None
    found = _REQUEST_IN_TAGS.search(raw)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def idempotency_tag(key: str) -> str:
    """The tag that marks the VM a create with this idempotency key made: a hash, never the key itself."""
    return IDEMPOTENCY_TAG_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


def vm_id(zone: str, vmid: int) -> str:
    """The global id of a VM: its zone and its Proxmox VMID."""
    return f"{zone}/{vmid}"


# A VMID as Proxmox writes it: ASCII digits (``str.isdigit`` takes ``²`` and other scripts' digits), 100 up.
_VMID = re.compile(r"[1-9][0-9]{2,8}")


def parse_vm_id(value: str) -> tuple[str, int] | None:
    """``(zone, vmid)`` of a global id, or ``None`` for something that is not one.

    The one parser of VM ids: the API's arguments and the portal's URLs both come through it.
    """
    zone, sep, number = value.partition("/")
    if not sep or not zone or not _VMID.fullmatch(number):
        return None
    vmid = int(number)
    return (zone, vmid) if vmid >= 100 else None


def _addresses(interfaces: Sequence[GuestInterface]) -> list[str]:
    """The IP addresses the guest agent reported, loopback and link-local left out."""
    found: list[str] = []
    for interface in interfaces:
        if interface.name == "lo":
            continue
        for address in interface.addresses:
            lowered = address.lower()
            if lowered.startswith(("127.", "fe80:", "169.254.")) or lowered == "::1":
                continue
            found.append(address)
    return list(dict.fromkeys(found))


class VirtualMachine(models.Model):
    """A tenant's VM: a QEMU guest tagged with its VDC."""

    id = models.CharField(primary_key=True, max_length=80)
    vmid = models.PositiveIntegerField()
    name = models.CharField(max_length=63)
    status = models.CharField(max_length=16)
    zone = models.CharField(max_length=63)
    host = models.CharField(max_length=63)
    vdc = models.CharField(max_length=63)
    cores = models.PositiveIntegerField()
    memory_mb = models.PositiveIntegerField()
    disk_gb = models.FloatField()
    compute_profile = models.CharField(max_length=63, blank=True)
    storage_profile = models.CharField(max_length=63, blank=True)
    image = models.CharField(max_length=63, blank=True)
    # Proxmox's lock on the VM (clone, backup, migrate, ...), empty when there is none.
    lock = models.CharField(max_length=32, blank=True)
    tags = models.JSONField(default=list)
    # From the guest agent, read only for a single VM (never in listings); None: not asked.
    ip_addresses = models.JSONField(null=True, default=None)

    class Meta:
        managed = False

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def creating(self) -> bool:
        """Whether the create that made it has not ended (see the module's docstring)."""
        return CREATING_TAG in self.tags

    @property
    def disk_bytes(self) -> int:
        return round(self.disk_gb * GIB)

    @classmethod
    def from_guest(cls, zone: str, guest: Guest) -> VirtualMachine:
        """Build from a guest of ``/cluster/resources``."""
        tags = parse_tags(guest.tags)
        return cls(
            id=vm_id(zone, guest.vmid),
            vmid=guest.vmid,
            name=guest.name or f"vm-{guest.vmid}",
            status=guest.status,
            zone=zone,
            host=guest.node,
            vdc=vdc_of(tags) or "",
            cores=guest.cpus,
            memory_mb=guest.memory // MIB,
            disk_gb=round(guest.disk / GIB, 2),
            compute_profile=tag_value(tags, COMPUTE_PROFILE_TAG_PREFIX) or "",
            storage_profile=tag_value(tags, STORAGE_PROFILE_TAG_PREFIX) or "",
            image=tag_value(tags, IMAGE_TAG_PREFIX) or "",
            lock=guest.lock,
            tags=tags,
        )

    @classmethod
    def made(cls, zone: str, vmid: int, name: str, host: str, vdc: str, tags: list[str]) -> VirtualMachine:
        """A VM just made, stopped, before Proxmox reports its figures."""
        return cls(
            id=vm_id(zone, vmid),
            vmid=vmid,
            name=name,
            status="stopped",
            zone=zone,
            host=host,
            vdc=vdc,
            cores=0,
            memory_mb=0,
            disk_gb=0.0,
            tags=tags,
        )

    def with_interfaces(self, interfaces: Sequence[GuestInterface]) -> VirtualMachine:
        """This VM with the addresses its guest agent reported."""
        self.ip_addresses = _addresses(interfaces)
        return self
