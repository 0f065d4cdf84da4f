"""VDCs (virtual data centers): their definitions, their live usage, their quotas.

A VDC's definition is a catalog ConfigMap (kind ``vdc``). Each VDC has a pool ``fp-<id>`` in each of
its zones. What it uses is read live from Proxmox. Shown to a request scoped to a few VDCs (a tenant's,
or one naming a VDC): the members of their pools (``inventory.vdc_guests``, one call per VDC and zone),
at their live sizes (the pool read has no tags). Shown fleet-wide (ADMIN without a VDC): the VMs tagged
``fp-vdc-<id>`` in ``/cluster/resources`` (one call per zone, whatever the number of VDCs or VMs). For
a decision (the quota, under the VDC's lock): ``/cluster/resources`` read now, whose tags hold the size
each create or resize asked for (``fp-req``), so that a VM being made counts at that size.

Who may do what: ADMIN creates, updates and deletes VDCs and sees every VDC; an ORG_OWNER does so for
the VDCs of the organizations they own, within each one's allowance (``services.organizations``); a USER
sees the VDCs they are a member of. Any other VDC is reported exactly as one that does not exist.

Writes to a VDC hold its lock (``services.locks.vdc_lock``), as VM creates do: a VDC is not
deleted, nor a zone taken from it, while a create in it checks its quota. A VDC that offers images in
zones it did not before has them cached on those zones' hosts (``services.image_cache``), after its lock.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
    UpstreamFailure,
    ValidationFailed,
)
from orchestrator.models import Usage, Vdc
from orchestrator.models.networks import Network
from orchestrator.models.vdcs import (
    DEFAULT_NETWORKS_QUOTA,
    DEFAULT_PUBLIC_IPS_QUOTA,
    DEFAULT_SNAPSHOTS_PER_VM,
    MAX_SNAPSHOTS_PER_VM,
)
from orchestrator.models.vms import vdc_in
from orchestrator.services import access, catalog, image_cache, inventory, locks, networks, organizations
from orchestrator.services.access_admin import roles
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import Guest, ZoneTargets

logger = logging.getLogger(__name__)

FIELDS = (
    "id",
    "name",
    "description",
    "zones",
    "compute_profiles",
    "storage_profiles",
    "images",
    "quota",
    "organization",
)
QUOTA_FIELDS = ("vcpus", "memory_mib", "disk_gb", "vms", "networks", "public_ips")
# Quotas a VDC's input may leave out (the VDC then has the default).
_OPTIONAL_QUOTAS = {"networks": DEFAULT_NETWORKS_QUOTA, "public_ips": DEFAULT_PUBLIC_IPS_QUOTA}
# GraphQL's Int is 32 bits: no quota beyond what the API can carry.
_INT_MAX = 2**31 - 1
_QUOTA_LIMITS = {
    "vcpus": 1_000_000,
    "memory_mib": _INT_MAX,
    "disk_gb": _INT_MAX,
    "vms": 1_000_000,
    "networks": 10_000,
    "public_ips": 10_000,
}
_QUOTA_UNITS = {
    "vcpus": "",
    "memory_mib": " MiB",
    "disk_gb": " GiB",
    "vms": "",
    "networks": "",
    "public_ips": "",
}

# vdc id -> zone -> what its VMs there use
Tally = dict[str, dict[str, Usage]]


@dataclass(frozen=True)
class VdcUsage:
    """A VDC with what its VMs use now."""

    vdc: Vdc
    usage: Usage


# ------------------------------------------------------------------------------------- reading


def _may_see(ctx: Context, vdc: Vdc) -> bool:
    """ADMIN, a member, or an ORG_OWNER of the VDC's organization."""
    return vdc.id in ctx.principal.vdcs or access.manages_organization(ctx, vdc.organization)


def _definitions(ctx: Context) -> list[Vdc]:
    return catalog.objects(ctx, catalog.VDC, Vdc.from_spec)


def visible_vdcs(ctx: Context) -> list[Vdc]:
    """The VDCs the caller may see, by id (no Proxmox call). USER: their own; ADMIN: all."""
    access.require_self_service(ctx)
    return [vdc for vdc in _definitions(ctx) if _may_see(ctx, vdc)]


