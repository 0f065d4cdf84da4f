"""The live state of every zone, read once per request (``/cluster/resources`` of each cluster), and
the client of one zone's Proxmox, found from the catalog."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.errors import NotFound
from orchestrator.models import Host, Zone
from orchestrator.services import access, catalog
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import ClusterResources, Guest, NodeResource, ZoneApi, proxmox


def zone_api(ctx: Context, zone: str) -> ZoneApi:
    """The zone's Proxmox, through the agents the catalog lists for it; ``NotFound`` for no such zone."""
    for targets in catalog.zone_targets(ctx):
        if targets.zone == zone:
            return ZoneApi(proxmox(), targets)
    raise NotFound("zone", zone)


@dataclass(frozen=True)
class ZoneResources:
    """Per zone that answered: its ``/cluster/resources``, its VMs (QEMU guests, not templates), and
    its nodes by name."""

    resources: dict[str, ClusterResources] = field(default_factory=dict)
    guests: dict[str, tuple[Guest, ...]] = field(default_factory=dict)
    nodes: dict[str, dict[str, NodeResource]] = field(default_factory=dict)


def zone_resources(ctx: Context) -> ZoneResources:
    """One ``/cluster/resources`` per zone, in parallel; zones that did not answer are reported on ``ctx``."""

    def read() -> ZoneResources:
        fan = proxmox().cluster_resources(catalog.zone_targets(ctx))
        ctx.report_unavailable(list(fan.failures.values()))
        out = ZoneResources()
        for zone, resources in fan.results.items():
            out.resources[zone] = resources
            out.guests[zone] = resources.vms
            out.nodes[zone] = {n.node: n for n in resources.nodes}
        return out

    return ctx.memoize(("inventory", "resources"), read)


@dataclass(frozen=True)
class HostStatus:
    host: Host
    online: bool


@dataclass(frozen=True)
class ZoneStatus:
    zone: Zone
    hosts: list[HostStatus]


def zone_statuses(ctx: Context) -> list[ZoneStatus]:
    """Every zone with its hosts and whether Proxmox reports each node online (one call per zone)."""
    access.require_self_service(ctx)
    live = zone_resources(ctx)
    by_zone: dict[str, list[HostStatus]] = {}
    for host in catalog.hosts(ctx):
        node = live.nodes.get(host.zone, {}).get(host.node)
        by_zone.setdefault(host.zone, []).append(HostStatus(host, node is not None and node.online))
    return [ZoneStatus(zone, by_zone.get(zone.id, [])) for zone in catalog.zones(ctx)]
