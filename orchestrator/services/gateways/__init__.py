"""Edge gateways: a VDC's way out of its networks in a zone (NAT, public IPs, port forwards, firewall).

A VDC has at most one gateway per zone, made on demand: by ``create_edge_gateway``, or by the first
public IP allocated there. Its desired state is a ConfigMap (``services.gateways.store``); every change
is made under the VDC's lock (its ``publicIps`` quota, across zones), written at the version read
(optimistic), its generation bumped, and then sent to the host that runs it (``services.gateways.node``:
placement, moves, what a host that does not answer means).

Addresses come from the zone's public pool; handing one out also holds the zone's pool lock (a Lease,
``fp-lock-gwpool-<zone>``), under which every gateway of the zone is read and the new holder written,
so that no address is ever handed out twice, whatever the number of replicas and requests.

Who may do what: a USER member of the VDC (or ADMIN) acts in the VDC the request names; another VDC's
gateway or public IP is reported exactly as one that does not exist (a public IP of another VDC, where
one is named as input, is INVALID naming the field, as a made-up one is).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, Unavailable, ValidationFailed
from orchestrator.models import Usage, Vdc, Zone
from orchestrator.models.gateways import (
    FirewallRule,
    Gateway,
    Leg,
    PortForward,
    PublicIp,
    next_free,
)
from orchestrator.services import access, catalog, locks, networks, vdcs
from orchestrator.services.context import Context
from orchestrator.services.gateways import inputs, node, store
from orchestrator.services.gateways.inputs import ForwardRequest

logger = logging.getLogger(__name__)

__all__ = [
    "EdgeGateway",
    "ForwardRequest",
    "PublicAddress",
    "add_firewall_rule",
    "add_port_forward",
    "allocate_public_ip",
    "attach_public_ip",
    "create_edge_gateway",
    "delete_edge_gateway",
    "delete_vdc_gateways",
    "detach_public_ip",
    "edge_gateway",
    "follow_networks",
    "gateway_zones",
    "list_edge_gateways",
    "list_public_ips",
    "public_ips_used",
    "release_public_ip",
    "remove_firewall_rule",
    "remove_port_forward",
]

POOL_LEASE_PREFIX = "fp-lock-gwpool-"
R = TypeVar("R")


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


# ------------------------------------------------------------------------------------------ reads


def _visible(ctx: Context) -> list[Gateway]:
    scope = access.visible_vdcs(ctx)
    return [g for g in store.all_gateways(ctx) if scope is None or g.vdc in scope]


def list_edge_gateways(ctx: Context) -> list[EdgeGateway]:
    """The gateways of the VDC the request names, else of all the caller's VDCs (ADMIN: all)."""
    return [EdgeGateway(g) for g in _visible(ctx)]


def edge_gateway(ctx: Context, zone: str | None = None) -> EdgeGateway:
    """The gateway of the request's VDC in ``zone`` (may be left out when the VDC has one zone)."""
    vdc = _acting_vdc(ctx)
    zone_id = _zone_id(vdc, zone)
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
            counts[gateway.vdc] = counts.get(gateway.vdc, 0) + _public_addresses(gateway)
    return counts


def _public_addresses(gateway: Gateway) -> int:
    """The addresses of the zone's public pool a gateway holds: its uplink's, and its public IPs. Every
    one counts against the VDC's ``publicIps`` quota (and so its organization's allowance): a tenant
    cannot drain the pool all tenants share by making gateways."""
    return 1 + len(gateway.public_ips)


def _held(everything: Sequence[Gateway], vdc_id: str) -> int:
    return sum(_public_addresses(g) for g in everything if g.vdc == vdc_id)


def gateway_zones(ctx: Context, vdc: Vdc) -> list[str]:
    """The zones of the VDC where it may have an edge gateway (those with an external network)."""
    return [z.id for z in catalog.zones(ctx) if vdc.allows_zone(z.id) and z.has_external_network]


def live(ctx: Context, gateway: Gateway) -> node.Live:
    """What the gateway's host says of it now (its health and counters)."""
    return node.live(ctx, gateway)


# ------------------------------------------------------------------------------------------ writes


def _acting_vdc(ctx: Context) -> Vdc:
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)
    return vdcs.get_vdc(ctx, ctx.vdc)


def _zone_id(vdc: Vdc, zone: str | None) -> str:
    if not zone:
        if len(vdc.zones) != 1:
            raise ValidationFailed("zone", f"VDC {vdc.id} may use several zones: name the gateway's zone")
        return str(vdc.zones[0])
    if not vdc.allows_zone(zone):
        raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone[:63]!r}")
    return zone


