"""VDCs' definitions: who may see which, the VDC a request acts in, and a definition's input checked.

A VDC's definition is a catalog ConfigMap (kind ``vdc``). ADMIN sees every VDC; an ORG_OWNER those of the
organizations they own; a USER those they are a member of. Any other VDC is reported exactly as one that
does not exist. Reading a definition costs no Proxmox call.

This module imports nothing of the networks, gateways or security groups: they read VDCs through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models import Vdc
from orchestrator.models.vdcs import QUOTA, VDC_INPUTS
from orchestrator.services import access, catalog
from orchestrator.services.context import Context

# What a VDC's input may name (its quota as one object) and its quota's inputs: its declaration's.
FIELDS = VDC_INPUTS.names
QUOTA_INPUTS = VDC_INPUTS.members(QUOTA.name)


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


def acting_vdc(ctx: Context) -> Vdc:
    """The VDC a write acts in: the one the request names, of which the caller is a member (or ADMIN;
    FORBIDDEN otherwise)."""
    access.require_self_service(ctx)
    if ctx.vdc is None:
        raise ValidationFailed("vdc", "name the VDC with the FlexPlane-VDC-ID header")
    access.visible_vdcs(ctx)
    return get_vdc(ctx, ctx.vdc)


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


# A VDC's allow-lists: (its field, the catalog kind named, the rule a name follows, what one is called).
_ALLOWED = (
    ("zones", catalog.ZONE, catalog.is_slug, "zone"),
    ("compute_profiles", catalog.COMPUTE_PROFILE, catalog.is_name, "compute profile"),
    ("storage_profiles", catalog.STORAGE_PROFILE, catalog.is_name, "storage profile"),
    ("images", catalog.IMAGE, catalog.is_name, "image"),
)


def validate(ctx: Context, values: Mapping[str, Any], before: Vdc | None) -> Vdc:
    """The VDC ``values`` define, checked (``before``: the VDC as it is, for a change)."""
    f = catalog.Fields(values)
    ident = f.slug("id")
    # Checked in this order, so the first field at fault is the one named.
    allowed = {
        field: _existing_names(ctx, f, field, kind, rule, what, getattr(before, field) if before else [])
        for field, kind, rule, what in _ALLOWED
    }
    quota = _quota(f)
    limits = {f"{QUOTA.name}_{i.name}": quota.declared(i) for i in QUOTA_INPUTS}
    return Vdc(
        id=ident,
        name=f.title("name", ident),
        description=f.text("description"),
        zones=allowed["zones"],
        compute_profiles=allowed["compute_profiles"],
        storage_profiles=allowed["storage_profiles"],
        images=allowed["images"],
        **limits,
        organization=str(values.get("organization") or ""),
    )


def _quota(f: catalog.Fields) -> catalog.Fields:
    """The quota's values, checked as each is declared. Those with a default may be left out (or null): the
    networks' (room for its default networks), the public IPs' and the snapshots per VM."""
    given = f.nested(QUOTA.name)
    defaults = {i.name: i.default for i in QUOTA_INPUTS if i.default is not None}
    return catalog.Fields(
        defaults | {k: v for k, v in given.values.items() if v is not None}, prefix=given.prefix
    )


def values_of(vdc: Vdc) -> dict[str, Any]:
    """A VDC as the input that defines it (what ``validate`` takes)."""
    values = {name: getattr(vdc, name) for name in FIELDS if name != QUOTA.name}
    return values | {QUOTA.name: {i.name: getattr(vdc, f"{QUOTA.name}_{i.name}") for i in QUOTA_INPUTS}}
