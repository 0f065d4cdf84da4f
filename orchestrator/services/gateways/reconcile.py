"""Bringing hosts in line with gateways' desired state: after a host comes back, is cordoned, drained
or removed (ADMIN; ``manage.py reconcile_gateways``, and ``drainHost`` for the hosts it drains).

For each gateway (under its VDC's lock, read again there): it is pushed (``node.push``) when its host
may no longer run it (it moves), its host has not confirmed its generation (an apply that did not
answer), hosts it left still have to remove it, or its host no longer runs it (asked live: a node that
lost it). Otherwise nothing is sent. One gateway's failure does not stop the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.errors import FlexPlaneError
from orchestrator.models import Zone
from orchestrator.models.gateways import Gateway
from orchestrator.services import access, catalog, locks
from orchestrator.services.context import Context
from orchestrator.services.gateways import node, store

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reconciled:
    """What a reconcile did with one gateway: ``action`` (kept, applied, moved), where it runs, and the
    error that stopped it (None: none)."""

    gateway: str
    action: str
    node: str | None
    error: str | None = None


def _needs_push(ctx: Context, zone: Zone, gateway: Gateway, ask_hosts: bool) -> bool:
    if not gateway.applied or gateway.left_on:
        return True
    chosen = node.choose(zone, catalog.hosts(ctx), gateway.node, node.offline(ctx, zone.id))
    if chosen is None or chosen.node != gateway.node:
        return True
    if not ask_hosts:
        return False
    found = node.live(ctx, gateway)
    return found.answered and (found.state is None or found.state.generation != gateway.generation)


def reconcile(
    ctx: Context, *, only: Callable[[Gateway], bool] = lambda _g: True, ask_hosts: bool = True
) -> list[Reconciled]:
    """Push every gateway ``only`` selects that needs it (see the module); ``ask_hosts`` False skips
    asking hosts whether they still run what they confirmed."""
    access.require_admin(ctx)
    zones = {z.id: z for z in catalog.zones(ctx)}
    done: list[Reconciled] = []
    for seen in store.everything(ctx):
        zone = zones.get(seen.zone)
        if zone is None or not only(seen):
            continue
        try:
            with locks.vdc_lock(ctx, seen.vdc):
                gateway = store.load(ctx, seen.vdc, seen.zone)
                if gateway is None:
                    continue
                if not _needs_push(ctx, zone, gateway, ask_hosts):
                    done.append(Reconciled(gateway.id, "kept", gateway.node))
                    continue
                pushed = node.push(ctx, zone, gateway)
        except FlexPlaneError as exc:
            done.append(Reconciled(seen.id, "failed", seen.node, exc.message))
            continue
        after = pushed.gateway
        action = "moved" if after.node != gateway.node and gateway.node else "applied"
        error = pushed.error.message if pushed.error is not None else None
        if error:
            logger.warning("gateway %s: %s", after.id, error)
        done.append(Reconciled(after.id, action, after.node, error))
    return done


def evacuate(ctx: Context, zone: str, host: str) -> list[Reconciled]:
    """Move the gateways off a host (drained, cordoned first): each is applied on another allowed host
    and removed from this one when it answers."""
    return reconcile(
        ctx, only=lambda g: g.zone == zone and (g.node == host or host in g.left_on), ask_hosts=False
    )
