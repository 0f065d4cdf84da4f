"""The live state of every zone, read once per request (``/cluster/resources`` of each cluster); the
VMs of a few VDCs, read from their pools alone (``fp-<vdc>`` in each of their zones); and the client of
one zone's Proxmox, found from the catalog.

A read scoped to some VDCs (a tenant's, or any caller naming a VDC) costs what those VDCs have, not
what the fleet has: ``vdc_guests``. Fleet-wide reads (ADMIN without a VDC, placement's view of the
hosts) read ``zone_resources``. What needs only the nodes (the zones' and hosts' status) reads
``zone_nodes``: as many entries as the zones have nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from orchestrator.errors import NotFound
from orchestrator.models import Host, Vdc, Zone
from orchestrator.models.vdcs import POOL_PREFIX
from orchestrator.models.vms import parse_vm_id, vdc_in
from orchestrator.services import access, catalog
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import (
    ClusterResources,
    Guest,
    ImageTemplate,
    NodeResource,
    ZoneApi,
    ZoneTargets,
)


def zone_api(ctx: Context, zone: str) -> ZoneApi:
    """The zone's Proxmox, through the agents the catalog lists for it; ``NotFound`` for no such zone."""
    for targets in catalog.zone_targets(ctx):
        if targets.zone == zone:
            return ctx.proxmox.zone(targets)
    raise NotFound("zone", zone)


def vm_zone_api(ctx: Context, ident: str) -> tuple[str, int, ZoneApi]:
    """The zone and VMID a VM's id names, and that zone's Proxmox; ``NotFound`` naming the VM when the
    id is malformed or names no zone (before anything is read, so a VM never seen reads as missing)."""
    parsed = parse_vm_id(ident)
    if parsed is None:
        raise NotFound("virtual machine", ident)
    zone, vmid = parsed
    try:
        return zone, vmid, zone_api(ctx, zone)
    except NotFound:
        raise NotFound("virtual machine", ident) from None


@dataclass(frozen=True)
class ZoneResources:
    """Per zone that answered: its ``/cluster/resources``, its VMs (QEMU guests, not templates, by name),
    its nodes by name, and its misplaced VMs (``misplaced_in``)."""

    resources: dict[str, ClusterResources] = field(default_factory=dict)
    guests: dict[str, tuple[Guest, ...]] = field(default_factory=dict)
    nodes: dict[str, dict[str, NodeResource]] = field(default_factory=dict)
    misplaced: dict[str, tuple[Guest, ...]] = field(default_factory=dict)


_RESOURCES = ("inventory", "resources")  # the request's memo of zone_resources


def zone_resources(ctx: Context) -> ZoneResources:
    """One ``/cluster/resources`` per zone, in parallel; zones that did not answer are reported on ``ctx``.
    Each zone's VMs are checked for misplaced ones in that zone's own call, as its answer arrives, while
    the others are still on their way."""
    source = ctx.proxmox

    def one(zone: ZoneTargets, deadline_at: float) -> tuple[ClusterResources, tuple[Guest, ...]]:
        resources = source.zone_resources(zone, deadline_at)
        return resources, misplaced_in(resources.vms)

    def read() -> ZoneResources:
        fan = source.fan_out(catalog.zone_targets(ctx), one)
        ctx.report_unavailable(list(fan.failures.values()))
        out = ZoneResources()
        for zone, (resources, misplaced) in fan.results.items():
            out.resources[zone] = resources
            out.guests[zone] = resources.vms
            out.nodes[zone] = {n.node: n for n in resources.nodes}
            out.misplaced[zone] = misplaced
        return out

    return ctx.memoize(_RESOURCES, read)


def misplaced_in(vms: Iterable[Guest]) -> tuple[Guest, ...]:
    """The VMs whose ``fp-vdc-<id>`` tag and ``fp-<id>`` pool disagree: moved by hand, or left untagged
    in a pool by a create that failed. A guest with neither is not flex.plane's, and one untagged while
    being cloned is being made. A tenant's listing (the pool's members) and everything that goes by a
    VM's tag (its own page, its actions, the quota) see such a VM in different VDCs, or one not at all."""
    found: list[Guest] = []
    for guest in vms:
        tagged = vdc_in(guest.tags)
        if tagged is not None and guest.pool == POOL_PREFIX + tagged:
            continue  # the common case
        pooled = pool_vdc(guest.pool) or ""
        if (tagged or "") != pooled and not (tagged is None and guest.lock == "clone"):
            found.append(guest)
    return tuple(found)


def zone_nodes(ctx: Context) -> dict[str, dict[str, NodeResource]]:
    """Per zone that answered, its nodes by name: ``/cluster/resources?type=node`` of every zone, in
    parallel (as many entries as the zone has nodes, whatever its VMs); the fleet-wide read's nodes when
    the request has made it already."""

    def read() -> dict[str, dict[str, NodeResource]]:
        full = ctx.memoized(_RESOURCES)
        if isinstance(full, ZoneResources):
            return full.nodes
        fan = ctx.proxmox.cluster_resources(catalog.zone_targets(ctx), kind="node")
        ctx.report_unavailable(list(fan.failures.values()))
        return {zone: {n.node: n for n in resources.nodes} for zone, resources in fan.results.items()}

    return ctx.memoize(("inventory", "nodes"), read)


