"""Networks written to Proxmox's SDN: VNets and their subnets, the VDC's SDN zone, the zone's network ids.

Writes take the zone's SDN lock (VNet ids and tags are handed out from what the zone has, so two creates
never take the same), write the VNet and its subnet, and apply the zone's pending SDN changes once for
the batch. Whatever fails after the first write is taken back, so no half-made network is left behind;
the error says if that could not be done. The caller holds the VDC's lock.
"""

from __future__ import annotations

import logging
import secrets
import string
from collections.abc import Sequence

from orchestrator.errors import Conflict, FlexPlaneError, Unavailable
from orchestrator.models import Vdc, Zone
from orchestrator.models.networks import SDN_ZONE_PREFIX, VNET_PREFIX, Network
from orchestrator.services import inventory, locks, tasks
from orchestrator.services.context import Context
from orchestrator.services.networks.inputs import NetworkPlan
from orchestrator.sources.proxmox import Sdn, VNet, ZoneApi

logger = logging.getLogger(__name__)

# Applying SDN reloads the network configuration of every node of the zone.
APPLY_TIMEOUT = 120.0
# The share of a zone's network ids kept for the platform's own VDCs: one in this many (platform_reserve).
PLATFORM_RESERVE_SHARE = 10
_ID_ALPHABET = string.ascii_lowercase + string.digits


def _random_id(prefix: str, length: int, taken: set[str]) -> str:
    """A new Proxmox SDN id (``prefix`` and random letters and digits, 8 characters in all)."""
    while True:
        candidate = prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(length))
        if candidate not in taken:
            taken.add(candidate)
            return candidate


def _vdc_sdn_zone(sdn: Sdn, zone: Zone, vdc: Vdc, vnets: Sequence[VNet]) -> str:
    """The VDC's SDN zone in this cluster: the one its VNets are in, or a new one made as the zone's
    settings say (VXLAN among the cluster's nodes, or VLANs on the zone's bridge)."""
    for vnet in vnets:
        network = Network.from_vnet(zone.id, vnet)
        if network is not None and network.vdc == vdc.id:
            return network.sdn_zone
    ident = _random_id(SDN_ZONE_PREFIX, 8 - len(SDN_ZONE_PREFIX), {z.id for z in sdn.zones()})
    if zone.network_type == "vlan":
        sdn.create_zone(ident, "vlan", mtu=zone.network_mtu, bridge=zone.network_bridge)
    else:
        sdn.create_zone(ident, "vxlan", mtu=zone.network_mtu, peers=sdn.node_addresses())
    return ident


