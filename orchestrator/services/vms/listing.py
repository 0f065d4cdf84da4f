"""Listing and reading VMs: a page of the VMs the caller may see, and one VM, live.

A listing scoped to a few VDCs (a tenant's, or any caller naming a VDC) reads only their pools, one
call per VDC and zone (``inventory.vdc_guests``): a VM is its pool's, and what only its config has (its
tags, hence its profiles and image, and its lock) is left to its own page. A fleet-wide listing (ADMIN
without a VDC) costs one ``/cluster/resources`` per zone (the request's, shared with every other reader
of it), and a VM is its VDC tag's. Neither asks a VM's guest agent; reading one VM asks its zone again,
and its guest agent for its addresses.

A scoped listing that needs what only tags say (the portal's list: each VM's profile and addresses, a
search by them, its lock) asks for ``tags``: it then reads ``/cluster/resources`` of each zone instead of
the pools (one call per zone all the same, the request's, but as large as the zone's fleet), and a VM is
still its pool's.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import heapq
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings

from orchestrator.errors import Conflict, NotFound, Unavailable, UpstreamFailure, ValidationFailed
from orchestrator.models.networks import ADDRESS_TAG_PREFIX
from orchestrator.models.vdcs import POOL_PREFIX
from orchestrator.models.vms import COMPUTE_PROFILE_TAG_PREFIX, VirtualMachine, parse_tags, vdc_in
from orchestrator.services import access, inventory
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import Guest, ZoneApi

logger = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 50
VM = "virtual machine"

# A listing's order: name, zone, VMID.
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
    """Which VMs a listing shows: all the conditions given hold.

    ``search`` holds for a VM whose name, status, zone, compute profile or one of whose addresses contains
    it (case aside); the profile and the addresses are in its tags, which a listing read from the pools
    does not have (``list_vms``' ``tags``)."""

    status: str | None = None
    zone: str | None = None
    name_contains: str | None = None
    search: str | None = None

    def matches(self, zone: str, guest: Guest) -> bool:
        if self.zone is not None and zone != self.zone:
            return False
        if self.status is not None and guest.status != self.status:
            return False
        if self.name_contains is not None and self.name_contains.lower() not in guest.name.lower():
            return False
        return self.search is None or _found(self.search.lower(), zone, guest)


def _found(text: str, zone: str, guest: Guest) -> bool:
    """Whether ``text`` (lowercase) is in the guest's name, status, zone, compute profile or addresses."""
    if text in guest.name.lower() or text in guest.status or text in zone.lower():
        return True
    if not guest.tags:
        return False
    for tag in parse_tags(guest.tags):
        if tag.startswith(COMPUTE_PROFILE_TAG_PREFIX) and text in tag[len(COMPUTE_PROFILE_TAG_PREFIX) :]:
            return True
        # fp-ip-<vnet>-<address>: the address is after the VNet's name, which has no hyphen.
        if tag.startswith(ADDRESS_TAG_PREFIX) and text in tag[len(ADDRESS_TAG_PREFIX) :].partition("-")[2]:
            return True
    return False


def encode_cursor(key: SortKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode()


# The longest cursor read: a name and a zone of 63 characters each, and a VMID, fit in well under it.
_MAX_CURSOR = 512


def decode_cursor(cursor: str) -> SortKey:
    """The key a cursor holds; ``ValidationFailed`` for anything this API did not hand out (strictly:
    two strings and an integer VMID, no ``Infinity``, no float, no nesting)."""
    refused = ValidationFailed("after", "'after' is not a cursor this API handed out")
    if len(cursor) > _MAX_CURSOR or not cursor.isascii():
        raise refused
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()), parse_constant=_no_constant)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise refused from None
    if not isinstance(key, list) or len(key) != 3:
        raise refused
    name, zone, vmid = key
    if not isinstance(name, str) or not isinstance(zone, str) or type(vmid) is not int:
        raise refused
    if not 0 <= vmid < 10**9:
        raise refused
    return (name, zone, vmid)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not in a cursor")  # json's NaN, Infinity, -Infinity


