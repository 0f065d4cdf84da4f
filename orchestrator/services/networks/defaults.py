"""A VDC's own networks: its default network in each of its zones, made with the zone (or by the first
create of a VM that finds none, for VDCs older than networks), and every network of a zone removed when
the zone leaves the VDC or the VDC goes. A VM created without naming networks gets a NIC on the default
one. The caller holds the VDC's lock.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.errors import QuotaExceeded
from orchestrator.models import Vdc, Zone
from orchestrator.models.networks import DEFAULT_CIDR, DEFAULT_NETWORK, Network
from orchestrator.services import catalog
from orchestrator.services.context import Context
from orchestrator.services.networks.inputs import CreateNetwork, NetworkPlan, validate
from orchestrator.services.networks.reads import fresh_networks
from orchestrator.services.networks.sdn import make, remove


def default_plan(zone: Zone) -> NetworkPlan:
    return validate(CreateNetwork(name=DEFAULT_NETWORK, cidr=DEFAULT_CIDR), zone)


def ensure_default_networks(ctx: Context, vdc: Vdc, zones: Iterable[str] | None = None) -> list[Network]:
    """Make the VDC's default network in each of ``zones`` (default: all of its zones) that lacks one, as
    far as its quota of networks has room: a default network is a network like any other (a VNet, with a
    VXLAN or VLAN id of its zone's shared range), counted against the quota and, through it, the
    organization's allowance. A zone left without one takes VMs on networks the tenant makes there. The
    caller holds the VDC's lock. Idempotent: answers the defaults made now."""
    wanted = set(vdc.zones if zones is None else zones)
    existing = fresh_networks(ctx, vdc)
    have = {n.zone for n in existing if n.is_default}
    room = vdc.quota.networks - len(existing)
    made: list[Network] = []
    for zone in catalog.zones(ctx):
        if zone.id in wanted and zone.id not in have and room > 0:
            made += make(ctx, zone, vdc, [default_plan(zone)])
            room -= 1
    return made


def default_network(ctx: Context, zone: Zone, vdc: Vdc) -> Network:
    """The VDC's default network in ``zone``, made now if it has none there (a VDC older than networks, or
    one whose quota had no room when it was made); ``QuotaExceeded`` when its quota has no room for it.
    The caller holds the VDC's lock."""
    existing = fresh_networks(ctx, vdc)
    found = next((n for n in existing if n.zone == zone.id and n.is_default), None)
    if found is not None:
        return found
    if len(existing) >= vdc.quota.networks:
        raise QuotaExceeded(
            f"VDC {vdc.id} has no default network in zone {zone.id} and its quota of networks "
            f"({vdc.quota.networks}) has no room for one: put the VM on a network of the VDC there "
            "(networks), or ask for a larger quota",
            ("networks",),
        )
    [made] = make(ctx, zone, vdc, [default_plan(zone)])
    return made


def delete_vdc_networks(ctx: Context, vdc: Vdc, zones: Iterable[str] | None = None) -> None:
    """Delete every network of the VDC (in ``zones``, when given): its VMs there are gone already; the
    caller holds the VDC's lock."""
    wanted = set(vdc.zones if zones is None else zones)
    networks = [n for n in fresh_networks(ctx, vdc) if n.zone in wanted]
    if networks:
        remove(ctx, vdc, networks, all_of_vdc=True)