def platform_reserve(zone: Zone) -> int:
    """How many of the zone's network ids (the last ones free) only the platform's own VDCs may take: a
    tenth of its range, at least one. Every tenant shares the range; an organization's owner makes VDCs
    within an allowance, and whatever its VDCs take, the platform keeps room for an admin's VDC."""
    return max(1, (zone.network_id_last - zone.network_id_first + 1) // PLATFORM_RESERVE_SHARE)


def free_tag(zone: Zone, taken: set[int], vdc: Vdc) -> int:
    """The next network id of the zone's range nobody holds (now taken too); ``Conflict`` when none is
    left, or, for a VDC of an organization, when only the platform's reserve is (``platform_reserve``)."""
    free = [t for t in range(zone.network_id_first, zone.network_id_last + 1) if t not in taken]
    if vdc.organization and len(free) <= platform_reserve(zone):
        raise Conflict(
            f"zone {zone.id} has {len(free)} network id(s) left, which it keeps for the platform's own "
            f"VDCs ({platform_reserve(zone)} of {zone.network_id_first} to {zone.network_id_last}): VDC "
            f"{vdc.id} of organization {vdc.organization} cannot take them; an admin can widen the range"
        )
    if not free:
        raise Conflict(
            f"zone {zone.id} has no network id left ({zone.network_id_first} to {zone.network_id_last} "
            "are all in use): an admin can widen the zone's range"
        )
    taken.add(free[0])
    return free[0]


def _apply(api: ZoneApi, vdc: Vdc, doing: str) -> None:
    task = tasks.run(api, api.sdn.apply(), vdc.id, doing, APPLY_TIMEOUT)
    if task.running:
        raise Unavailable(api.zone, f"{doing}: Proxmox did not finish within {APPLY_TIMEOUT:g} s")


def make(ctx: Context, zone: Zone, vdc: Vdc, plans: Sequence[NetworkPlan]) -> list[Network]:
    """Write the networks ``plans`` in ``zone`` and apply them, under the zone's SDN lock: all of them,
    or none (what was written is taken back). The caller holds the VDC's lock.

    Calls to Proxmox: the VNets (1), the SDN zones (1), and for a VDC's first network of the zone its
    SDN zone (1, plus the cluster's nodes for VXLAN: 1); then per network its VNet and its subnet (2);
    and one apply with its task (2 or more, as the task runs).
    """
    api = inventory.zone_api(ctx, zone.id)
    sdn = api.sdn
    with locks.sdn_lock(ctx, zone.id):
        vnets = sdn.vnets()
        ids = {v.id for v in vnets}
        tags = {v.tag for v in vnets if v.tag is not None}
        made: list[Network] = []
        try:
            sdn_zone = _vdc_sdn_zone(sdn, zone, vdc, vnets)
            for plan in plans:
                network = Network(
                    vdc.id,
                    zone.id,
                    plan.name,
                    _random_id(VNET_PREFIX, 8 - len(VNET_PREFIX), ids),
                    sdn_zone,
                    free_tag(zone, tags, vdc),
                    str(plan.subnet),
                    str(plan.gateway),
                    plan.dns,
                )
                sdn.create_vnet(network.vnet, sdn_zone, network.tag or 0, network.alias())
                made.append(network)
                sdn.create_subnet(network.vnet, network.cidr, network.gateway)
            _apply(api, vdc, f"creating network(s) {', '.join(p.name for p in plans)} in zone {zone.id}")
        except FlexPlaneError as exc:
            _take_back(api, vdc, made, exc)
            raise
    return made


def _remove(sdn: Sdn, network: Network) -> None:
    """Delete a network's subnet and VNet (pending until applied)."""
    for subnet in sdn.subnets(network.vnet):
        sdn.delete_subnet(network.vnet, subnet.id)
    sdn.delete_vnet(network.vnet)


def _take_back(api: ZoneApi, vdc: Vdc, made: Sequence[Network], error: FlexPlaneError) -> None:
    """Remove the networks a failed write made, and say in ``error`` whether that worked."""
    if not made:
        return
    try:
        for network in made:
            _remove(api.sdn, network)
        _apply(api, vdc, f"removing the half-made network(s) of VDC {vdc.id}")
        note = "nothing was left behind"
    except FlexPlaneError as cleanup:
        names = ", ".join(f"{n.name} ({n.vnet})" for n in made)
        note = f"the half-made network(s) {names} could not be removed ({cleanup.message}): delete them"
        logger.warning("networks of VDC %s: %s", vdc.id, note)
    error.message = f"{error.message}; {note}"
    error.args = (error.message,)


def remove(ctx: Context, vdc: Vdc, networks: Sequence[Network], *, all_of_vdc: bool = False) -> None:
    """Delete ``networks`` (all of one VDC) and apply, zone by zone, under each zone's SDN lock; with
    ``all_of_vdc`` (they are all the VDC has there), its SDN zone goes with them."""
    for zone in sorted({n.zone for n in networks}):
        api = inventory.zone_api(ctx, zone)
        here = [n for n in networks if n.zone == zone]
        with locks.sdn_lock(ctx, zone):
            for network in here:
                _remove(api.sdn, network)
            if all_of_vdc:
                for sdn_zone in sorted({n.sdn_zone for n in here}):
                    api.sdn.delete_zone(sdn_zone)
            _apply(api, vdc, f"deleting network(s) of VDC {vdc.id} in zone {zone}")
