"""The catalog's changes (ADMIN): creating, changing and deleting each kind's objects.

Every value is validated as its kind declares it (``kinds``), and written at the version read. A profile or
an image may be allowed in VDCs as it is created (``allow_in_vdcs``), and its deletion removes it from the
VDCs that allowed it (``offerings``); a zone is not deleted while anything names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from orchestrator.errors import Conflict, NotFound, ValidationFailed
from orchestrator.models import ComputeProfile, Host, Image, StorageProfile, Zone
from orchestrator.models.clusters import KubernetesVersion
from orchestrator.models.specs import Spec
from orchestrator.models.zones import host_ident
from orchestrator.services import access
from orchestrator.services.catalog.fields import check_fields, label
from orchestrator.services.catalog.kinds import (
    COMPUTE_PROFILE_KIND,
    HOST_KIND,
    IMAGE_KIND,
    KUBERNETES_VERSION_KIND,
    STORAGE_PROFILE_KIND,
    ZONE_KIND,
    CatalogKind,
)
from orchestrator.services.catalog.offerings import (
    ALLOW_IN_VDCS,
    Withdrawn,
    allow,
    allowing,
    disallow,
    vdc_ids,
)
from orchestrator.services.catalog.snapshot import (
    STORAGE_PROFILE,
    VDC,
    entries,
    forget,
    hosts,
    objects,
    remember,
)
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import CatalogEntry

M = TypeVar("M", bound=Spec)


def _current(ctx: Context, k: CatalogKind[M], ident: str) -> tuple[CatalogEntry, M]:
    entry = entries(ctx, k.kind).get(ident)
    if entry is None:
        raise NotFound(k.noun, ident)
    return entry, k.build(entry.spec)


def _create(ctx: Context, k: CatalogKind[M], data: Mapping[str, Any]) -> M:
    access.require_admin(ctx)
    check_fields(data, k.declared.names)
    obj = k.validate(ctx, {**k.declared.defaults, **{f: v for f, v in data.items() if v is not None}})
    ident = k.ident(obj)
    if ident in entries(ctx, k.kind):
        raise Conflict(f"{k.noun} {ident!r} already exists")
    remember(ctx, ctx.kube.create_catalog(k.kind, ident, k.spec(obj), labels=k.labels(obj)))
    return obj


def _update(ctx: Context, k: CatalogKind[M], ident: str, changes: Mapping[str, Any]) -> M:
    access.require_admin(ctx)
    check_fields(changes, k.declared.names)
    entry, current = _current(ctx, k, ident)
    values = k.values(current)
    for field in k.declared.key_fields:
        if field in changes and changes[field] != values[field]:
            raise ValidationFailed(field, f"{label(field)} cannot change: create another {k.noun} instead")
    values |= dict(changes)
    obj = k.validate(ctx, values)
    remember(
        ctx,
        ctx.kube.replace_catalog(k.kind, ident, k.spec(obj), entry.resource_version, labels=k.labels(obj)),
    )
    return obj


def _create_offering(ctx: Context, k: CatalogKind[M], data: Mapping[str, Any]) -> M:
    """Create a profile or an image, and allow it in the VDCs its ``allow_in_vdcs`` names (checked first)."""
    access.require_admin(ctx)
    values = dict(data)
    vdcs = vdc_ids(ctx, values.pop(ALLOW_IN_VDCS, None))
    obj = _create(ctx, k, values)
    allow(ctx, k.kind, k.ident(obj), vdcs)
    return obj


def _withdraw(ctx: Context, k: CatalogKind[M], name: str) -> Withdrawn[M]:
    """Delete a profile or an image, once it has left every VDC that allowed it."""
    access.require_admin(ctx)
    _current(ctx, k, name)  # NotFound before any VDC is touched
    vdcs = disallow(ctx, k.kind, name)
    return Withdrawn(_delete(ctx, k, name), vdcs)


def allowed_in(ctx: Context, kind: str, name: str) -> list[str]:
    """The ids of the VDCs that allow a profile or an image (ADMIN): those its deletion removes it from."""
    access.require_admin(ctx)
    return allowing(ctx, kind, name)


def _delete(ctx: Context, k: CatalogKind[M], ident: str, check: Callable[[M], None] | None = None) -> M:
    access.require_admin(ctx)
    entry, current = _current(ctx, k, ident)
    if check is not None:
        check(current)
    if not ctx.kube.delete_catalog(k.kind, ident, entry.resource_version):
        raise NotFound(k.noun, ident)
    forget(ctx, k.kind, ident)
    return current


# --- compute profiles (ADMIN) -----------------------------------------------------------------------


def create_compute_profile(ctx: Context, data: Mapping[str, Any]) -> ComputeProfile:
    """Add a compute profile: ``name``, ``vcpus``, ``memory_mib``, ``cpu_type``, ``description``, and
    optionally ``allow_in_vdcs``, the VDCs to offer it in."""
    return _create_offering(ctx, COMPUTE_PROFILE_KIND, data)


def update_compute_profile(ctx: Context, name: str, changes: Mapping[str, Any]) -> ComputeProfile:
    """Change the given fields of a compute profile (VMs already made keep their size)."""
    return _update(ctx, COMPUTE_PROFILE_KIND, name, changes)


def delete_compute_profile(ctx: Context, name: str) -> Withdrawn[ComputeProfile]:
    """Remove a compute profile from the catalog and from the VDCs that allowed it; VMs made from it
    are untouched."""
    return _withdraw(ctx, COMPUTE_PROFILE_KIND, name)


# --- storage profiles (ADMIN) -----------------------------------------------------------------------


def create_storage_profile(ctx: Context, data: Mapping[str, Any]) -> StorageProfile:
    """Add a storage profile: ``storages`` maps zones to Proxmox storages (or lists ``{zone, storage}``);
    ``allow_in_vdcs``, optional, names the VDCs to offer it in."""
    return _create_offering(ctx, STORAGE_PROFILE_KIND, data)


def update_storage_profile(ctx: Context, name: str, changes: Mapping[str, Any]) -> StorageProfile:
    """Change the given fields; a limit set to None is removed (unlimited)."""
    return _update(ctx, STORAGE_PROFILE_KIND, name, changes)


def delete_storage_profile(ctx: Context, name: str) -> Withdrawn[StorageProfile]:
    """Remove a storage profile from the catalog and from the VDCs that allowed it; disks are untouched."""
    return _withdraw(ctx, STORAGE_PROFILE_KIND, name)


# --- images (ADMIN) ---------------------------------------------------------------------------------


def create_image(ctx: Context, data: Mapping[str, Any]) -> Image:
    """Add an image; its URL is checked against the image URL policy, its checksum is required;
    ``allow_in_vdcs``, optional, names the VDCs to offer it in."""
    return _create_offering(ctx, IMAGE_KIND, data)


def update_image(ctx: Context, name: str, changes: Mapping[str, Any]) -> Image:
    return _update(ctx, IMAGE_KIND, name, changes)


def delete_image(ctx: Context, name: str) -> Withdrawn[Image]:
    """Remove an image from the catalog and from the VDCs that allowed it; VMs made from it (and
    templates on hosts) are untouched."""
    return _withdraw(ctx, IMAGE_KIND, name)


# --- Kubernetes versions (ADMIN) ------------------------------------------------------------------


def create_kubernetes_version(ctx: Context, data: Mapping[str, Any]) -> KubernetesVersion:
    """Offer a Kubernetes version: ``version`` (v1.34.2) and ``image``, the catalog image of its nodes."""
    return _create(ctx, KUBERNETES_VERSION_KIND, data)


def update_kubernetes_version(ctx: Context, version: str, changes: Mapping[str, Any]) -> KubernetesVersion:
    """Change a version's node image (clusters' nodes made from now on boot from it)."""
    return _update(ctx, KUBERNETES_VERSION_KIND, version, changes)


def delete_kubernetes_version(ctx: Context, version: str) -> KubernetesVersion:
    """Stop offering a version: clusters running it keep running, and new ones cannot choose it."""
    return _delete(ctx, KUBERNETES_VERSION_KIND, version)


# --- zones and hosts (ADMIN) ------------------------------------------------------------------------


def create_zone(ctx: Context, data: Mapping[str, Any]) -> Zone:
    return _create(ctx, ZONE_KIND, data)


def update_zone(ctx: Context, zone_id: str, changes: Mapping[str, Any]) -> Zone:
    return _update(ctx, ZONE_KIND, zone_id, changes)


def delete_zone(ctx: Context, zone_id: str) -> Zone:
    """Remove a zone; refused (``Conflict``) while it has hosts, or VDCs or storage profiles name it."""

    def check(_zone: Zone) -> None:
        in_zone = [h.node for h in hosts(ctx) if h.zone == zone_id]
        if in_zone:
            raise Conflict(
                f"zone {zone_id!r} still has {len(in_zone)} host(s) ({', '.join(in_zone)}): remove them first"
            )
        using = sorted(i for i, e in entries(ctx, VDC).items() if zone_id in (e.spec.get("zones") or []))
        if using:
            raise Conflict(
                f"zone {zone_id!r} is allowed in VDC(s) {', '.join(using)}: remove it from them first"
            )
        storing = sorted(
            p.name for p in objects(ctx, STORAGE_PROFILE, StorageProfile.from_spec) if zone_id in p.storages
        )
        if storing:
            raise Conflict(
                f"zone {zone_id!r} has a storage in storage profile(s) {', '.join(storing)}: "
                "remove it from them first"
            )

    return _delete(ctx, ZONE_KIND, zone_id, check)


def create_host(ctx: Context, data: Mapping[str, Any]) -> Host:
    """Add a host: its ``zone``, Proxmox ``node`` name, agent ``endpoint`` (host:port), overcommit ratios."""
    return _create(ctx, HOST_KIND, data)


def update_host(ctx: Context, zone_id: str, node: str, changes: Mapping[str, Any]) -> Host:
    """Change a host; ``cordoned`` true keeps new VMs off it while its VMs keep running."""
    return _update(ctx, HOST_KIND, host_ident(zone_id, node), changes)


def drop_host(ctx: Context, zone_id: str, node: str, check: Callable[[Host], None] | None = None) -> Host:
    """Remove a host's catalog entry once ``check(host)`` passes: flex.plane stops reaching its agent,
    Proxmox is untouched. ``services.hosts.remove_host`` is the operation (it checks the host is empty)."""
    return _delete(ctx, HOST_KIND, host_ident(zone_id, node), check)
