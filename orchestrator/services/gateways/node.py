"""Where a gateway runs, and sending it there: placement, the spec a node takes, apply, move, remove.

Placement (pure, ``choose``): a host of the gateway's zone that the zone allows to run gateways
(``Zone.gateway_hosts``; none listed: any), not cordoned and not reported offline by Proxmox. A gateway
stays where it is while its host is such a host; otherwise (its host cordoned, drained, offline,
removed from the catalog, or no longer allowed) it moves to the allowed host that runs the fewest
gateways. Moving applies the same desired state on the new host first, then removes it from the old one
once that answers (``leftOn`` keeps the hosts still to clean, tried again at every push).

A host that does not answer an apply keeps the gateway placed on it with its generation unconfirmed
(``appliedGeneration`` behind ``generation``): the caller hears ``Unavailable`` naming the host, and the
next push (the next change of the gateway, a drain, or ``manage.py reconcile_gateways``) sends it again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from agentclient.gateways import FirewallRule as SpecRule
from agentclient.gateways import GatewaySpec, GatewaySpecError, GatewayState, Uplink
from agentclient.gateways import Leg as SpecLeg
from agentclient.gateways import PortForward as SpecForward
from agentclient.gateways import PublicIp as SpecPublicIp
from orchestrator.errors import FlexPlaneError, Unavailable, UpstreamFailure, ValidationFailed
from orchestrator.models import Host, Zone
from orchestrator.models.gateways import Gateway, node_id
from orchestrator.services import catalog, inventory
from orchestrator.services.context import Context
from orchestrator.services.gateways import store

logger = logging.getLogger(__name__)

# Building a namespace, its legs and its ruleset on a node takes a moment; a state read is quick.
APPLY_TIMEOUT = 20.0
STATE_TIMEOUT = 4.0
REMOVE_TIMEOUT = 10.0


def where(zone: str, node: str) -> str:
    return f"host {node} of zone {zone}"


def eligible(zone: Zone, hosts: Iterable[Host], offline: Iterable[str] = ()) -> list[Host]:
    """The hosts of ``zone`` that may run its gateways now."""
    allowed = set(zone.gateway_hosts)
    down = set(offline)
    return [
        h
        for h in hosts
        if h.zone == zone.id and (not allowed or h.node in allowed) and not h.cordoned and h.node not in down
    ]


def choose(
    zone: Zone,
    hosts: Sequence[Host],
    current: str | None,
    offline: Iterable[str] = (),
    load: Mapping[str, int] | None = None,
) -> Host | None:
    """The host a gateway runs on: its current one while that may run gateways, else the allowed host
    with the fewest gateways (then by name); None when no host may."""
    fit = eligible(zone, hosts, offline)
    for host in fit:
        if host.node == current:
            return host
    counts = load or {}
    return min(fit, key=lambda h: (counts.get(h.node, 0), h.node), default=None)


def spec_of(zone: Zone, gateway: Gateway) -> GatewaySpec:
    """What the node takes: the gateway's desired state with the zone's external network."""
    prefix = zone.external_cidr.partition("/")[2]
    try:
        return GatewaySpec(
            id=node_id(gateway.vdc, gateway.zone),
            generation=gateway.generation,
            uplink=Uplink(
                bridge=zone.external_bridge,
                vlan=zone.external_vlan or None,
                address=f"{gateway.uplink_address}/{prefix}",
                gateway=zone.external_gateway,
            ),
            legs=tuple(SpecLeg(vnet=leg.bridge, address=leg.address) for leg in gateway.legs),
            public_ips=tuple(SpecPublicIp(p.address, p.nat_to) for p in gateway.public_ips),
            forwards=tuple(
                SpecForward(f.public_ip, f.protocol, f.port, f.to_address, f.to_port)  # type: ignore[arg-type]
                for f in gateway.forwards
            ),
            rules=tuple(
                SpecRule(r.direction, r.action, r.protocol, r.source, r.destination, r.ports)  # type: ignore[arg-type]
                for r in gateway.rules
            ),
        )
    except GatewaySpecError as exc:
        raise ValidationFailed(_api_field(exc.field), exc.message) from None


_API_FIELDS = {"to_address": "toAddress", "public_ip": "publicIp", "nat_to": "toAddress", "to_port": "toPort"}


def _api_field(spec_field: str) -> str:
    """The API's name of a field the spec (or the node) refused: ``forwards[2].port`` -> ``port``."""
    last = spec_field.rsplit(".", 1)[-1]
    return _API_FIELDS.get(last, last)


def offline(ctx: Context, zone: str) -> frozenset[str]:
    """The zone's nodes Proxmox reports offline (none known when the zone does not answer): read once per
    request, which a reconcile pass is too, not once per gateway."""

    def read() -> frozenset[str]:
        try:
            nodes = inventory.zone_api(ctx, zone).resources("node").nodes
        except FlexPlaneError:
            return frozenset()
        return frozenset(n.node for n in nodes if not n.online)

    return ctx.memoize(("gateways", "offline", zone), read)


