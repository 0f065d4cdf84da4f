"""The live state of every zone, read once per request: ``/cluster/resources`` of each cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.models import Host, Zone
from orchestrator.services import access, catalog
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import proxmox


@dataclass(frozen=True)
class ZoneResources:
    """Per zone: its QEMU guests (raw entries), its nodes' status, and its nodes' entries (their usage)."""

    guests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    node_entries: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


def zone_resources(ctx: Context) -> ZoneResources:
    """One ``/cluster/resources`` per zone, in parallel; zones that did not answer are reported on ``ctx``."""

    def read() -> ZoneResources:
        fan = proxmox().cluster_resources(catalog.zone_targets(ctx))
        ctx.report_unavailable(list(fan.failures.values()))
        out = ZoneResources()
        for zone, items in fan.results.items():
            out.guests[zone] = [i for i in items if i.get("type") == "qemu" and not i.get("template")]
            out.nodes[zone] = {
                i["node"]: i.get("status", "unknown") for i in items if i.get("type") == "node"
            }
            out.node_entries[zone] = {i["node"]: i for i in items if i.get("type") == "node"}
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
        nodes = live.nodes.get(host.zone, {})
        by_zone.setdefault(host.zone, []).append(HostStatus(host, nodes.get(host.node) == "online"))
    return [ZoneStatus(zone, by_zone.get(zone.id, [])) for zone in catalog.zones(ctx)]
