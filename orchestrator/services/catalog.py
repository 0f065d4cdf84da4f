"""The platform catalog: zones and hosts (more kinds come with the catalog issue)."""

from __future__ import annotations

from orchestrator.models import Host, Zone
from orchestrator.services.context import Context
from orchestrator.sources.kube import kube
from orchestrator.sources.proxmox import ZoneTargets


def zones(ctx: Context) -> list[Zone]:
    return ctx.memoize(
        ("catalog", "zone"),
        lambda: sorted((Zone.from_catalog(item) for item in kube().catalog("zone")), key=lambda z: z.id),
    )


def hosts(ctx: Context) -> list[Host]:
    return ctx.memoize(
        ("catalog", "host"),
        lambda: sorted(
            (Host.from_catalog(item) for item in kube().catalog("host")), key=lambda h: (h.zone, h.node)
        ),
    )


def zone_targets(ctx: Context) -> list[ZoneTargets]:
    """Every zone with the agents that can answer for it."""
    by_zone: dict[str, list[Host]] = {}
    for host in hosts(ctx):
        by_zone.setdefault(host.zone, []).append(host)
    return [ZoneTargets(z.id, tuple(h.target for h in by_zone.get(z.id, []))) for z in zones(ctx)]