def _zone(ctx: Context, vdc: Vdc, zone: str | None) -> Zone:
    zone_id = _zone_id(vdc, zone)
    found = next((z for z in catalog.zones(ctx) if z.id == zone_id), None)
    if found is None:
        raise ValidationFailed("zone", f"VDC {vdc.id} may not use zone {zone_id!r}")
    if not found.has_external_network:
        raise ValidationFailed(
            "zone", f"zone {zone_id} has no external network for edge gateways: an admin can set one"
        )
    return found


def _legs(ctx: Context, vdc: Vdc, zone: Zone) -> tuple[Leg, ...]:
    """The gateway's legs: one on each of the VDC's networks in the zone, read now."""
    found = networks.vdc_networks(ctx, vdc, zone.id)
    failure = next((f for f in ctx.unavailable if f.where == zone.id), None)
    if failure is not None:
        raise Unavailable(
            zone.id, f"the networks of VDC {vdc.id} in zone {zone.id} cannot be read: {failure.message}"
        )
    return tuple(Leg(n.id, n.vnet, f"{n.gateway}/{n.prefix}") for n in found if not n.pending)


# What a change is given: the gateway (with its legs read now) and every gateway of the platform, read
# under the locks; it answers the gateway as it should be (same generation: the write bumps it) and
# what the caller gets back.
Edit = Callable[[Gateway, Sequence[Gateway]], tuple[Gateway, R]]


def _change(ctx: Context, zone_arg: str | None, edit: Edit[R], *, create: bool, allocate: bool = False) -> R:
    """Make a change of the request's VDC's gateway in a zone, as the module says; ``create``: make the
    gateway if there is none; ``allocate``: the change takes an address of the zone's pool."""
    vdc = _acting_vdc(ctx)
    zone = _zone(ctx, vdc, zone_arg)
    with locks.vdc_lock(ctx, vdc.id):
        current = store.load(ctx, vdc.id, zone.id)
        if current is None and not create:
            raise NotFound("edge gateway", zone.id)
        legs = _legs(ctx, vdc, zone)
        if current is None or allocate:
            with locks.lock(ctx, f"{POOL_LEASE_PREFIX}{zone.id}", f"the public addresses of zone {zone.id}"):
                saved, result = _write(ctx, zone, vdc, current, legs, edit)
        else:
            saved, result = _write(ctx, zone, vdc, current, legs, edit)
        pushed = node.push(ctx, zone, saved)
    if pushed.error is not None:
        raise pushed.error
    return result


def _write(
    ctx: Context, zone: Zone, vdc: Vdc, current: Gateway | None, legs: tuple[Leg, ...], edit: Edit[R]
) -> tuple[Gateway, R]:
    everything = store.everything(ctx)
    if current is None:
        # Its uplink address is a public address of the zone: one of the VDC's public IPs.
        vdcs.check_quota(ctx, vdc, Usage(public_ips=1), current=Usage(public_ips=_held(everything, vdc.id)))
        taken = [a for g in everything if g.zone == zone.id for a in g.addresses]
        address = next_free(zone.public_pool, taken)
        if address is None:
            raise Conflict(f"zone {zone.id} has no public address left: an admin can widen its pool")
        base = Gateway(vdc.id, zone.id, address, generation=0)
    else:
        base = current
    with_legs = replace(base, legs=legs)
    wanted, result = edit(with_legs, everything)
    if wanted == base and current is not None:
        return current, result  # nothing changes: nothing to write (the push still confirms it runs)
    wanted = replace(wanted, generation=base.generation + 1)
    node.spec_of(zone, wanted)  # the node's own checks, before anything is written
    return store.save(ctx, wanted), result


def _unchanged(gateway: Gateway, _all: Sequence[Gateway]) -> tuple[Gateway, EdgeGateway]:
    return gateway, EdgeGateway(gateway)


def create_edge_gateway(ctx: Context, zone: str | None = None) -> EdgeGateway:
    """Make the VDC's gateway in the zone (its uplink address from the zone's pool) and run it; a
    gateway there already is answered as it is (and sent to its host again)."""
    _change(ctx, zone, _unchanged, create=True)
    return edge_gateway(ctx.fresh(), zone)