def _load(ctx: Context, zone: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for other in store.everything(ctx):
        if other.zone == zone and other.node:
            counts[other.node] = counts.get(other.node, 0) + 1
    return counts


def _failure(zone: str, node: str, exc: FlexPlaneError, doing: str) -> FlexPlaneError:
    """The error a caller hears for the host's refusal or silence (``sources.proxmox.agents``)."""
    place = where(zone, node)
    if isinstance(exc, Unavailable):
        return Unavailable(
            node,
            f"{doing} on {place}: its agent did not answer ({exc.message}); the desired state is "
            "recorded and is sent again with the gateway's next change or reconcile",
        )
    if isinstance(exc, ValidationFailed):
        return ValidationFailed(_api_field(exc.field), f"{place} refused it: {exc.message}")
    return UpstreamFailure(place, f"{doing} on {place}: {exc.message}")


@dataclass(frozen=True)
class Pushed:
    """A push's outcome: the gateway as stored after it, and the error the caller hears (if any)."""

    gateway: Gateway
    error: FlexPlaneError | None = None


def push(ctx: Context, zone: Zone, gateway: Gateway) -> Pushed:
    """Send the gateway's desired state to the host it runs on (placed or moved as the module says),
    remove it from hosts it left, and store where it is; the caller holds the VDC's lock."""
    hosts = catalog.hosts(ctx)
    target = choose(zone, hosts, gateway.node, offline(ctx, zone.id), _load(ctx, zone.id))
    if target is None:
        return Pushed(
            gateway,
            Unavailable(
                zone.id,
                f"no host of zone {zone.id} may run edge gateways now (all cordoned, offline "
                "or not allowed): the desired state is recorded",
            ),
        )
    left = list(gateway.left_on)
    if gateway.node and gateway.node != target.node and gateway.node not in left:
        left.append(gateway.node)
    applied = gateway.applied_generation if gateway.node == target.node else 0
    error: FlexPlaneError | None = None
    spec = spec_of(zone, gateway)
    try:
        ctx.proxmox.agents.apply_gateway(target.target, spec, where=target.node, timeout=APPLY_TIMEOUT)
        applied = gateway.generation
    except FlexPlaneError as exc:
        error = _failure(zone.id, target.node, exc, f"applying gateway {gateway.id}")
        logger.warning("gateway %s: %s", gateway.id, error.message)
    if applied == gateway.generation:
        left = _remove_from(ctx, zone, hosts, gateway, [n for n in left if n != target.node])
    placed = replace(gateway, node=target.node, applied_generation=applied, left_on=tuple(left))
    if placed != gateway:
        placed = store.save(ctx, placed)
    return Pushed(placed, error)


def _remove_from(
    ctx: Context, zone: Zone, hosts: Sequence[Host], gateway: Gateway, nodes: Sequence[str]
) -> list[str]:
    """Remove the gateway from ``nodes`` (hosts it moved away from); answers those still to clean."""
    by_node = {h.node: h for h in hosts if h.zone == zone.id}
    still: list[str] = []
    for node in nodes:
        host = by_node.get(node)
        if host is None:
            continue  # gone from the catalog: flex.plane no longer reaches it
        try:
            ctx.proxmox.agents.remove_gateway(
                host.target, node_id(gateway.vdc, gateway.zone), where=node, timeout=REMOVE_TIMEOUT
            )
        except FlexPlaneError as exc:
            logger.info(
                "gateway %s: not yet removed from %s: %s", gateway.id, where(zone.id, node), exc.message
            )
            still.append(node)
    return still


def remove_everywhere(ctx: Context, gateway: Gateway) -> list[str]:
    """Remove a deleted gateway from its host and those it left; answers the hosts that did not answer."""
    zone = next((z for z in catalog.zones(ctx) if z.id == gateway.zone), None)
    nodes = [n for n in (gateway.node, *gateway.left_on) if n]
    if zone is None:
        return nodes
    return _remove_from(ctx, zone, catalog.hosts(ctx), gateway, nodes)


@dataclass(frozen=True)
class Live:
    """What the gateway's host says of it now: its state (None: it runs none), and what is wrong (it
    did not answer: ``answered`` False)."""

    state: GatewayState | None
    problem: str | None = None
    answered: bool = False


def live(ctx: Context, gateway: Gateway) -> Live:
    """Ask the gateway's host for its state (one call, short deadline)."""
    if gateway.node is None:
        return Live(None, "not placed on a host yet")
    host = next((h for h in catalog.hosts(ctx) if h.zone == gateway.zone and h.node == gateway.node), None)
    if host is None:
        return Live(None, f"host {gateway.node} is no longer in the catalog")
    try:
        state = ctx.proxmox.agents.gateway_state(
            host.target, node_id(gateway.vdc, gateway.zone), where=gateway.node, timeout=STATE_TIMEOUT
        )
    except FlexPlaneError as exc:
        return Live(None, f"{where(gateway.zone, gateway.node)} did not answer: {exc.message}")
    if state is None:
        return Live(None, f"{where(gateway.zone, gateway.node)} does not run it", answered=True)
    return Live(state, answered=True)
