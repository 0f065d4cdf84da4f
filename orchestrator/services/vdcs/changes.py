"""VDCs' changes: creating, changing and deleting a VDC, with its pools, networks and gateways (ADMIN, or
an ORG_OWNER for the VDCs of the organizations they own, within each one's allowance:
``services.organizations``).

Writes to a VDC hold its lock (``services.locks.vdc_lock``), as VM creates do: a VDC is not deleted, nor a
zone taken from it, while a create in it checks its quota. A VDC that offers images in zones it did not
before has them cached on those zones' hosts (``services.image_cache``), after its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from orchestrator.errors import Conflict, FlexPlaneError, NotFound, UpstreamFailure, ValidationFailed
from orchestrator.models import Vdc
from orchestrator.models.networks import Network

# The networks and the gateways are called as packages, at run time: their changes use this package's
# definitions and quota (see ``services.vdcs``).
from orchestrator.services import access, catalog, gateways, image_cache, locks, networks, organizations
from orchestrator.services.access_admin import roles
from orchestrator.services.context import Context
from orchestrator.services.vdcs.definitions import FIELDS, validate, values_of
from orchestrator.services.vdcs.pools import delete_pools, ensure_pools, remove_pools
from orchestrator.services.vdcs.quota import fresh_tally, vms_by_zone, zones_total

logger = logging.getLogger(__name__)


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


def create_vdc(ctx: Context, data: Mapping[str, Any]) -> Vdc:
    """Create a VDC, its Proxmox pool ``fp-<id>`` and its default network in each of its zones (ADMIN).

    All of them, or nothing: if a zone fails, what was made so far is removed and no VDC is stored.
    """
    org = organizations.vdc_organization(ctx, data)  # ADMIN, or ORG_OWNER within their organization
    catalog.check_fields(data, FIELDS)
    vdc = validate(ctx, {k: v for k, v in data.items() if v is not None} | {"organization": org}, None)
    with organizations.within_allowance(ctx, vdc), locks.vdc_lock(ctx, vdc.id):
        if ctx.kube.get_catalog(catalog.VDC, vdc.id) is not None:
            raise Conflict(f"VDC {vdc.id!r} already exists")
        # Its role in Zitadel first: a VDC whose role could not be added is not made at all.
        roles.add_vdc_role(ctx, vdc.id, vdc.name, organizations.project_grant(ctx, vdc))
        try:
            created = ensure_pools(ctx, vdc, vdc.zones)
        except FlexPlaneError:
            roles.remove_vdc_role(ctx, vdc.id)
            raise
        try:
            made = networks.ensure_default_networks(ctx, vdc)
        except FlexPlaneError:
            remove_pools(ctx, vdc.pool, created)
            roles.remove_vdc_role(ctx, vdc.id)
            raise
        try:
            entry = ctx.kube.create_catalog(catalog.VDC, vdc.id, vdc.to_spec())
        except (UpstreamFailure, Conflict):
            # Surely not stored: take the pools, networks and role back.
            _remove_networks(ctx, vdc, made)
            remove_pools(ctx, vdc.pool, created)
            roles.remove_vdc_role(ctx, vdc.id)
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
        values = values_of(before) | {k: v for k, v in changes.items() if k != "quota" and v is not None}
        if changes.get("quota") is not None:
            if not isinstance(changes["quota"], Mapping):
                raise ValidationFailed("quota", "quota must be an object")
            values["quota"] = values["quota"] | {k: v for k, v in changes["quota"].items() if v is not None}
        vdc = validate(ctx, values, before)
        organizations.check_within(ctx, vdc, replacing=vdc_id)
        added = [z for z in vdc.zones if z not in before.zones]
        removed = [z for z in before.zones if z not in vdc.zones]
        if removed:
            still = {
                zone: count
                for zone, count in vms_by_zone(fresh_tally(ctx, "check the zones removed"), vdc_id).items()
                if zone in removed
            }
            if still:
                where = ", ".join(f"{n} in {zone}" for zone, n in sorted(still.items()))
                raise Conflict(
                    f"VDC {vdc_id!r} still has {sum(still.values())} VM(s) in the zone(s) removed ({where})"
                )
        created = ensure_pools(ctx, vdc, added)
        try:
            made = networks.ensure_default_networks(ctx, vdc, added)
        except FlexPlaneError:
            remove_pools(ctx, vdc.pool, created)
            raise
        try:
            # {**entry.spec, ...}: what the VDC's entry holds beside its definition (securityGroups) stays.
            stored = ctx.kube.replace_catalog(
                catalog.VDC, vdc_id, {**entry.spec, **vdc.to_spec()}, entry.resource_version
            )
        except (UpstreamFailure, Conflict, NotFound):
            _remove_networks(ctx, vdc, made)
            remove_pools(ctx, vdc.pool, created)
            raise
        catalog.remember(ctx, stored)
        _remove_zone_networks(ctx, before, removed)
        remove_pools(ctx, vdc.pool, removed)
    image_cache.vdc_changed(ctx, before, vdc)  # images it offers in zones it did not before
    return vdc


def delete_vdc(ctx: Context, vdc_id: str) -> Vdc:
    """Delete a VDC and its pools (ADMIN); refused (``Conflict``) while it has VMs, volumes or volume
    snapshots, saying how many."""
    access.require_access_manager(ctx)
    with locks.vdc_lock(ctx, vdc_id):
        entry = ctx.kube.get_catalog(catalog.VDC, vdc_id)
        if entry is None:
            raise NotFound("VDC", vdc_id)
        vdc = Vdc.from_spec(entry.spec)
        if not access.manages_organization(ctx, vdc.organization):
            raise NotFound("VDC", vdc_id)  # another organization's VDC: as one that does not exist
        counted = fresh_tally(ctx, f"check that VDC {vdc_id!r} has no VMs")
        vms = vms_by_zone(counted, vdc_id)
        if vms:
            where = ", ".join(f"{n} in {zone}" for zone, n in sorted(vms.items()))
            raise Conflict(f"VDC {vdc_id!r} still has {sum(vms.values())} VM(s) ({where}): delete them first")
        held = zones_total(counted.get(vdc_id, {})).disk_gb  # with no VM, only holders hold disk
        if held:
            raise Conflict(
                f"VDC {vdc_id!r} still has volumes or volume snapshots ({held} GiB): delete them first"
            )
        roles.check_reachable(ctx, vdc_id)  # its role goes with it: not while Zitadel does not answer
        gateways.delete_vdc_gateways(ctx, vdc_id)  # its public IPs go back to the zones' pools
        try:
            networks.delete_vdc_networks(ctx, vdc)
        except FlexPlaneError as exc:
            # Its default networks come back with its next VM, should the VDC be kept for good.
            exc.message = f"{exc.message}; VDC {vdc_id!r} is kept: delete it again"
            exc.args = (exc.message,)
            raise
        delete_pools(ctx, vdc)
        if not ctx.kube.delete_catalog(catalog.VDC, vdc_id, entry.resource_version):
            raise NotFound("VDC", vdc_id)
        catalog.forget(ctx, catalog.VDC, vdc_id)
        roles.remove_vdc_role(ctx, vdc_id)
    locks.forget_vdc_lock(ctx, vdc_id)
    return vdc
