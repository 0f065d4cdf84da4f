"""An edge gateway's changes: made, deleted, its legs following the VDC's networks, its firewall rules; and
``change_gateway``, which every change of a gateway (its public IPs' too) goes through.

Every change is made under the VDC's lock (its ``publicIps`` quota, across zones), written at the
version read (optimistic), its generation bumped, and then sent to the host that runs it
(``services.gateways.node``: placement, moves, what a host that does not answer means). A change that
takes an address of the zone's public pool also holds the zone's pool lock (a Lease,
``fp-lock-gwpool-<zone>``), under which every gateway of the zone is read and the new holder written,
so that no address is ever handed out twice, whatever the number of replicas and requests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, Unavailable, ValidationFailed
from orchestrator.models import Usage, Vdc, Zone
from orchestrator.models.gateways import FirewallRule, Gateway, Leg, next_free
from orchestrator.services import catalog, locks
from orchestrator.services.context import Context
from orchestrator.services.gateways import inputs, node, store
from orchestrator.services.gateways.reads import EdgeGateway, checked_zone, edge_gateway, held
from orchestrator.services.networks.reads import vdc_networks
from orchestrator.services.vdcs.definitions import acting_vdc
from orchestrator.services.vdcs.quota import check_quota

logger = logging.getLogger(__name__)

POOL_LEASE_PREFIX = "fp-lock-gwpool-"
R = TypeVar("R")


def _zone(ctx: Context, vdc: Vdc, zone: str | None) -> Zone:
    zone_id = checked_zone(vdc, zone)
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
    found = vdc_networks(ctx, vdc, zone.id)
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


def change_gateway(
    ctx: Context, zone_arg: str | None, edit: Edit[R], *, create: bool, allocate: bool = False
) -> R:
    """Make a change of the request's VDC's gateway in a zone, as the module says; ``create``: make the
    gateway if there is none; ``allocate``: the change takes an address of the zone's pool."""
    vdc = acting_vdc(ctx)
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
        check_quota(ctx, vdc, Usage(public_ips=1), current=Usage(public_ips=held(everything, vdc.id)))
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


def unchanged(gateway: Gateway, _all: Sequence[Gateway]) -> tuple[Gateway, EdgeGateway]:
    return gateway, EdgeGateway(gateway)


def create_edge_gateway(ctx: Context, zone: str | None = None) -> EdgeGateway:
    """Make the VDC's gateway in the zone (its uplink address from the zone's pool) and run it; a
    gateway there already is answered as it is (and sent to its host again)."""
    change_gateway(ctx, zone, unchanged, create=True)
    return edge_gateway(ctx.fresh(), zone)


def delete_edge_gateway(ctx: Context, zone: str | None = None) -> EdgeGateway:
    """Remove the VDC's gateway in the zone from its host and the platform; refused (CONFLICT) while it
    holds public IPs (release them first). A host that does not answer keeps it until removed by hand."""
    vdc = acting_vdc(ctx)
    zone_id = checked_zone(vdc, zone)
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
        change_gateway(ctx, zone, unchanged, create=False)
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

    change_gateway(ctx, zone, edit, create=True)
    return edge_gateway(ctx.fresh(), zone)


def remove_firewall_rule(ctx: Context, zone: str | None, position: int) -> EdgeGateway:
    """Remove the gateway's firewall rule at ``position`` (0: the first)."""

    def edit(gateway: Gateway, _everything: Sequence[Gateway]) -> tuple[Gateway, FirewallRule]:
        index = inputs.position(position, len(gateway.rules))
        rules = list(gateway.rules)
        removed = rules.pop(index)
        return replace(gateway, rules=tuple(rules)), removed

    change_gateway(ctx, zone, edit, create=False)
    return edge_gateway(ctx.fresh(), zone)
