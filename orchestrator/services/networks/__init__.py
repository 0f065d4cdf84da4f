"""A VDC's networks: Proxmox SDN VNets, one IPv4 subnet each, in the zones the VDC may use.

Reads cost one SDN read per zone (``GET /cluster/sdn/vnets``: the VNet's alias says whose it is and
what its addresses are, ``orchestrator.models.networks``). Writes take the VDC's lock (its quota of
networks, its names) and then the zone's SDN lock (VNet ids and tags are handed out from what the zone
has, so two creates never take the same), write the VNet and its subnet, and apply the zone's pending
SDN changes once for the batch. Whatever fails after the first write is taken back, so no half-made
network is left behind; the error says if that could not be done.

Every VDC has a network named ``default`` in each of its zones (made with the VDC, or by the first
create of a VM that finds none, for VDCs older than networks); a VM created without naming networks
gets a NIC on it.
"""

from __future__ import annotations

import logging
import secrets
import string
from collections.abc import Iterable, Iterator, Sequence

from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    NotFound,
    QuotaExceeded,
    Unavailable,
    ValidationFailed,
)
from orchestrator.models import Usage, Vdc, Zone
from orchestrator.models.networks import (
    DEFAULT_CIDR,
    DEFAULT_NETWORK,
    SDN_ZONE_PREFIX,
    VNET_PREFIX,
    Network,
)
from orchestrator.services import access, catalog, inventory, locks, tasks, vdcs
from orchestrator.services.context import Context
from orchestrator.services.networks.inputs import CreateNetwork, NetworkPlan, validate
from orchestrator.sources.proxmox import Sdn, VNet, ZoneApi

logger = logging.getLogger(__name__)

__all__ = [
    "CreateNetwork",
    "create_network",
    "default_plan",
    "delete_network",
    "delete_vdc_networks",
    "ensure_default_networks",
    "fresh_networks",
    "get_network",
    "list_networks",
    "make",
    "remove",
    "vdc_networks",
]

# Applying SDN reloads the network configuration of every node of the zone.
APPLY_TIMEOUT = 120.0
# The share of a zone's network ids kept for the platform's own VDCs: one in this many (platform_reserve).
PLATFORM_RESERVE_SHARE = 10
_ID_ALPHABET = string.ascii_lowercase + string.digits


# ------------------------------------------------------------------------------------------ reads


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


# ------------------------------------------------------------------------------------------ writes


def _acting_vdc(ctx: Context) -> Vdc:
    """The VDC a write acts in: the one the request names, of which the caller is a member (or ADMIN)."""
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)
    return vdcs.get_vdc(ctx, ctx.vdc)


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
    vdc = _acting_vdc(ctx)
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
        vdcs.check_quota(ctx, vdc, Usage(networks=1), current=Usage(networks=len(existing)))
        [made] = make(ctx, zone, vdc, [planned])
    _follow_in_firewalls(ctx, vdc)
    _follow_in_gateway(ctx, vdc, zone.id)
    return made


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


def delete_network(ctx: Context, network_id: str) -> Network:
    """Delete a network of the request's VDC; refused while VMs have a NIC on it (naming them)."""
    from orchestrator.services.networks.nics import vms_on

    vdc = _acting_vdc(ctx)
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
    from orchestrator.services import security_groups

    try:
        realised = security_groups.realise_vdc(ctx, vdc)
    except FlexPlaneError as exc:
        logger.warning("security groups of VDC %s after a network change: %s", vdc.id, exc.message)
        return
    for failure in realised.failures:
        logger.warning("security groups of VDC %s after a network change: %s", vdc.id, failure.message)


def _follow_in_gateway(ctx: Context, vdc: Vdc, zone: str) -> None:
    """Best effort: the VDC's edge gateway in the zone routes its networks anew (``services.gateways``)."""
    from orchestrator.services import gateways

    gateways.follow_networks(ctx.fresh(), vdc, zone)


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


# ------------------------------------------------------------------------------------------ defaults


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
