"""Which VDCs offer a catalog offering (a compute profile, a storage profile, an image).

A VDC allows offerings by name, in its own allow lists. The catalog keeps the two in step where an
admin would otherwise be surprised: a new offering may be allowed in VDCs as it is created (else it
is offered to nobody), and a deleted one leaves every VDC that allowed it (else the VDC lists a name
that no longer exists). Each VDC is written back at the version it was read at.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from orchestrator.errors import ValidationFailed
from orchestrator.services.catalog.fields import label
from orchestrator.services.catalog.snapshot import (
    COMPUTE_PROFILE,
    IMAGE,
    STORAGE_PROFILE,
    VDC,
    entries,
    remember,
)
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import CatalogEntry

M = TypeVar("M")

# The create input that allows the new offering in VDCs (create only: an update never takes it).
ALLOW_IN_VDCS = "allow_in_vdcs"

# A VDC's allow list of each kind of offering (the VDC spec's field).
_ALLOW_LIST = {COMPUTE_PROFILE: "computeProfiles", STORAGE_PROFILE: "storageProfiles", IMAGE: "images"}


@dataclass(frozen=True)
class Withdrawn(Generic[M]):
    """An offering removed from the catalog, and the VDCs that allowed it until then (in id order)."""

    offering: M
    vdcs: list[str]


def allowing(ctx: Context, kind: str, name: str) -> list[str]:
    """The ids of the VDCs that allow the offering (no authorization: for the catalog's services)."""
    field = _ALLOW_LIST[kind]
    return sorted(ident for ident, e in entries(ctx, VDC).items() if name in (e.spec.get(field) or []))


def vdc_ids(ctx: Context, value: object) -> list[str]:
    """The ``allow_in_vdcs`` input checked: a list of existing VDCs' ids, without duplicates."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValidationFailed(ALLOW_IN_VDCS, f"{label(ALLOW_IN_VDCS)} must be a list of VDC ids")
    known = entries(ctx, VDC)
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or item not in known:
            raise ValidationFailed(ALLOW_IN_VDCS, f"there is no VDC {item!r}")
        if item not in out:
            out.append(item)
    return out


def allow(ctx: Context, kind: str, name: str, vdcs: Iterable[str]) -> None:
    """Add the offering to each VDC's allow list (a VDC that allows it already is left as it is)."""
    field = _ALLOW_LIST[kind]
    for ident in vdcs:
        entry = entries(ctx, VDC)[ident]
        listed = list(entry.spec.get(field) or [])
        if name not in listed:
            _write(ctx, entry, {**entry.spec, field: [*listed, name]})


def disallow(ctx: Context, kind: str, name: str) -> list[str]:
    """Remove the offering from every VDC that allows it; the ids of those VDCs."""
    field = _ALLOW_LIST[kind]
    removed = allowing(ctx, kind, name)
    for ident in removed:
        entry = entries(ctx, VDC)[ident]
        _write(ctx, entry, {**entry.spec, field: [n for n in entry.spec.get(field) or [] if n != name]})
    return removed


def _write(ctx: Context, entry: CatalogEntry, spec: dict[str, Any]) -> None:
    """A VDC written back at the version it was read at (``Conflict`` if it changed meanwhile)."""
    stored = ctx.kube.replace_catalog(VDC, entry.ident, spec, entry.resource_version, labels=entry.labels)
    remember(ctx, stored)
