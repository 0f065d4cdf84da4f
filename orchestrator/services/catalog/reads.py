"""The catalog's reads callers make (USER or ADMIN): each kind's objects, and one of them by its id.

Each read comes from the request's snapshot of the catalog (``snapshot``): no call after the first.
"""

from __future__ import annotations

from typing import TypeVar

from orchestrator.errors import NotFound
from orchestrator.models import ComputeProfile, Host, Image, StorageProfile, Zone
from orchestrator.models.clusters import KubernetesVersion, version_key
from orchestrator.models.specs import Spec
from orchestrator.models.zones import host_ident
from orchestrator.services import access
from orchestrator.services.catalog import kinds
from orchestrator.services.catalog.kinds import CatalogKind
from orchestrator.services.catalog.snapshot import hosts, objects, zones
from orchestrator.services.context import Context

M = TypeVar("M", bound=Spec)


def _all(ctx: Context, k: CatalogKind[M]) -> list[M]:
    """Every object of kind ``k``, for a caller who may read the catalog (USER or ADMIN)."""
    access.require_self_service(ctx)
    return objects(ctx, k.kind, k.build)


def _one(ctx: Context, k: CatalogKind[M], ident: str) -> M:
    for obj in _all(ctx, k):
        if k.ident(obj) == ident:
            return obj
    raise NotFound(k.noun, ident)


def list_compute_profiles(ctx: Context) -> list[ComputeProfile]:
    return _all(ctx, kinds.COMPUTE_PROFILE_KIND)


def compute_profile(ctx: Context, name: str) -> ComputeProfile:
    """One compute profile; ``NotFound`` if there is none of that name."""
    return _one(ctx, kinds.COMPUTE_PROFILE_KIND, name)


def list_storage_profiles(ctx: Context) -> list[StorageProfile]:
    return _all(ctx, kinds.STORAGE_PROFILE_KIND)


def storage_profile(ctx: Context, name: str) -> StorageProfile:
    return _one(ctx, kinds.STORAGE_PROFILE_KIND, name)


def list_images(ctx: Context) -> list[Image]:
    return _all(ctx, kinds.IMAGE_KIND)


def image(ctx: Context, name: str) -> Image:
    return _one(ctx, kinds.IMAGE_KIND, name)


def list_zones(ctx: Context) -> list[Zone]:
    access.require_self_service(ctx)
    return zones(ctx)


def zone(ctx: Context, zone_id: str) -> Zone:
    return _one(ctx, kinds.ZONE_KIND, zone_id)


def list_hosts(ctx: Context, zone_id: str | None = None) -> list[Host]:
    access.require_self_service(ctx)
    return [h for h in hosts(ctx) if zone_id is None or h.zone == zone_id]


def host(ctx: Context, zone_id: str, node: str) -> Host:
    return _one(ctx, kinds.HOST_KIND, host_ident(zone_id, node))


def host_endpoint(ctx: Context, host: Host) -> str | None:
    """A host's agent address: infrastructure detail that ADMIN sees and others do not (None)."""
    return host.endpoint if ctx.principal.is_admin else None


# --- Kubernetes versions ---------------------------------------------------------------------------


def list_kubernetes_versions(ctx: Context) -> list[KubernetesVersion]:
    """The Kubernetes versions tenant clusters may run, newest first."""
    return sorted(
        _all(ctx, kinds.KUBERNETES_VERSION_KIND), key=lambda v: version_key(v.version), reverse=True
    )


def kubernetes_version(ctx: Context, version: str) -> KubernetesVersion:
    return _one(ctx, kinds.KUBERNETES_VERSION_KIND, version)