def zone_templates(ctx: Context) -> dict[str, tuple[ImageTemplate, ...]]:
    """Per zone that answered, the images' templates on its nodes (ready, or being imported):
    ``/cluster/resources?type=vm`` of every zone, in parallel (one call per zone, whatever the number of
    hosts and images); the fleet-wide read's guests when the request has made it already."""

    def read() -> dict[str, tuple[ImageTemplate, ...]]:
        full = ctx.memoized(_RESOURCES)
        if isinstance(full, ZoneResources):
            return {zone: resources.image_templates() for zone, resources in full.resources.items()}
        fan = ctx.proxmox.cluster_resources(catalog.zone_targets(ctx), kind="vm")
        ctx.report_unavailable(list(fan.failures.values()))
        return {zone: resources.image_templates() for zone, resources in fan.results.items()}

    return ctx.memoize(("inventory", "templates"), read)


# A read that may see at most this many VDCs reads their pools (one call per VDC and zone); one that may
# see more reads ``/cluster/resources`` (one call per zone), which then costs less.
POOL_READS_MAX = 4


def pool_vdc(pool: str) -> str | None:
    """The VDC whose pool ``pool`` is (``fp-<vdc>``), or ``None``."""
    if not pool.startswith(POOL_PREFIX) or pool == POOL_PREFIX:
        return None
    return pool[len(POOL_PREFIX) :]


def pool_scoped(visible: frozenset[str] | None) -> bool:
    """Whether a read that may see the VDCs ``visible`` (``None``: all) reads their pools."""
    return visible is not None and len(visible) <= POOL_READS_MAX


def vdc_guests(ctx: Context, vdc_ids: frozenset[str]) -> dict[str, tuple[tuple[str, Guest], ...]]:
    """Per zone that answered, the VMs of the VDCs ``vdc_ids`` as ``(vdc id, guest)``: the members of
    each VDC's pool in each of its zones, one call per VDC and zone, the zones in parallel; zones that
    did not answer are reported on ``ctx``. A VM's VDC is its pool's: the pool read has no tags (nor
    locks), so ``guest.tags`` and ``guest.lock`` are empty. VDCs not in the catalog have no VMs.
    """

    def read() -> dict[str, tuple[tuple[str, Guest], ...]]:
        definitions = {v.id: v for v in catalog.objects(ctx, catalog.VDC, Vdc.from_spec) if v.id in vdc_ids}
        pools: dict[str, list[str]] = {}
        for vdc in definitions.values():
            for zone in vdc.zones:
                pools.setdefault(zone, []).append(vdc.pool)
        fan = ctx.proxmox.pool_members(catalog.zone_targets(ctx), pools)
        ctx.report_unavailable(list(fan.failures.values()))
        by_pool = {vdc.pool: vdc.id for vdc in definitions.values()}
        return {
            zone: tuple((by_pool[guest.pool], guest) for guest in guests)
            for zone, guests in fan.results.items()
        }

    return ctx.memoize(("inventory", "pools", vdc_ids), read)


def vdc_resources(ctx: Context, vdc_ids: frozenset[str]) -> dict[str, ClusterResources]:
    """Per zone that holds VMs of the VDCs ``vdc_ids`` and answered: those VMs (``vdc_guests``: their
    pool's, untagged) and the zone's nodes (``/cluster/resources?type=node``, one call per such zone:
    as many entries as the zone has nodes, whatever its VMs)."""

    def read() -> dict[str, ClusterResources]:
        members = vdc_guests(ctx, vdc_ids)
        holding = [t for t in catalog.zone_targets(ctx) if members.get(t.zone)]
        fan = ctx.proxmox.cluster_resources(holding, kind="node")
        ctx.report_unavailable(list(fan.failures.values()))
        return {
            zone: ClusterResources(tuple(guest for _, guest in members[zone]), nodes.nodes)
            for zone, nodes in fan.results.items()
        }

    return ctx.memoize(("inventory", "pool-resources", vdc_ids), read)


@dataclass(frozen=True)
class HostStatus:
    host: Host
    online: bool


@dataclass(frozen=True)
class ZoneStatus:
    zone: Zone
    hosts: list[HostStatus]


def zone_statuses(ctx: Context) -> list[ZoneStatus]:
    """Every zone with its hosts and whether Proxmox reports each node online (one call per zone, for
    its nodes alone)."""
    access.require_self_service(ctx)
    nodes = zone_nodes(ctx)
    by_zone: dict[str, list[HostStatus]] = {}
    for host in catalog.hosts(ctx):
        node = nodes.get(host.zone, {}).get(host.node)
        by_zone.setdefault(host.zone, []).append(HostStatus(host, node is not None and node.online))
    return [ZoneStatus(zone, by_zone.get(zone.id, [])) for zone in catalog.zones(ctx)]
