"""VDCs' Proxmox pools: each VDC has a pool ``fp-<id>`` in each of its zones.

A VDC's pools are made all or none (those made here are removed again when a zone fails), and deleted
with the VDC all or none (those deleted are made again); pools taken back after another failure are
removed best effort (an empty pool left behind is harmless). A failure says what it means for the VDC.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from orchestrator.errors import FlexPlaneError, Unavailable, UpstreamFailure
from orchestrator.models import Vdc
from orchestrator.services import catalog
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import ZoneTargets

logger = logging.getLogger(__name__)


def _targets(ctx: Context) -> dict[str, ZoneTargets]:
    """Each zone of the catalog, by id."""
    return {t.zone: t for t in catalog.zone_targets(ctx)}


def _create_pool(ctx: Context, target: ZoneTargets, vdc: Vdc) -> bool:
    """Create the VDC's pool in a zone; False when it was there already (that is fine)."""
    try:
        ctx.proxmox.zone(target).create_pool(vdc.pool, f"flex.plane VDC {vdc.id}")
    except UpstreamFailure as exc:
        if "already exists" in exc.message:
            return False
        raise
    return True


def _delete_pool(ctx: Context, target: ZoneTargets, pool: str) -> None:
    """Delete a pool from a zone; one that is not there is fine."""
    try:
        ctx.proxmox.zone(target).delete_pool(pool)
    except UpstreamFailure as exc:
        if "does not exist" not in exc.message:
            raise


def _in_zone(zone: str, exc: FlexPlaneError, message: str) -> FlexPlaneError:
    """The same kind of failure, with a message that says what it means for the VDC."""
    if isinstance(exc, Unavailable):
        return Unavailable(zone, message)
    if isinstance(exc, UpstreamFailure):
        return UpstreamFailure(zone, message, status=exc.status, errors=exc.errors)
    return exc


def _unknown_zone(zone: str) -> Unavailable:
    return Unavailable(zone, f"zone {zone!r} is not in the catalog")


def ensure_pools(ctx: Context, vdc: Vdc, zones: Iterable[str]) -> list[str]:
    """Create the VDC's pool in each zone: all of them, or none (those made here are removed again).

    Returns the zones where this call created the pool.
    """
    by_zone = _targets(ctx)
    created: list[str] = []
    for zone in zones:
        try:
            target = by_zone.get(zone)
            if target is None:
                raise _unknown_zone(zone)
            if _create_pool(ctx, target, vdc):
                created.append(zone)
        except (Unavailable, UpstreamFailure) as exc:
            remove_pools(ctx, vdc.pool, created)
            raise _in_zone(
                zone,
                exc,
                f"could not create pool {vdc.pool} in zone {zone}: {exc.message}; "
                f"VDC {vdc.id!r} is unchanged",
            ) from exc
    return created


def remove_pools(ctx: Context, pool: str, zones: Iterable[str]) -> None:
    """Best effort: delete the pool in each zone, logging what could not be (an empty pool is harmless)."""
    by_zone = _targets(ctx)
    for zone in zones:
        target = by_zone.get(zone)
        if target is None:
            continue
        try:
            _delete_pool(ctx, target, pool)
        except (Unavailable, UpstreamFailure) as exc:
            logger.warning("VDC pools: %s in zone %s left behind: %s", pool, zone, exc.message)


def _restore_pools(ctx: Context, vdc: Vdc, zones: list[str]) -> None:
    """Best effort: create the pool again where it was just deleted."""
    try:
        ensure_pools(ctx, vdc, zones)
    except (Unavailable, UpstreamFailure) as exc:
        logger.warning("VDC pools: could not restore %s: %s", vdc.pool, exc.message)


def delete_pools(ctx: Context, vdc: Vdc) -> None:
    """Delete the VDC's pool in each of its zones: all of them, or none (those deleted here are made
    again, best effort). A zone no longer in the catalog is passed over: nothing flex.plane can reach."""
    by_zone = _targets(ctx)
    deleted: list[str] = []
    for zone in vdc.zones:
        target = by_zone.get(zone)
        if target is None:
            continue  # a zone no longer in the catalog: nothing flex.plane can reach there
        try:
            _delete_pool(ctx, target, vdc.pool)
        except (Unavailable, UpstreamFailure) as exc:
            _restore_pools(ctx, vdc, deleted)  # put back what was removed: the VDC stays whole
            raise _in_zone(
                zone,
                exc,
                f"could not delete pool {vdc.pool} in zone {zone}: {exc.message}; VDC {vdc.id!r} is kept",
            ) from exc
        deleted.append(zone)