def delete_edge_gateway(ctx: Context, zone: str | None = None) -> EdgeGateway:
    """Remove the VDC's gateway in the zone from its host and the platform; refused (CONFLICT) while it
    holds public IPs (release them first). A host that does not answer keeps it until removed by hand."""
    vdc = _acting_vdc(ctx)
    zone_id = _zone_id(vdc, zone)
    with locks.vdc_lock(ctx, vdc.id):
        gateway = store.load(ctx, vdc.id, zone_id)
        if gateway is None:
            raise NotFound("edge gateway", zone_id)
        if gateway.public_ips:
            raise Conflict(
                f"the edge gateway of zone {zone_id} holds {len(gateway.public_ips)} public IP(s): "
                "release them first"
            )
        left = node.remove_everywhere(ctx, gateway)
        store.delete(ctx, gateway)
    if left:
        logger.warning("gateway %s deleted; hosts %s did not answer and may still run it", gateway.id, left)
    return EdgeGateway(gateway)


def follow_networks(ctx: Context, vdc: Vdc, zone: str) -> None:
    """Best effort, after the VDC's networks in ``zone`` changed: its gateway there (if any) gets a leg on
    each of them (a new generation, sent to its host); what fails now is done by the gateway's next
    change."""
    try:
        if not any(g.vdc == vdc.id and g.zone == zone for g in store.everything(ctx)):
            return
        _change(ctx, zone, _unchanged, create=False)
    except FlexPlaneError as exc:
        logger.warning("gateway of VDC %s in zone %s after a network change: %s", vdc.id, zone, exc.message)


def delete_vdc_gateways(ctx: Context, vdc_id: str) -> None:
    """Remove every gateway of a VDC being deleted (the caller holds its lock): from its hosts (best
    effort: a host that does not answer is logged), and from the platform, its addresses back in the
    pools."""
    for gateway in store.everything(ctx):
        if gateway.vdc != vdc_id:
            continue
        left = node.remove_everywhere(ctx, gateway)
        if left:
            logger.warning("gateway %s of deleted VDC %s may still run on %s", gateway.id, vdc_id, left)
        store.delete(ctx, gateway)


def allocate_public_ip(ctx: Context, zone: str | None = None) -> PublicAddress:
    """Hand the VDC a public IP of the zone's pool (its gateway there made if it has none), within its
    ``publicIps`` quota, which its gateways' uplink addresses count against too."""

    vdc = _acting_vdc(ctx)

    def edit(gateway: Gateway, everything: Sequence[Gateway]) -> tuple[Gateway, PublicIp]:
        vdcs.check_quota(ctx, vdc, Usage(public_ips=1), current=Usage(public_ips=_held(everything, vdc.id)))
        taken = [a for g in everything if g.zone == gateway.zone for a in g.addresses]
        taken.append(gateway.uplink_address)
        zone_of = next(z for z in catalog.zones(ctx) if z.id == gateway.zone)
        address = next_free(zone_of.public_pool, taken)
        if address is None:
            raise Conflict(f"zone {gateway.zone} has no public address left: an admin can widen its pool")
        ip = PublicIp(address)
        return replace(gateway, public_ips=(*gateway.public_ips, ip)), ip

    ip = _change(ctx, _zone_id(vdc, zone), edit, create=True, allocate=True)
    return _address_of(ctx.fresh(), ip.address, "address")


def _holder(ctx: Context, address: str, field: str) -> Gateway:
    """The gateway of the request's VDC that holds public IP ``address`` (read now)."""
    vdc = _acting_vdc(ctx)
    for gateway in store.everything(ctx):
        if gateway.vdc == vdc.id and gateway.public_ip(str(address)) is not None:
            return gateway
    raise ValidationFailed(field, f"{field}: {str(address)[:40]!r} is not a public IP of this VDC")


def _address_of(ctx: Context, address: str, field: str) -> PublicAddress:
    gateway = _holder(ctx, address, field)
    ip = gateway.public_ip(address)
    assert ip is not None
    return PublicAddress(gateway, ip)


def _on_ip(
    ctx: Context, address: str, field: str, change: Callable[[Gateway, PublicIp], Gateway]
) -> PublicAddress:
    """Change the gateway holding public IP ``address`` with ``change(gateway, ip)``; answers the IP as
    it is after (as it was, when it goes)."""
    zone = _holder(ctx, address, field).zone

    def edit(gateway: Gateway, _everything: Sequence[Gateway]) -> tuple[Gateway, PublicAddress]:
        ip = gateway.public_ip(address)
        if ip is None:  # released meanwhile
            raise ValidationFailed(field, f"{field}: {address!r} is not a public IP of this VDC")
        after = change(gateway, ip)
        return after, PublicAddress(after, after.public_ip(address) or ip)

    return _change(ctx, zone, edit, create=False)


