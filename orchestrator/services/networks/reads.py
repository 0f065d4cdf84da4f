"""A VDC's networks as read: Proxmox SDN VNets, one IPv4 subnet each, in the zones the VDC may use.

Reads cost one SDN read per zone (``GET /cluster/sdn/vnets``: the VNet's alias says whose it is and
what its addresses are, ``orchestrator.models.networks``). A request's reads are made once
(``vdc_networks``, ``list_networks``); a decision, under the VDC's lock, reads now (``fresh_networks``).

The gateways and the security groups read a VDC's networks here; this module imports nothing of them,
nor of the networks' changes, which follow a change into them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from orchestrator.errors import NotFound, Unavailable
from orchestrator.models import Vdc
from orchestrator.models.networks import Network
from orchestrator.services import access, catalog
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import VNet


def _vnets(ctx: Context, zones: Sequence[str]) -> dict[str, tuple[VNet, ...]]:
    """Per zone that answered, its VNets (one read per zone, in parallel, once per request); zones
    that did not answer are reported on ``ctx``."""

    def read() -> dict[str, tuple[VNet, ...]]:
        fan = ctx.proxmox.vnets([t for t in catalog.zone_targets(ctx) if t.zone in zones])
        ctx.report_unavailable(list(fan.failures.values()))
        return fan.results

    return ctx.memoize(("networks", tuple(sorted(zones))), read)


def _of(zone: str, vnets: Iterable[VNet], vdc_ids: frozenset[str] | None) -> Iterator[Network]:
    for vnet in vnets:
        network = Network.from_vnet(zone, vnet)
        if network is not None and (vdc_ids is None or network.vdc in vdc_ids):
            yield network


def _sorted(networks: Iterable[Network]) -> list[Network]:
    return sorted(networks, key=lambda n: (n.vdc, n.zone, n.name))


def vdc_networks(ctx: Context, vdc: Vdc, zone: str | None = None) -> list[Network]:
    """The VDC's networks (in ``zone`` only, when given), from this request's reads."""
    zones = [zone] if zone is not None else list(vdc.zones)
    found = _vnets(ctx, zones)
    return _sorted(n for z, vnets in found.items() for n in _of(z, vnets, frozenset({vdc.id})))


def list_networks(ctx: Context) -> list[Network]:
    """The networks of the VDCs the request may see: the one it names, else all the caller's."""
    visible = access.visible_vdcs(ctx)
    definitions = [
        v for v in catalog.objects(ctx, catalog.VDC, Vdc.from_spec) if visible is None or v.id in visible
    ]
    zones = sorted({z for v in definitions for z in v.zones})
    ids = frozenset(v.id for v in definitions)
    return _sorted(n for z, vnets in _vnets(ctx, zones).items() for n in _of(z, vnets, ids))


def get_network(ctx: Context, network_id: str) -> Network:
    """One network; another VDC's is ``NotFound`` exactly like a missing one."""
    for network in list_networks(ctx):
        if network.named(network_id):
            return network
    if ctx.unavailable:
        failure = ctx.unavailable[0]
        raise Unavailable(failure.where, f"network {network_id} cannot be read now: {failure.message}")
    raise NotFound("network", network_id)


def fresh_networks(ctx: Context, vdc: Vdc) -> list[Network]:
    """The VDC's networks in every zone, read now (for decisions under its lock): all zones must answer."""
    fan = ctx.proxmox.vnets([t for t in catalog.zone_targets(ctx) if vdc.allows_zone(t.zone)])
    if fan.failures:
        zone, failure = sorted(fan.failures.items())[0]
        raise Unavailable(
            zone, f"the networks of VDC {vdc.id} in zone {zone} cannot be read: {failure.message}"
        )
    vdc_ids = frozenset({vdc.id})
    return _sorted(n for z, vnets in fan.results.items() for n in _of(z, vnets, vdc_ids))