def list_vms(
    ctx: Context,
    first: int | None = None,
    after: str | None = None,
    where: VmFilter | None = None,
    *,
    tags: bool = False,
) -> Page:
    """The VMs of the VDCs the request may see, sorted by name, one Proxmox call per zone; with ``tags``,
    each with its tags (its profiles, image, addresses and lock) even when the request is scoped to a few
    VDCs (see the module's docstring).

    Listings never ask a VM's guest agent: ``ip_addresses`` stays unknown (``None``).
    """
    size = DEFAULT_PAGE_SIZE if first is None else first
    if not 1 <= size <= settings.FLEXPLANE_PAGE_SIZE_MAX:
        raise ValidationFailed("first", f"'first' must be between 1 and {settings.FLEXPLANE_PAGE_SIZE_MAX}")
    start = decode_cursor(after) if after else None
    where = where or VmFilter()
    keep = where.matches if where != VmFilter() else None

    page: list[Row] = []
    for row in _rows(ctx, access.visible_vdcs(ctx), where.zone, start, tags):
        if keep is None or keep(row[1], row[4]):
            page.append(row)
            if len(page) > size:  # one more than the page: another follows
                break
    return Page(
        items=[_vm(zone, vdc, guest) for _, zone, _, vdc, guest in page[:size]],
        cursors=[encode_cursor(row[:3]) for row in page[:size]],
        has_next=len(page) > size,
    )


# A listing's row: its sort key (name, zone, VMID; unique in the fleet, so the rest is never compared),
# its VDC and its guest.
Row = tuple[str, str, int, str, Guest]


def _rows(
    ctx: Context, visible: frozenset[str] | None, zone: str | None, start: SortKey | None, tags: bool = False
) -> Iterator[Row]:
    """The VMs of the VDCs ``visible`` (``None``: every VDC), of ``zone`` only when given, after ``start``,
    in the listing's order: from their pools when they are few (from every zone's ``/cluster/resources``
    by pool, with ``tags``), else from every zone's ``/cluster/resources`` by VDC tag. The fleet-wide
    listing (ADMIN) also logs which VMs are misplaced.

    Each zone's VMs come in name order (``ClusterResources.vms``): the zones are merged, and the listing
    reads no further than its page."""
    if inventory.pool_scoped(visible) and tags:
        assert visible is not None
        pools = {POOL_PREFIX + vdc: vdc for vdc in visible}
        yield from heapq.merge(
            *(
                _pooled(in_zone, guests, pools, start)
                for in_zone, guests in inventory.zone_resources(ctx).guests.items()
                if zone is None or in_zone == zone
            )
        )
        return
    if inventory.pool_scoped(visible):
        assert visible is not None
        rows = [
            (guest.name, in_zone, guest.vmid, vdc, guest)
            for in_zone, members in inventory.vdc_guests(ctx, visible).items()
            if zone is None or in_zone == zone
            for vdc, guest in members
        ]
        yield from sorted(row for row in rows if start is None or row[:3] > start)
        return
    resources = inventory.zone_resources(ctx)
    if visible is None and ctx.principal.is_admin:
        _warn_misplaced(resources.misplaced)
    yield from heapq.merge(
        *(
            _tagged(in_zone, guests, visible, start)
            for in_zone, guests in resources.guests.items()
            if zone is None or in_zone == zone
        )
    )


def _tagged(
    zone: str, vms: Sequence[Guest], visible: frozenset[str] | None, start: SortKey | None
) -> Iterator[Row]:
    """One zone's rows of the VDCs ``visible``, from its VMs in name order, after ``start``."""
    first = 0 if start is None else bisect.bisect_right(vms, start, key=lambda g: (g.name, zone, g.vmid))
    for guest in vms[first:]:
        tagged = vdc_in(guest.tags)
        if tagged is not None and (visible is None or tagged in visible):
            yield (guest.name, zone, guest.vmid, tagged, guest)


