"""Workers reach their control plane: before a cluster is written, each of its networks has a way to the
management cluster, where the hosted control planes answer (the API server on 6443, Konnectivity on 8132;
both on the shared address's port for a control plane behind it).

A network has one of two ways:

- the zone's own route: an admin says that the site's routers carry the zone's tenant networks to the
  management cluster (the zone's ``network_routed``), and flex.plane has nothing to make;
- the VDC's edge gateway in the zone, whose egress (source NAT on its uplink) takes the workers out. A VDC
  without one there gets it now (its uplink address counts in the VDC's ``publicIps`` quota, as a gateway
  made by hand does); a gateway without a leg on the network gets one; and a firewall rule of the gateway
  that denies the workers' way out refuses the cluster, naming the rule.

Where the zone has neither (no route, no external network for gateways), the cluster is refused with what
is missing. Where the control planes' addresses are known (``FLEXPLANE_CONTROL_PLANE_ADDRESSES``), a rule
that denies egress to all of them counts; where they are not, only a rule that denies egress everywhere
does: a rule for some destinations may or may not be in the way, and is left to the tenant who wrote it.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from orchestrator.errors import FlexPlaneError, NotFound, QuotaExceeded, ValidationFailed
from orchestrator.models import Zone
from orchestrator.models.clusters import SHARED
from orchestrator.models.gateways import ANYWHERE, FirewallRule, Gateway
from orchestrator.models.networks import Network
from orchestrator.models.vdcs import Vdc
from orchestrator.services import catalog
from orchestrator.services.clusters.inputs import shared_port
from orchestrator.services.context import Context
from orchestrator.services.gateways import changes, store

logger = logging.getLogger(__name__)

APISERVER_PORT = 6443
KONNECTIVITY_PORT = 8132
# What the workers open to the control plane: the kubelets' and kubectl's API server, the agents' tunnel;
# behind the shared address, both on its one port.
PORTS = ((APISERVER_PORT, "the API server"), (KONNECTIVITY_PORT, "Konnectivity"))


def ports_of(exposure: str) -> tuple[tuple[int, str], ...]:
    """The ports the workers of a cluster with ``exposure`` (``inputs.exposures()``) open to its control
    plane, each with what it is for."""
    port = shared_port()
    if exposure == SHARED and port is not None:
        return ((port, "the shared control-plane address"),)
    return PORTS


@dataclass(frozen=True)
class Reach:
    """How a cluster's networks reach the control planes: the zones whose route they take, and the edge
    gateways they go out through (``made``: those this create made, to take back if it fails)."""

    routed: tuple[str, ...] = ()
    gateways: tuple[str, ...] = ()
    made: tuple[str, ...] = ()


def control_plane_networks() -> list[ipaddress.IPv4Network]:
    """Where the control planes answer, as the operator said (empty: not known)."""
    try:
        return [ipaddress.IPv4Network(a, strict=False) for a in settings.FLEXPLANE_CONTROL_PLANE_ADDRESSES]
    except ValueError as exc:
        raise ImproperlyConfigured(f"FLEXPLANE_CONTROL_PLANE_ADDRESSES: {exc}") from None


def _covers(cidr: str, inner: Sequence[ipaddress.IPv4Network]) -> bool:
    """Whether a rule's ``cidr`` holds every one of ``inner`` (anywhere holds all)."""
    if cidr == ANYWHERE:
        return True
    outer = ipaddress.IPv4Network(cidr, strict=False)
    return bool(inner) and all(network.subnet_of(outer) for network in inner)


def in_the_way(
    rules: Sequence[FirewallRule],
    subnet: ipaddress.IPv4Network,
    targets: Sequence[ipaddress.IPv4Network],
    ports: Sequence[tuple[int, str]] = PORTS,
) -> tuple[int, FirewallRule, int, str] | None:
    """The first rule that decides the egress of ``subnet`` to ``targets`` on a control plane's port and
    denies it, with its position, the port and what the port is for; None when the way is open.

    A gateway's rules are tried in order and the first a connection matches decides (egress is allowed
    when none does). A rule decides for the whole way only when it matches all of it: egress, TCP (or any
    protocol), the port, every address of the network as source and every control plane's as destination.
    """
    for port, what in ports:
        for position, rule in enumerate(rules):
            if rule.direction != "out" or rule.protocol not in ("tcp", "any"):
                continue
            if rule.ports is not None and not rule.ports[0] <= port <= rule.ports[1]:
                continue
            if not _covers(rule.source, [subnet]) or not _covers(rule.destination, targets):
                continue
            if rule.action == "deny":
                return position, rule, port, what
            break  # allowed: this port's way is open
    return None