def get_vdc(ctx: Context, vdc_id: str) -> Vdc:
    """One VDC; ``NotFound`` if there is none, or if the caller is not a member (indistinguishable)."""
    access.require_self_service(ctx)
    for vdc in _definitions(ctx):
        if vdc.id == vdc_id and _may_see(ctx, vdc):
            return vdc
    raise NotFound("VDC", vdc_id)


def _tally(guests: Mapping[str, Iterable[Guest]]) -> Tally:
    """Per VDC and zone, what its VMs use (``guests``: each zone's VMs)."""
    out: Tally = {}
    for zone, vms in guests.items():
        for guest in vms:
            vdc = vdc_in(guest.tags)
            if vdc is None:
                continue
            per_zone = out.setdefault(vdc, {})
            per_zone[zone] = per_zone.get(zone, Usage()) + Usage.of_guest(guest)
    return out


def _live(ctx: Context) -> Tally:
    """Every VDC's usage from this request's inventory (zones that did not answer are on ``ctx``)."""
    return ctx.memoize(("vdcs", "usage"), lambda: _tally(inventory.zone_resources(ctx).guests))


def _scope(ctx: Context) -> frozenset[str] | None:
    """The VDCs the request reads (``access.visible_vdcs``); none when it may read none."""
    try:
        return access.visible_vdcs(ctx)
    except PermissionDenied:
        return frozenset()


def _pooled(ctx: Context, vdc_ids: frozenset[str]) -> Tally:
    """The usage of the VDCs ``vdc_ids`` from their pools, at live sizes (zones that did not answer
    are on ``ctx``)."""

    def tally() -> Tally:
        out: Tally = {}
        for zone, members in inventory.vdc_guests(ctx, vdc_ids).items():
            for vdc, guest in members:
                per_zone = out.setdefault(vdc, {})
                per_zone[zone] = per_zone.get(zone, Usage()) + Usage.of_guest(guest)
        return out

    return ctx.memoize(("vdcs", "pooled", vdc_ids), tally)


def _shown(ctx: Context, vdc_ids: frozenset[str]) -> Tally:
    """The usage to show of ``vdc_ids``: from the pools the request reads anyway when it is scoped to a
    few VDCs that include them; from the pools of ``vdc_ids`` when the request is scoped otherwise and
    they are few; else (fleet-wide) from the request's inventory."""
    scope = _scope(ctx)
    if scope is not None and vdc_ids <= scope and inventory.pool_scoped(scope):
        return _pooled(ctx, scope)
    if scope is not None and inventory.pool_scoped(vdc_ids):
        return _pooled(ctx, vdc_ids)
    return _live(ctx)


def _fresh(ctx: Context, why: str) -> Tally:
    """Every VDC's usage read now, not from the request's memo; ``Unavailable`` unless every zone answered."""
    fan = ctx.proxmox.cluster_resources(catalog.zone_targets(ctx))
    if fan.failures:
        zone, failure = next(iter(sorted(fan.failures.items())))
        missing = ", ".join(sorted(fan.failures))
        raise Unavailable(zone, f"cannot {why}: zone(s) {missing} did not answer ({failure.message})")
    return _tally({zone: resources.vms for zone, resources in fan.results.items()})


def _total(per_zone: Mapping[str, Usage]) -> Usage:
    total = Usage()
    for usage in per_zone.values():
        total = total + usage
    return total


def usage(ctx: Context, vdc_id: str) -> Usage:
    """What the VDC's VMs and networks use now (partial when a zone does not answer: that zone is on
    ``ctx``); its networks cost one SDN read per zone."""
    vdc = get_vdc(ctx, vdc_id)
    vms = _total(_shown(ctx, frozenset({vdc_id})).get(vdc_id, {}))
    from orchestrator.services import gateways

    held = gateways.public_ips_used(ctx, [vdc_id]).get(vdc_id, 0)
    return replace(vms, networks=len(networks.vdc_networks(ctx, vdc)), public_ips=held)


