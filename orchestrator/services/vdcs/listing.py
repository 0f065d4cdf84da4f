"""VDCs as shown: each with what it uses now, its VMs, its networks and its public IPs.

What its VMs use is read live from Proxmox. Shown to a request scoped to a few VDCs (a tenant's, or one
naming a VDC): the members of their pools (``inventory.vdc_guests``, one call per VDC and zone), at their
live sizes (the pool read has no tags). Shown fleet-wide (ADMIN without a VDC): the VMs tagged
``fp-vdc-<id>`` in ``/cluster/resources`` (one call per zone, whatever the number of VDCs or VMs). Its
networks cost one SDN read per zone, its public IPs one read of the gateways.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from orchestrator.errors import PermissionDenied
from orchestrator.models import Usage, Vdc

# The networks and the gateways are called as packages, at run time: their changes use this package's
# definitions and quota (see ``services.vdcs``).
from orchestrator.services import access, gateways, inventory, networks
from orchestrator.services.context import Context
from orchestrator.services.vdcs.definitions import get_vdc, visible_vdcs
from orchestrator.services.vdcs.quota import Tally, tally, zones_total


@dataclass(frozen=True)
class VdcUsage:
    """A VDC with what its VMs use now."""

    vdc: Vdc
    usage: Usage


def _live(ctx: Context) -> Tally:
    """Every VDC's usage from this request's inventory (zones that did not answer are on ``ctx``)."""

    def count() -> Tally:
        resources = inventory.zone_resources(ctx).resources
        return tally({zone: (*r.vms, *r.holders) for zone, r in resources.items()})

    return ctx.memoize(("vdcs", "usage"), count)


def _scope(ctx: Context) -> frozenset[str] | None:
    """The VDCs the request reads (``access.visible_vdcs``); none when it may read none."""
    try:
        return access.visible_vdcs(ctx)
    except PermissionDenied:
        return frozenset()


def _pooled(ctx: Context, vdc_ids: frozenset[str]) -> Tally:
    """The usage of the VDCs ``vdc_ids`` from their pools, at live sizes (zones that did not answer
    are on ``ctx``)."""

    def count() -> Tally:
        out: Tally = {}
        for zone, members in inventory.vdc_guests(ctx, vdc_ids).items():
            for vdc, guest in members:
                per_zone = out.setdefault(vdc, {})
                per_zone[zone] = per_zone.get(zone, Usage()) + Usage.of_guest(guest)
        return out

    return ctx.memoize(("vdcs", "pooled", vdc_ids), count)


def _shown(ctx: Context, vdc_ids: frozenset[str]) -> Tally:
    """The usage to show of ``vdc_ids``: from the pools the request reads anyway when it is scoped to a
    few VDCs that include them; from the pools of ``vdc_ids`` when the request is scoped otherwise and
    they are few; else (fleet-wide) from the request's inventory."""
    scope = _scope(ctx)
    if scope is not None and vdc_ids <= scope and inventory.pool_scoped(scope):
        return _pooled(ctx, scope)
    if scope is not None and inventory.pool_scoped(vdc_ids):
        return _pooled(ctx, vdc_ids)
    return _live(ctx)


def usage(ctx: Context, vdc_id: str) -> Usage:
    """What the VDC's VMs and networks use now (partial when a zone does not answer: that zone is on
    ``ctx``); its networks cost one SDN read per zone."""
    vdc = get_vdc(ctx, vdc_id)
    vms = zones_total(_shown(ctx, frozenset({vdc_id})).get(vdc_id, {}))
    held = gateways.public_ips_used(ctx, [vdc_id]).get(vdc_id, 0)
    return replace(vms, networks=len(networks.vdc_networks(ctx, vdc)), public_ips=held)


def list_vdcs(ctx: Context) -> list[VdcUsage]:
    """The VDCs the caller may see, each with its live usage (one Proxmox call per zone in all, and one
    SDN read per zone for their networks)."""
    vdcs = visible_vdcs(ctx)
    shown = _shown(ctx, frozenset(vdc.id for vdc in vdcs)) if vdcs else {}
    nets = Counter(n.vdc for n in networks.list_networks(ctx)) if vdcs else Counter[str]()
    ips = gateways.public_ips_used(ctx, [v.id for v in vdcs]) if vdcs else {}
    return [
        VdcUsage(
            vdc,
            replace(zones_total(shown.get(vdc.id, {})), networks=nets[vdc.id], public_ips=ips.get(vdc.id, 0)),
        )
        for vdc in vdcs
    ]