def _zone(ctx: Context, zone_id: str, field: str) -> Zone:
    try:
        return catalog.zone(ctx, zone_id)
    except NotFound:
        raise ValidationFailed(field, f"zone {zone_id} is not in the catalog") from None


def ensure(
    ctx: Context, vdc: Vdc, networks: Sequence[tuple[str, Network]], ports: Sequence[tuple[int, str]] = PORTS
) -> Reach:
    """Make sure each of ``networks`` (with the input field that named it) reaches the control planes, as
    the module says; ``ValidationFailed`` naming the field where one cannot, ``QuotaExceeded`` where the
    gateway it needs does not fit. A gateway made here is taken back when a later network fails."""
    routed: list[str] = []
    gateways: list[str] = []
    made: list[str] = []
    try:
        for field, network in networks:
            zone = _zone(ctx, network.zone, field)
            if zone.network_routed:
                routed.append(zone.id)
                continue
            if not zone.has_external_network:
                raise ValidationFailed(
                    field,
                    f"the workers on network {network.id} would not reach their control plane: zone "
                    f"{zone.id} does not route its tenant networks to the management cluster and has no "
                    "external network for an edge gateway (an admin can set either on the zone)",
                )
            gateway, new = _gateway(ctx, vdc, zone, network, field)
            if new:
                made.append(zone.id)
            gateways.append(gateway.id)
            blocked = in_the_way(gateway.rules, network.subnet, control_plane_networks(), ports)
            if blocked is not None:
                position, rule, port, what = blocked
                said = f" ({rule.description})" if rule.description else ""
                raise ValidationFailed(
                    field,
                    f"the workers on network {network.id} would not reach their control plane: rule "
                    f"{position} of VDC {vdc.id}'s edge gateway in zone {zone.id}{said} denies egress to "
                    f"{what} (tcp/{port}); remove it or allow that port before it",
                )
    except FlexPlaneError:
        take_back(ctx, Reach(made=tuple(made)))
        raise
    return Reach(tuple(dict.fromkeys(routed)), tuple(dict.fromkeys(gateways)), tuple(made))


def _gateway(ctx: Context, vdc: Vdc, zone: Zone, network: Network, field: str) -> tuple[Gateway, bool]:
    """The VDC's gateway in ``zone`` with a leg on ``network``, made or given the leg if need be (and
    whether it was made)."""
    current = store.load(ctx, vdc.id, zone.id)
    if current is not None and any(leg.network == network.id for leg in current.legs):
        return current, False
    try:
        # Made with a leg on each of the VDC's networks there; one that has it already gets its legs anew.
        changes.change_gateway(ctx, zone.id, changes.unchanged, create=current is None)
    except QuotaExceeded as exc:
        raise QuotaExceeded(
            f"the workers on network {network.id} need VDC {vdc.id}'s edge gateway in zone {zone.id} to "
            f"reach their control plane, which does not fit: {exc.message}",
            exc.fields,
        ) from None
    except ValidationFailed as exc:
        raise ValidationFailed(field, exc.message) from None
    except FlexPlaneError:
        if current is None and store.load(ctx, vdc.id, zone.id) is not None:  # made; its host refused it
            take_back(ctx, Reach(made=(zone.id,)))
        raise
    found = store.load(ctx, vdc.id, zone.id)
    if found is None or not any(leg.network == network.id for leg in found.legs):
        raise ValidationFailed(
            field,
            f"network {network.id} has no leg on VDC {vdc.id}'s edge gateway in zone {zone.id} yet: retry",
        )
    return found, current is None


def take_back(ctx: Context, reach: Reach) -> None:
    """Remove the gateways ``reach`` made, after the cluster they were made for failed (best effort: one
    that cannot be removed is logged, and the tenant sees it among the VDC's gateways)."""
    for zone in reach.made:
        try:
            changes.delete_edge_gateway(ctx, zone)
        except FlexPlaneError as exc:
            logger.warning(
                "the edge gateway made in zone %s for a failed cluster stays: %s", zone, exc.message
            )