def list_vdcs(ctx: Context) -> list[VdcUsage]:
    """The VDCs the caller may see, each with its live usage (one Proxmox call per zone in all, and one
    SDN read per zone for their networks)."""
    vdcs = visible_vdcs(ctx)
    tally = _shown(ctx, frozenset(vdc.id for vdc in vdcs)) if vdcs else {}
    from orchestrator.services import gateways

    nets = Counter(n.vdc for n in networks.list_networks(ctx)) if vdcs else Counter[str]()
    ips = gateways.public_ips_used(ctx, [v.id for v in vdcs]) if vdcs else {}
    return [
        VdcUsage(
            vdc, replace(_total(tally.get(vdc.id, {})), networks=nets[vdc.id], public_ips=ips.get(vdc.id, 0))
        )
        for vdc in vdcs
    ]


def fresh_usage(ctx: Context, vdc_id: str) -> Usage:
    """What the VDC's VMs use, read from every zone now; ``Unavailable`` if a zone does not answer.

    For decisions (quota), taken under the VDC's lock: never from a read made before the lock.
    """
    get_vdc(ctx, vdc_id)
    return _total(_fresh(ctx, f"count what VDC {vdc_id!r} uses").get(vdc_id, {}))


# --------------------------------------------------------------------------------------- quota


def check_quota(ctx: Context, vdc: Vdc, add: Usage, *, current: Usage | None = None) -> Usage:
    """Refuse (``QuotaExceeded``) unless the VDC's usage plus ``add`` fits its quota; the usage after.

    ``current`` defaults to the usage read from Proxmox now (call this under ``locks.vdc_lock``).
    Only the resources ``add`` grows are checked, so that a VDC already over a quota an admin
    lowered may still shrink. The message says which resources, and by how much.
    """
    used = current if current is not None else fresh_usage(ctx, vdc.id)
    after = used + add
    over: list[str] = []
    for attr, label, unit in Usage.RESOURCES:
        asked, limit, total = getattr(add, attr), getattr(vdc.quota, attr), getattr(after, attr)
        if asked > 0 and total > limit:
            over.append(
                f"{label} by {total - limit}{unit} "
                f"({getattr(used, attr)}{unit} used + {asked}{unit} requested > {limit}{unit} allowed)"
            )
    if over:
        raise QuotaExceeded(f"this would exceed the quota of VDC {vdc.id!r}: {'; '.join(over)}")
    return after


# ------------------------------------------------------------------------------------ validation


def _existing_names(
    ctx: Context, f: catalog.Fields, field: str, kind: str, rule: Any, what: str, before: list[str]
) -> list[str]:
    """A list of catalog names; names added (not already in the VDC) must exist in the catalog.

    Names already in the VDC may outlive their catalog object (a removed profile), harmlessly.
    """
    names: list[str] = f.names(field, rule, what)
    known = catalog.entries(ctx, kind)
    for name in names:
        if name not in before and name not in known:
            raise f.fail(field, f"there is no {what} {name!r}")
    return names


