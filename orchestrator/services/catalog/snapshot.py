"""The catalog as one request reads it: one list call for every kind, on first use, kept for the request.

Every catalog object is a ConfigMap of the platform namespace (``orchestrator.sources.kube``). The
snapshot lives in the request's ``Context`` (and only there: the stateless rule).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from orchestrator.models import Host, Zone
from orchestrator.models.catalog import (
    COMPUTE_PROFILE_INPUTS,
    HOST_INPUTS,
    IMAGE_INPUTS,
    STORAGE_PROFILE_INPUTS,
    ZONE_INPUTS,
)
from orchestrator.models.clusters import KUBERNETES_VERSION_INPUTS
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import CatalogEntry
from orchestrator.sources.protocols import KubeApi
from orchestrator.sources.proxmox import ZoneTargets

logger = logging.getLogger(__name__)

COMPUTE_PROFILE = COMPUTE_PROFILE_INPUTS.kind
STORAGE_PROFILE = STORAGE_PROFILE_INPUTS.kind
IMAGE = IMAGE_INPUTS.kind
ZONE = ZONE_INPUTS.kind
HOST = HOST_INPUTS.kind
VDC = "vdc"
KUBERNETES_VERSION = KUBERNETES_VERSION_INPUTS.kind
KINDS = (COMPUTE_PROFILE, STORAGE_PROFILE, IMAGE, ZONE, HOST, VDC, KUBERNETES_VERSION)
ZONE_LABEL = "flexplane.io/zone"

M = TypeVar("M")


class _Snapshot:
    """The catalog as this request read it: one list call for every kind, on first use.

    The request's own writes are applied to it, so that what it reads afterwards includes them.
    """

    def __init__(self, source: KubeApi) -> None:
        self._source = source
        self._entries: dict[str, dict[str, CatalogEntry]] | None = None
        self._built: dict[str, list[Any]] = {}

    def entries(self, kind: str) -> dict[str, CatalogEntry]:
        if self._entries is None:
            loaded: dict[str, dict[str, CatalogEntry]] = {k: {} for k in KINDS}
            for entry in self._source.list_catalog(KINDS):
                loaded.setdefault(entry.kind, {})[entry.ident] = entry
            self._entries = loaded
        return self._entries.setdefault(kind, {})

    def built(self, kind: str, build: Callable[[Mapping[str, Any]], M]) -> list[M]:
        """The kind's objects as models, sorted by id; specs that do not parse are skipped and logged."""
        if kind not in self._built:
            models: list[M] = []
            for ident, entry in sorted(self.entries(kind).items()):
                try:
                    models.append(build(entry.spec))
                except (KeyError, TypeError, ValueError) as exc:
                    logger.warning("catalog: skipping %s %r, whose spec does not parse: %r", kind, ident, exc)
            self._built[kind] = models
        built: list[M] = self._built[kind]
        return built

    def put(self, entry: CatalogEntry) -> None:
        self.entries(entry.kind)[entry.ident] = entry
        self._built.pop(entry.kind, None)

    def drop(self, kind: str, ident: str) -> None:
        self.entries(kind).pop(ident, None)
        self._built.pop(kind, None)


def _snapshot(ctx: Context) -> _Snapshot:
    return ctx.memoize(("catalog", "snapshot"), lambda: _Snapshot(ctx.kube))


def entries(ctx: Context, kind: str) -> dict[str, CatalogEntry]:
    """The stored entries of one kind, by id (no authorization: for services, not callers)."""
    return _snapshot(ctx).entries(kind)


def objects(ctx: Context, kind: str, build: Callable[[Mapping[str, Any]], M]) -> list[M]:
    """The objects of one kind, built as models, sorted by id (no authorization)."""
    return _snapshot(ctx).built(kind, build)


def remember(ctx: Context, entry: CatalogEntry) -> None:
    """Apply a write this request made to its snapshot."""
    _snapshot(ctx).put(entry)


def forget(ctx: Context, kind: str, ident: str) -> None:
    _snapshot(ctx).drop(kind, ident)


def zones(ctx: Context) -> list[Zone]:
    """Every zone (no authorization: other services read it on behalf of an authorized caller)."""
    return objects(ctx, ZONE, Zone.from_spec)


def hosts(ctx: Context) -> list[Host]:
    """Every host, by zone then node (no authorization, as ``zones``)."""
    return sorted(objects(ctx, HOST, Host.from_spec), key=lambda h: (h.zone, h.node))


def zone_targets(ctx: Context) -> list[ZoneTargets]:
    """Every zone with the agents that can answer for it."""
    by_zone: dict[str, list[Host]] = {}
    for host in hosts(ctx):
        by_zone.setdefault(host.zone, []).append(host)
    return [ZoneTargets(z.id, tuple(h.target for h in by_zone.get(z.id, []))) for z in zones(ctx)]