def _pooled(
    zone: str, vms: Sequence[Guest], pools: Mapping[str, str], start: SortKey | None
) -> Iterator[Row]:
    """One zone's rows of the VMs in ``pools`` (pool -> its VDC), from its VMs in name order, after
    ``start``: what the pools' members are, with their tags."""
    first = 0 if start is None else bisect.bisect_right(vms, start, key=lambda g: (g.name, zone, g.vmid))
    for guest in vms[first:]:
        vdc = pools.get(guest.pool)
        if vdc is not None:
            yield (guest.name, zone, guest.vmid, vdc, guest)


def _warn_misplaced(misplaced: Mapping[str, Sequence[Guest]]) -> None:
    found = [
        f"{zone}/{guest.vmid} tagged {vdc_in(guest.tags) or '-'} in pool {guest.pool or '-'}"
        for zone, guests in misplaced.items()
        for guest in guests
    ]
    if found:
        shown = ", ".join(found[:20])
        logger.warning("%d VM(s) whose VDC tag and pool disagree (misplaced): %s", len(found), shown)


def _vm(zone: str, vdc: str, guest: Guest) -> VirtualMachine:
    vm = VirtualMachine.from_guest(zone, guest)
    vm.vdc = vdc
    return vm


@dataclass(frozen=True)
class Misplaced:
    """A VM whose VDC tag and pool disagree (``inventory.misplaced_in``)."""

    vm: VirtualMachine  # ``vm.vdc``: its tag's VDC ("" for none)
    pool: str  # the pool it is in ("" for none)

    @property
    def pool_vdc(self) -> str:
        return inventory.pool_vdc(self.pool) or ""


def misplaced(ctx: Context) -> list[Misplaced]:
    """ADMIN, fleet-wide: the VMs whose ``fp-vdc-<id>`` tag and ``fp-<id>`` pool disagree
    (``inventory.misplaced_in``), by id; one ``/cluster/resources`` per zone, the request's."""
    access.require_admin(ctx)
    found = [
        Misplaced(VirtualMachine.from_guest(zone, guest), guest.pool)
        for zone, guests in inventory.zone_resources(ctx).misplaced.items()
        for guest in guests
    ]
    return sorted(found, key=lambda m: (m.vm.zone, m.vm.vmid))


def locate(ctx: Context, ident: str) -> tuple[ZoneApi, VirtualMachine]:
    """A VM the caller may see, read live from its zone (one call); ``NotFound`` otherwise."""
    visible = access.visible_vdcs(ctx)
    zone, vmid, api = inventory.vm_zone_api(ctx, ident)
    guest = api.resources("vm").vm(vmid)
    if guest is not None:
        vm = VirtualMachine.from_guest(zone, guest)
        if vm.vdc and (visible is None or vm.vdc in visible):
            return api, vm
    raise NotFound(VM, ident)


def smbios_uuid(ctx: Context, ident: str) -> str | None:
    """The VM's SMBIOS uuid (its config's smbios1; a tenant node's provider ID is ``proxmox://<uuid>``):
    one config read after :func:`locate`; None when it has none."""
    api, vm = locate(ctx, ident)
    return api.config(vm.host, vm.vmid).smbios_uuid


def _guest_addresses(api: ZoneApi, vm: VirtualMachine) -> VirtualMachine:
    """The VM with its addresses from the guest agent, when it runs one (``None`` otherwise)."""
    if not vm.running:
        return vm
    try:
        interfaces = api.guest_interfaces(vm.host, vm.vmid)
    except (UpstreamFailure, Unavailable, Conflict) as exc:
        # No guest agent, or it does not answer: the addresses are unknown, the VM itself is not.
        logger.debug("no addresses for %s: %s", vm.id, exc.message)
        return vm
    return vm.with_interfaces(interfaces)


def get_vm(ctx: Context, ident: str) -> VirtualMachine:
    """One VM, live, with its IP addresses from its guest agent where Proxmox has them."""
    api, vm = locate(ctx, ident)
    return _guest_addresses(api, vm)


def reread(api: ZoneApi, vm: VirtualMachine) -> VirtualMachine:
    """The VM as Proxmox reports it now (after an operation); as it was if it is gone meanwhile."""
    guest = api.resources("vm").vm(vm.vmid)
    return VirtualMachine.from_guest(api.zone, guest) if guest is not None else vm