def _validate(ctx: Context, values: Mapping[str, Any], before: Vdc | None) -> Vdc:
    f = catalog.Fields(values)
    ident = f.slug("id")
    zones = _existing_names(
        ctx, f, "zones", catalog.ZONE, catalog.is_slug, "zone", before.zones if before else []
    )
    compute = _existing_names(
        ctx,
        f,
        "compute_profiles",
        catalog.COMPUTE_PROFILE,
        catalog.is_name,
        "compute profile",
        before.compute_profiles if before else [],
    )
    storage = _existing_names(
        ctx,
        f,
        "storage_profiles",
        catalog.STORAGE_PROFILE,
        catalog.is_name,
        "storage profile",
        before.storage_profiles if before else [],
    )
    images = _existing_names(
        ctx, f, "images", catalog.IMAGE, catalog.is_name, "image", before.images if before else []
    )
    quota = f.nested("quota")
    # The networks and public IPs quotas are optional: without, a VDC has the default (for networks: room
    # for its default networks).
    required = [q for q in QUOTA_FIELDS if q not in _OPTIONAL_QUOTAS]
    limits = {q: quota.integer(q, 0, _QUOTA_LIMITS[q], _QUOTA_UNITS[q]) for q in required}
    optional = {q: quota.optional_integer(q, 0, _QUOTA_LIMITS[q]) for q in _OPTIONAL_QUOTAS}
    network_quota = optional["networks"]
    snapshots = quota.optional_integer("snapshots_per_vm", 0, MAX_SNAPSHOTS_PER_VM)
    return Vdc(
        id=ident,
        name=f.title("name", ident),
        description=f.text("description"),
        zones=zones,
        compute_profiles=compute,
        storage_profiles=storage,
        images=images,
        quota_vcpus=limits["vcpus"],
        quota_memory_mib=limits["memory_mib"],
        quota_disk_gb=limits["disk_gb"],
        quota_vms=limits["vms"],
        quota_networks=DEFAULT_NETWORKS_QUOTA if network_quota is None else network_quota,
        quota_public_ips=DEFAULT_PUBLIC_IPS_QUOTA
        if optional["public_ips"] is None
        else optional["public_ips"],
        quota_snapshots_per_vm=DEFAULT_SNAPSHOTS_PER_VM if snapshots is None else snapshots,
        organization=str(values.get("organization") or ""),
    )


def _values(vdc: Vdc) -> dict[str, Any]:
    quota = vdc.quota
    return {
        "id": vdc.id,
        "name": vdc.name,
        "description": vdc.description,
        "zones": list(vdc.zones),
        "compute_profiles": list(vdc.compute_profiles),
        "storage_profiles": list(vdc.storage_profiles),
        "images": list(vdc.images),
        "organization": vdc.organization,
        "quota": {q: getattr(quota, q) for q in QUOTA_FIELDS} | {"snapshots_per_vm": vdc.snapshots_per_vm},
    }


# ------------------------------------------------------------------------------------- pools


def _targets(ctx: Context) -> dict[str, ZoneTargets]:
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


def _ensure_pools(ctx: Context, vdc: Vdc, zones: Iterable[str]) -> list[str]:
    """Create the VDC's pool in each zone: all of them, or none (those made here are removed again).

    Returns the zones where this call created the pool.
    """
    targets = _targets(ctx)
    created: list[str] = []
    for zone in zones:
        try:
            target = targets.get(zone)
            if target is None:
                raise _unknown_zone(zone)
            if _create_pool(ctx, target, vdc):
                created.append(zone)
        except (Unavailable, UpstreamFailure) as exc:
            _remove_pools(ctx, vdc.pool, created)
            raise _in_zone(
                zone,
                exc,
                f"could not create pool {vdc.pool} in zone {zone}: {exc.message}; "
                f"VDC {vdc.id!r} is unchanged",
            ) from exc
    return created


def _remove_pools(ctx: Context, pool: str, zones: Iterable[str]) -> None:
    """Best effort: delete the pool in each zone, logging what could not be (an empty pool is harmless)."""
    targets = _targets(ctx)
    for zone in zones:
        target = targets.get(zone)
        if target is None:
            continue
        try:
            _delete_pool(ctx, target, pool)
        except (Unavailable, UpstreamFailure) as exc:
            logger.warning("VDC pools: %s in zone %s left behind: %s", pool, zone, exc.message)


def _restore_pools(ctx: Context, vdc: Vdc, zones: list[str]) -> None:
    """Best effort: create the pool again where it was just deleted."""
    try:
        _ensure_pools(ctx, vdc, zones)
    except (Unavailable, UpstreamFailure) as exc:
        logger.warning("VDC pools: could not restore %s: %s", vdc.pool, exc.message)


def _remove_networks(ctx: Context, vdc: Vdc, made: list[Network]) -> None:
    """Best effort: delete networks just made for a VDC that was not stored after all."""
    try:
        networks.remove(ctx, vdc, made)
    except FlexPlaneError as exc:
        logger.warning("VDC %s: networks %s left behind: %s", vdc.id, [n.vnet for n in made], exc.message)


