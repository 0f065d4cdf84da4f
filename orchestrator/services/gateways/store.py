"""Gateways' desired state in the management cluster: a ConfigMap each (kind ``gateway``).

Writes are optimistic, as the catalog's: a replace names the ``resourceVersion`` it read, and one that
lost a race is a ``Conflict``. Every writer also holds the VDC's lock (``services.locks.vdc_lock``), so
a conflict means a write from outside flex.plane (or a lock lost to a paused process).
"""

from __future__ import annotations

import logging

from orchestrator.errors import NotFound
from orchestrator.models.gateways import GATEWAY_KIND, Gateway, gateway_id
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import CatalogEntry

logger = logging.getLogger(__name__)


def _built(entry: CatalogEntry) -> Gateway | None:
    try:
        return Gateway.from_spec(entry.spec, entry.resource_version)
    except (KeyError, TypeError, ValueError) as exc:
        logger.warning("gateway %r: skipping a spec that does not parse: %r", entry.ident, exc)
        return None


def everything(ctx: Context) -> list[Gateway]:
    """Every gateway, read now (one list call), by VDC then zone."""
    found = (_built(e) for e in ctx.kube.list_catalog([GATEWAY_KIND]) if e.kind == GATEWAY_KIND)
    return sorted((g for g in found if g is not None), key=lambda g: (g.vdc, g.zone))


def all_gateways(ctx: Context) -> list[Gateway]:
    """Every gateway, read once per request (for listings; decisions read ``everything`` now)."""
    return ctx.memoize(("gateways", "all"), lambda: everything(ctx))


def load(ctx: Context, vdc: str, zone: str) -> Gateway | None:
    """The VDC's gateway in the zone, read now; None when it has none."""
    entry = ctx.kube.get_catalog(GATEWAY_KIND, gateway_id(vdc, zone))
    return None if entry is None else _built(entry)


def save(ctx: Context, gateway: Gateway) -> Gateway:
    """Store the gateway: created when it has no version yet, else replaced at the version it was read
    at (``Conflict`` if it changed meanwhile). Answers it with its new version."""
    spec, labels = gateway.to_spec(), gateway.labels()
    if gateway.resource_version:
        entry = ctx.kube.replace_catalog(
            GATEWAY_KIND, gateway.id, spec, gateway.resource_version, labels=labels
        )
    else:
        entry = ctx.kube.create_catalog(GATEWAY_KIND, gateway.id, spec, labels=labels)
    saved = _built(entry)
    if saved is None:  # what we just wrote always parses
        raise NotFound("edge gateway", gateway.id)
    return saved


def delete(ctx: Context, gateway: Gateway) -> None:
    ctx.kube.delete_catalog(GATEWAY_KIND, gateway.id, gateway.resource_version or None)
