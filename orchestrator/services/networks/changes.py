"""A tenant's network changes: creating and deleting a network of the request's VDC (USER of it, or ADMIN).

A change takes the VDC's lock (its quota of networks, its names), is written to the zone's SDN
(``sdn``), and is then followed, best effort, into the VDC's firewalls and its edge gateway in the zone.
"""

from __future__ import annotations

import logging

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, ValidationFailed
from orchestrator.models import Usage, Vdc, Zone
from orchestrator.models.networks import Network

# The gateways and the security groups are called as packages, at run time: they read the networks
# (``reads``), and this module follows a change into them.
from orchestrator.services import catalog, gateways, locks, security_groups
from orchestrator.services.context import Context
from orchestrator.services.networks.inputs import CreateNetwork, validate
from orchestrator.services.networks.nics import vms_on
from orchestrator.services.networks.reads import fresh_networks
from orchestrator.services.networks.sdn import make, remove
from orchestrator.services.vdcs.definitions import acting_vdc
from orchestrator.services.vdcs.quota import check_quota

logger = logging.getLogger(__name__)


def _zone(ctx: Context, vdc: Vdc, zone_id: str | None) -> Zone:
    if zone_id is None or zone_id == "":
        if len(vdc.zones) != 1:
            raise ValidationFailed("zone", f"VDC {vdc.id} may use several zones: name the network's zone")
        zone_id = vdc.zones[0]
    if not vdc.allows_zone(zone_id):
        raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone_id!r}")
    for zone in catalog.zones(ctx):
        if zone.id == zone_id:
            return zone
    raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone_id!r}")


def create_network(ctx: Context, spec: CreateNetwork) -> Network:
    """Create a network in the request's VDC (USER of it, or ADMIN), within its quota of networks.

    A create repeated with the same name, zone and addresses answers the network the first one made.
    """
    vdc = acting_vdc(ctx)
    zone = _zone(ctx, vdc, spec.zone)
    planned = validate(spec, zone)
    with locks.vdc_lock(ctx, vdc.id):
        existing = fresh_networks(ctx, vdc)
        for network in existing:
            if network.zone == zone.id and network.name == planned.name:
                if network.subnet == planned.subnet and network.gateway == str(planned.gateway):
                    return network  # a retry
                raise ValidationFailed(
                    "name", f"VDC {vdc.id} already has a network named {planned.name!r} in zone {zone.id}"
                )
            if network.zone == zone.id and network.subnet.overlaps(planned.subnet):
                raise ValidationFailed(
                    "cidr", f"{planned.subnet} overlaps network {network.name} ({network.cidr}) of the VDC"
                )
        check_quota(ctx, vdc, Usage(networks=1), current=Usage(networks=len(existing)))
        [made] = make(ctx, zone, vdc, [planned])
    _follow_in_firewalls(ctx, vdc)
    _follow_in_gateway(ctx, vdc, zone.id)
    return made


def delete_network(ctx: Context, network_id: str) -> Network:
    """Delete a network of the request's VDC; refused while VMs have a NIC on it (naming them)."""
    vdc = acting_vdc(ctx)
    with locks.vdc_lock(ctx, vdc.id):
        network = next((n for n in fresh_networks(ctx, vdc) if n.named(network_id)), None)
        if network is None:
            raise NotFound("network", network_id)
        if network.is_default:
            raise Conflict(
                f"network {network.id} is VDC {vdc.id}'s default network: "
                "it goes when the zone leaves the VDC"
            )
        users = vms_on(ctx, network)
        if users:
            raise Conflict(
                f"network {network.id} is in use by {len(users)} VM(s): {', '.join(sorted(users))}; "
                "detach it from them or delete them first"
            )
        remove(ctx, vdc, [network])
    _follow_in_firewalls(ctx, vdc)
    _follow_in_gateway(ctx, vdc, network.zone)
    return network


def _follow_in_firewalls(ctx: Context, vdc: Vdc) -> None:
    """Best effort, after the VDC's networks changed: its VMs' firewalls know its networks anew (the
    ``fp-vdc-nets`` IP set its ``default`` group's inbound rule names); what could not be updated now
    is brought in line by the next change of its security groups."""
    try:
        realised = security_groups.realise_vdc(ctx, vdc)
    except FlexPlaneError as exc:
        logger.warning("security groups of VDC %s after a network change: %s", vdc.id, exc.message)
        return
    for failure in realised.failures:
        logger.warning("security groups of VDC %s after a network change: %s", vdc.id, failure.message)


def _follow_in_gateway(ctx: Context, vdc: Vdc, zone: str) -> None:
    """Best effort: the VDC's edge gateway in the zone routes its networks anew (``services.gateways``)."""
    gateways.follow_networks(ctx.fresh(), vdc, zone)