def release_public_ip(ctx: Context, address: str) -> PublicAddress:
    """Give a public IP back to the zone's pool, with its 1:1 NAT and its port forwards."""

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        return replace(
            gateway,
            public_ips=tuple(p for p in gateway.public_ips if p.address != ip.address),
            forwards=tuple(f for f in gateway.forwards if f.public_ip != ip.address),
        )

    before = _address_of(ctx, address, "address")
    _on_ip(ctx, address, "address", change)
    return before


def attach_public_ip(ctx: Context, address: str, to_address: str) -> PublicAddress:
    """1:1 NAT a public IP to a VM's address on one of the VDC's networks in the gateway's zone."""

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        target = inputs.vm_address(to_address, gateway.legs, "toAddress")
        other = next((p for p in gateway.public_ips if p.nat_to == target and p.address != ip.address), None)
        if other is not None:
            raise ValidationFailed(
                "toAddress", f"toAddress {target} has a 1:1 NAT already (public IP {other.address})"
            )
        ips = tuple(replace(p, nat_to=target) if p.address == ip.address else p for p in gateway.public_ips)
        return replace(gateway, public_ips=ips)

    return _on_ip(ctx, address, "address", change)


def detach_public_ip(ctx: Context, address: str) -> PublicAddress:
    """Take a public IP's 1:1 NAT away (the IP stays the VDC's)."""

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        ips = tuple(replace(p, nat_to=None) if p.address == ip.address else p for p in gateway.public_ips)
        return replace(gateway, public_ips=ips)

    return _on_ip(ctx, address, "address", change)


def add_port_forward(ctx: Context, request: ForwardRequest) -> PublicAddress:
    """Forward a port of one of the VDC's public IPs to a VM's address and port."""
    made: list[PortForward] = []

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        forward = inputs.forward(request, gateway)
        made.append(forward)
        return replace(gateway, forwards=(*gateway.forwards, forward))

    inputs.port(request.port, "port")  # before any read: a port out of range is INVALID however it stands
    if request.to_port is not None:
        inputs.port(request.to_port, "toPort")
    return _on_ip(ctx, str(request.public_ip), "publicIp", change)


def remove_port_forward(ctx: Context, public_ip: str, protocol: str, port: int) -> PublicAddress:
    """Stop forwarding ``port``/``protocol`` of a public IP."""
    proto = inputs.choice(protocol, ("tcp", "udp"), "protocol")

    def change(gateway: Gateway, ip: PublicIp) -> Gateway:
        kept = tuple(f for f in gateway.forwards if f.key != (ip.address, proto, port))
        if len(kept) == len(gateway.forwards):
            raise ValidationFailed("port", f"port {port}/{proto} of {ip.address} is not forwarded")
        return replace(gateway, forwards=kept)

    return _on_ip(ctx, public_ip, "publicIp", change)


def add_firewall_rule(ctx: Context, zone: str | None, values: Mapping[str, Any]) -> EdgeGateway:
    """Add a rule to the gateway's firewall (at ``position``, default last; the first rule a new
    connection matches decides; inbound is denied and egress allowed when none does)."""

    def edit(gateway: Gateway, _everything: Sequence[Gateway]) -> tuple[Gateway, None]:
        rule = inputs.rule(values, gateway)
        rules = list(gateway.rules)
        at = values.get("position")
        index = len(rules) if at is None else inputs.position(at, len(rules) + 1)
        rules.insert(index, rule)
        return replace(gateway, rules=tuple(rules)), None

    _change(ctx, zone, edit, create=True)
    return edge_gateway(ctx.fresh(), zone)


def remove_firewall_rule(ctx: Context, zone: str | None, position: int) -> EdgeGateway:
    """Remove the gateway's firewall rule at ``position`` (0: the first)."""

    def edit(gateway: Gateway, _everything: Sequence[Gateway]) -> tuple[Gateway, FirewallRule]:
        index = inputs.position(position, len(gateway.rules))
        rules = list(gateway.rules)
        removed = rules.pop(index)
        return replace(gateway, rules=tuple(rules)), removed

    _change(ctx, zone, edit, create=False)
    return edge_gateway(ctx.fresh(), zone)
