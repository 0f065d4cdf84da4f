"""Edge gateways and public IPs as read: from their desired state (``store``: one read per request), and
what a gateway's host says of it now (``node.live``). Reads cost no Proxmox call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models import Vdc
from orchestrator.models.gateways import Gateway, PortForward, PublicIp
from orchestrator.services import access, catalog
from orchestrator.services.context import Context
from orchestrator.services.gateways import node, store
from orchestrator.services.vdcs.definitions import acting_vdc


@dataclass(frozen=True)
class EdgeGateway:
    """A gateway as the API shows it; its live state is asked of its host only when read."""

    gateway: Gateway

    @property
    def id(self) -> str:
        return self.gateway.id


@dataclass(frozen=True)
class PublicAddress:
    """A public IP of a VDC: its gateway (zone), its 1:1 NAT target, its port forwards."""

    gateway: Gateway
    ip: PublicIp

    @property
    def address(self) -> str:
        return self.ip.address

    @property
    def zone(self) -> str:
        return self.gateway.zone

    @property
    def vdc(self) -> str:
        return self.gateway.vdc

    @property
    def nat_to(self) -> str | None:
        return self.ip.nat_to

    @property
    def forwards(self) -> list[PortForward]:
        return [f for f in self.gateway.forwards if f.public_ip == self.ip.address]


def _visible(ctx: Context) -> list[Gateway]:
    scope = access.visible_vdcs(ctx)
    return [g for g in store.all_gateways(ctx) if scope is None or g.vdc in scope]


def list_edge_gateways(ctx: Context) -> list[EdgeGateway]:
    """The gateways of the VDC the request names, else of all the caller's VDCs (ADMIN: all)."""
    return [EdgeGateway(g) for g in _visible(ctx)]


def edge_gateway(ctx: Context, zone: str | None = None) -> EdgeGateway:
    """The gateway of the request's VDC in ``zone`` (may be left out when the VDC has one zone)."""
    vdc = acting_vdc(ctx)
    zone_id = checked_zone(vdc, zone)
    for gateway in store.all_gateways(ctx):
        if gateway.vdc == vdc.id and gateway.zone == zone_id:
            return EdgeGateway(gateway)
    raise NotFound("edge gateway", zone_id)


def list_public_ips(ctx: Context) -> list[PublicAddress]:
    """The public IPs of the VDC the request names, else of all the caller's VDCs (ADMIN: all)."""
    return [PublicAddress(g, ip) for g in _visible(ctx) for ip in g.public_ips]


def public_ips_used(ctx: Context, vdc_ids: Sequence[str] | None = None) -> dict[str, int]:
    """How many public IPs each VDC holds, its gateways' uplink addresses included (one read of the
    gateways per request; no authorization)."""
    counts: dict[str, int] = {}
    for gateway in store.all_gateways(ctx):
        if vdc_ids is None or gateway.vdc in vdc_ids:
            counts[gateway.vdc] = counts.get(gateway.vdc, 0) + public_addresses(gateway)
    return counts


def public_addresses(gateway: Gateway) -> int:
    """The addresses of the zone's public pool a gateway holds: its uplink's, and its public IPs. Every
    one counts against the VDC's ``publicIps`` quota (and so its organization's allowance): a tenant
    cannot drain the pool all tenants share by making gateways."""
    return 1 + len(gateway.public_ips)


def held(everything: Sequence[Gateway], vdc_id: str) -> int:
    return sum(public_addresses(g) for g in everything if g.vdc == vdc_id)


def gateway_zones(ctx: Context, vdc: Vdc) -> list[str]:
    """The zones of the VDC where it may have an edge gateway (those with an external network)."""
    return [z.id for z in catalog.zones(ctx) if vdc.allows_zone(z.id) and z.has_external_network]


def live(ctx: Context, gateway: Gateway) -> node.Live:
    """What the gateway's host says of it now (its health and counters)."""
    return node.live(ctx, gateway)


def checked_zone(vdc: Vdc, zone: str | None) -> str:
    """The zone ``zone`` of the VDC, checked; may be left out when the VDC has one zone."""
    if not zone:
        if len(vdc.zones) != 1:
            raise ValidationFailed("zone", f"VDC {vdc.id} may use several zones: name the gateway's zone")
        return str(vdc.zones[0])
    if not vdc.allows_zone(zone):
        raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone[:63]!r}")
    return zone