def _remove_zone_networks(ctx: Context, vdc: Vdc, zones: list[str]) -> None:
    """Best effort: delete the VDC's networks in zones it left (its VMs there are gone)."""
    if not zones:
        return
    try:
        networks.delete_vdc_networks(ctx, vdc, zones)
    except FlexPlaneError as exc:
        logger.warning("VDC %s: networks in zone(s) %s left behind: %s", vdc.id, zones, exc.message)


def _vms_by_zone(tally: Tally, vdc_id: str) -> dict[str, int]:
    return {zone: u.vms for zone, u in tally.get(vdc_id, {}).items() if u.vms}


# --------------------------------------------------------------------------------------- writes


def create_vdc(ctx: Context, data: Mapping[str, Any]) -> Vdc:
    """Create a VDC, its Proxmox pool ``fp-<id>`` and its default network in each of its zones (ADMIN).

    All of them, or nothing: if a zone fails, what was made so far is removed and no VDC is stored.
    """
    org = organizations.vdc_organization(ctx, data)  # ADMIN, or ORG_OWNER within their organization
    catalog.check_fields(data, FIELDS)
    vdc = _validate(ctx, {k: v for k, v in data.items() if v is not None} | {"organization": org}, None)
    with organizations.within_allowance(ctx, vdc), locks.vdc_lock(ctx, vdc.id):
        if ctx.kube.get_catalog(catalog.VDC, vdc.id) is not None:
            raise Conflict(f"VDC {vdc.id!r} already exists")
        # Its role in Zitadel first: a VDC whose role could not be added is not made at all.
        roles.add_vdc_role(vdc.id, vdc.name, organizations.project_grant(ctx, vdc))
        try:
            created = _ensure_pools(ctx, vdc, vdc.zones)
        except FlexPlaneError:
            roles.remove_vdc_role(vdc.id)
            raise
        try:
            made = networks.ensure_default_networks(ctx, vdc)
        except FlexPlaneError:
            _remove_pools(ctx, vdc.pool, created)
            roles.remove_vdc_role(vdc.id)
            raise
        try:
            entry = ctx.kube.create_catalog(catalog.VDC, vdc.id, vdc.to_spec())
        except (UpstreamFailure, Conflict):
            # Surely not stored: take the pools, networks and role back.
            _remove_networks(ctx, vdc, made)
            _remove_pools(ctx, vdc.pool, created)
            roles.remove_vdc_role(vdc.id)
            raise
        # Unavailable: the ConfigMap may have been stored; its pools stay (a retry finds them).
    catalog.remember(ctx, entry)
    image_cache.vdc_changed(ctx, None, vdc)  # its images on its zones' hosts, ahead of its first creates
    return vdc


def update_vdc(ctx: Context, vdc_id: str, changes: Mapping[str, Any]) -> Vdc:
    """Change a VDC (ADMIN). A zone added gets its pool; a zone removed must hold none of its VMs.

    ``quota`` may name only the limits that change.
    """
    access.require_access_manager(ctx)
    catalog.check_fields(changes, FIELDS)
    if "id" in changes and changes["id"] != vdc_id:
        raise ValidationFailed("id", "a VDC's id cannot change")
    org = organizations.organization_of_vdc(ctx, vdc_id)
    if changes.get("organization") not in (None, org):
        raise ValidationFailed("organization", "a VDC's organization cannot change")
    with organizations.guard(ctx, org), locks.vdc_lock(ctx, vdc_id):
        entry = ctx.kube.get_catalog(catalog.VDC, vdc_id)
        if entry is None:
            raise NotFound("VDC", vdc_id)
        catalog.remember(ctx, entry)
        before = Vdc.from_spec(entry.spec)
        # null means "unchanged" here: an empty list or string is how a value is cleared.
        values = _values(before) | {k: v for k, v in changes.items() if k != "quota" and v is not None}
        if changes.get("quota") is not None:
            if not isinstance(changes["quota"], Mapping):
                raise ValidationFailed("quota", "quota must be an object")
            values["quota"] = values["quota"] | {k: v for k, v in changes["quota"].items() if v is not None}
        vdc = _validate(ctx, values, before)
        organizations.check_within(ctx, vdc, replacing=vdc_id)
        added = [z for z in vdc.zones if z not in before.zones]
        removed = [z for z in before.zones if z not in vdc.zones]
        if removed:
            still = {
                zone: count
                for zone, count in _vms_by_zone(_fresh(ctx, "check the zones removed"), vdc_id).items()
                if zone in removed
            }
            if still:
                where = ", ".join(f"{n} in {zone}" for zone, n in sorted(still.items()))
                raise Conflict(
                    f"VDC {vdc_id!r} still has {sum(still.values())} VM(s) in the zone(s) removed ({where})"
                )
        created = _ensure_pools(ctx, vdc, added)
        try:
            made = networks.ensure_default_networks(ctx, vdc, added)
        except FlexPlaneError:
            _remove_pools(ctx, vdc.pool, created)
            raise
        try:
            # {**entry.spec, ...}: what the VDC's entry holds beside its definition (securityGroups) stays.
            stored = ctx.kube.replace_catalog(
                catalog.VDC, vdc_id, {**entry.spec, **vdc.to_spec()}, entry.resource_version
            )
        except (UpstreamFailure, Conflict, NotFound):
            _remove_networks(ctx, vdc, made)
            _remove_pools(ctx, vdc.pool, created)
            raise
        catalog.remember(ctx, stored)
        _remove_zone_networks(ctx, before, removed)
        _remove_pools(ctx, vdc.pool, removed)
    image_cache.vdc_changed(ctx, before, vdc)  # images it offers in zones it did not before
    return vdc


def delete_vdc(ctx: Context, vdc_id: str) -> Vdc:
    """Delete a VDC and its pools (ADMIN); refused (``Conflict``) while it has VMs, saying how many."""
    access.require_access_manager(ctx)
    with locks.vdc_lock(ctx, vdc_id):
        entry = ctx.kube.get_catalog(catalog.VDC, vdc_id)
        if entry is None:
            raise NotFound("VDC", vdc_id)
        vdc = Vdc.from_spec(entry.spec)
        if not access.manages_organization(ctx, vdc.organization):
            raise NotFound("VDC", vdc_id)  # another organization's VDC: as one that does not exist
        vms = _vms_by_zone(_fresh(ctx, f"check that VDC {vdc_id!r} has no VMs"), vdc_id)
        if vms:
            where = ", ".join(f"{n} in {zone}" for zone, n in sorted(vms.items()))
            raise Conflict(f"VDC {vdc_id!r} still has {sum(vms.values())} VM(s) ({where}): delete them first")
        roles.check_reachable(vdc_id)  # its role goes with it: not while Zitadel does not answer
        from orchestrator.services import gateways

        gateways.delete_vdc_gateways(ctx, vdc_id)  # its public IPs go back to the zones' pools
        try:
            networks.delete_vdc_networks(ctx, vdc)
        except FlexPlaneError as exc:
            # Its default networks come back with its next VM, should the VDC be kept for good.
            exc.message = f"{exc.message}; VDC {vdc_id!r} is kept: delete it again"
            exc.args = (exc.message,)
            raise
        targets = _targets(ctx)
        deleted: list[str] = []
        for zone in vdc.zones:
            target = targets.get(zone)
            if target is None:
                continue  # a zone no longer in the catalog: nothing flex.plane can reach there
            try:
                _delete_pool(ctx, target, vdc.pool)
            except (Unavailable, UpstreamFailure) as exc:
                _restore_pools(ctx, vdc, deleted)  # put back what was removed: the VDC stays whole
                raise _in_zone(
                    zone,
                    exc,
                    f"could not delete pool {vdc.pool} in zone {zone}: {exc.message}; VDC {vdc_id!r} is kept",
                ) from exc
            deleted.append(zone)
        if not ctx.kube.delete_catalog(catalog.VDC, vdc_id, entry.resource_version):
            raise NotFound("VDC", vdc_id)
        catalog.forget(ctx, catalog.VDC, vdc_id)
        roles.remove_vdc_role(vdc_id)
    locks.forget_vdc_lock(ctx, vdc_id)
    return vdc
