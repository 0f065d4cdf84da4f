"""Organizations (tenants) and their allowances: what an organization's ORG_OWNERs may give their VDCs.

An organization is a Zitadel organization; its id is in the roles claim of its users' tokens. ADMIN
gives an organization an *allowance*: the zones, compute and storage profiles and images its VDCs may
use, and total quotas that the sum of its VDCs' quotas never exceeds. Its ORG_OWNERs then create,
change and delete VDCs of the organization within it (``services.vdcs``), and manage their members
(``services.access_admin``). ADMIN keeps full control, within the allowance too. Giving an allowance
also grants Zitadel's project to the organization, with the roles USER, ORG_OWNER and those of its
VDCs (each VDC made in it adds its own), so that these roles can be given to its users within it, as
Zitadel requires of an organization that does not own the project; taking the allowance away takes the
grant away too (and with it, in Zitadel, the roles its users were given within it).

Where the allowance lives: a catalog ConfigMap per organization (kind ``organization``, id the
organization's id), beside the VDC definitions whose quotas it bounds. The check runs where VDCs are
written, from the management cluster alone: it must work from the token's claims and the catalog while
Zitadel is away, and the orchestrator keeps no state. (Zitadel's organization metadata could hold it,
but then every VDC write would depend on Zitadel answering, and nothing could lock it.)

Race-free: every write of an organization's VDCs (create, update) and of its allowance holds the
organization's lock (``services.locks``, a Lease ``fp-lock-org-<id>``, taken before a VDC's own lock),
and counts the organization's VDCs read from the cluster under it, never from an earlier read. Two
ORG_OWNERs creating VDCs at once are served one after the other; the second sees the first's quota.

Isolation: an ORG_OWNER sees only the allowances of the organizations they own; any other is reported
exactly as one that does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass as plain_dataclass
from dataclasses import field
from typing import Annotated, Any

from pydantic import AliasChoices, Field, field_serializer, model_validator
from pydantic.dataclasses import dataclass

from orchestrator.auth import ORG_OWNER, USER
from orchestrator.errors import Conflict, NotFound, QuotaExceeded, ValidationFailed
from orchestrator.models import Usage, Vdc
from orchestrator.models.specs import SPEC_CONFIG, Stored
from orchestrator.services import access, catalog, locks
from orchestrator.services.access_admin.roles import role_of
from orchestrator.services.context import Context

KIND = "organization"
LEASE_PREFIX = "fp-lock-org-"
FIELDS = ("organization", "zones", "compute_profiles", "storage_profiles", "images", "quota")
QUOTA_REQUIRED = ("vcpus", "memory_mib", "disk_gb", "vms")
QUOTA_OPTIONAL = ("networks", "public_ips")
_QUOTA_MAX = 2**31 - 1
# Zitadel's organization ids: digits (a snowflake); tolerate its other id forms.
_ORG_ID = re.compile(r"^[A-Za-z0-9_-]{1,63}\Z")


@dataclass(frozen=True, config=SPEC_CONFIG)
class Allowance(Stored):
    """What an organization's VDCs may use, together. Stored as a VDC is (camelCase, ``models.specs``),
    its organization's id as ``id``, and only the quotas it bounds."""

    organization: str = Field(validation_alias=AliasChoices("id", "organization"), serialization_alias="id")
    name: str = ""
    zones: tuple[str, ...] = ()
    compute_profiles: tuple[str, ...] = ()
    storage_profiles: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    quota: Usage = field(default_factory=Usage)
    # The quotas it bounds: the four required ones, and networks or public IPs when it names them (not
    # stored: the quotas stored are those it bounds).
    bounded: Annotated[tuple[str, ...], Field(exclude=True)] = QUOTA_REQUIRED

    @model_validator(mode="before")
    @classmethod
    def _stored(cls, data: Any) -> Any:
        """A stored one is named by its id when it has no name, and bounds the quotas it stores."""
        if not isinstance(data, Mapping) or "bounded" in data:
            return data
        quota = data.get("quota") or {}
        bounded = tuple(attr for attr, _, _ in Usage.RESOURCES if Usage.key(attr) in quota)
        return {**data, "name": data.get("name") or data.get("id"), "bounded": bounded}

    @field_serializer("quota")
    def _bounded(self, quota: Usage) -> dict[str, int]:
        keys = {Usage.key(attr) for attr in self.bounded}
        return {key: amount for key, amount in quota.to_spec().items() if key in keys}


@plain_dataclass(frozen=True)
class AllowanceUsage:
    """An allowance with what its organization's VDCs take of it (the sum of their quotas)."""

    allowance: Allowance
    vdcs: tuple[str, ...]
    allotted: Usage


# ------------------------------------------------------------------------------------- reading


def granted_roles(vdc_ids: Iterable[str]) -> list[str]:
    """The roles the project is granted to an organization with: its users', its owners', its VDCs'."""
    return [USER, ORG_OWNER, *(role_of(v) for v in sorted(vdc_ids))]


def project_grant(ctx: Context, vdc: Vdc) -> tuple[str, list[str]] | None:
    """For a new VDC of an organization (under its lock): the project grant it needs, its role added."""
    if not vdc.organization:
        return None
    return vdc.organization, granted_roles({*(v.id for v in _vdcs_of(ctx, vdc.organization)), vdc.id})


def organization_id(value: object, field_name: str = "organization") -> str:
    if not isinstance(value, str) or not _ORG_ID.match(value):
        raise ValidationFailed(field_name, "an organization id is 1 to 63 letters, digits, '-' or '_'")
    return value


def _stored(ctx: Context, org: str) -> Allowance | None:
    entry = ctx.kube.get_catalog(KIND, org)
    return None if entry is None else Allowance.from_spec(entry.spec)


def named(allowance: Allowance) -> str:
    """An organization as an error names it: by its name, its id beside it."""
    name, org = allowance.name, allowance.organization
    return f"{name} ({org})" if name and name != org else org


def organization_named(ctx: Context, org: str) -> str:
    """The organization as its allowance names it (``named``), else its id (no allowance, or none read)."""
    allowance = _stored(ctx, org) if org else None
    return org if allowance is None else named(allowance)


def _vdcs_of(ctx: Context, org: str) -> list[Vdc]:
    """The organization's VDCs, read from the cluster now (for decisions, under the org's lock)."""
    return [
        vdc
        for entry in ctx.kube.list_catalog([catalog.VDC])
        if (vdc := Vdc.from_spec(entry.spec)).organization == org
    ]


def _sum(vdcs: list[Vdc]) -> Usage:
    total = Usage()
    for vdc in vdcs:
        total = total + vdc.quota
    return total


def list_allowances(ctx: Context) -> list[AllowanceUsage]:
    """The allowances the caller may see: every one (ADMIN), their organizations' (ORG_OWNER)."""
    access.require_access_manager(ctx)
    allowances = [Allowance.from_spec(e.spec) for e in ctx.kube.list_catalog([KIND])]
    vdcs = catalog.objects(ctx, catalog.VDC, Vdc.from_spec)
    shown = []
    for allowance in sorted(allowances, key=lambda a: a.organization):
        if access.manages_organization(ctx, allowance.organization):
            mine = [v for v in vdcs if v.organization == allowance.organization]
            shown.append(AllowanceUsage(allowance, tuple(v.id for v in mine), _sum(mine)))
    return shown


@plain_dataclass(frozen=True)
class OrganizationVdc:
    """A VDC of an organization, with the organization's allowance and what its VDCs take of it."""

    vdc: Vdc
    usage: AllowanceUsage


def organization_vdc(ctx: Context, org: str, vdc_id: str) -> OrganizationVdc:
    """A VDC of ``org`` the caller manages, for its edit page; ``NotFound`` for one of another organization,
    of the platform or none at all, alike."""
    allowance = get_allowance(ctx, org)
    mine = [
        v
        for v in catalog.objects(ctx, catalog.VDC, Vdc.from_spec)
        if v.organization == allowance.organization
    ]
    found = next((v for v in mine if v.id == vdc_id), None)
    if found is None:
        raise NotFound("VDC", vdc_id)
    return OrganizationVdc(found, AllowanceUsage(allowance, tuple(v.id for v in mine), _sum(mine)))


def get_allowance(ctx: Context, org: str) -> Allowance:
    """One organization's allowance; ``NotFound`` if it has none or the caller does not manage it."""
    access.require_access_manager(ctx)
    ident = organization_id(org)
    allowance = _stored(ctx, ident) if access.manages_organization(ctx, ident) else None
    if allowance is None:
        raise NotFound("organization", ident)
    return allowance


# ------------------------------------------------------------------------------------- writing


def _validate(ctx: Context, org: str, name: str, values: Mapping[str, Any]) -> Allowance:
    f = catalog.Fields(values)

    def existing(field_name: str, kind: str, rule: Any, what: str) -> tuple[str, ...]:
        names: list[str] = f.names(field_name, rule, what) if values.get(field_name) is not None else []
        known = catalog.entries(ctx, kind)
        for item in names:
            if item not in known:
                raise f.fail(field_name, f"there is no {what} {item!r}")
        return tuple(dict.fromkeys(names))

    quota = f.nested("quota")
    if values.get("quota") is None:
        raise f.fail("quota", "quota is required")
    limits = {q: quota.integer(q, 0, _QUOTA_MAX) for q in QUOTA_REQUIRED}
    for q in QUOTA_OPTIONAL:
        if (value := quota.optional_integer(q, 0, _QUOTA_MAX)) is not None:
            limits[q] = value
    return Allowance(
        organization=org,
        name=name,
        zones=existing("zones", catalog.ZONE, catalog.is_slug, "zone"),
        compute_profiles=existing(
            "compute_profiles", catalog.COMPUTE_PROFILE, catalog.is_name, "compute profile"
        ),
        storage_profiles=existing(
            "storage_profiles", catalog.STORAGE_PROFILE, catalog.is_name, "storage profile"
        ),
        images=existing("images", catalog.IMAGE, catalog.is_name, "image"),
        quota=Usage(**limits),
        bounded=tuple(attr for attr, _, _ in Usage.RESOURCES if attr in limits),
    )


def _over(allotted: Usage, allowance: Allowance) -> dict[str, str]:
    """What of ``allotted`` exceeds the allowance's quotas: by quota, the resource named with both figures."""
    allowed = allowance.quota
    return {
        attr: f"{label} ({getattr(allotted, attr)}{unit} > {getattr(allowed, attr)}{unit} allowed)"
        for attr, label, unit in Usage.RESOURCES
        if attr in allowance.bounded and getattr(allotted, attr) > getattr(allowed, attr)
    }


def _exceeded(message: str, over: Mapping[str, str]) -> QuotaExceeded:
    """``QuotaExceeded`` naming the resources over; ``fields`` says which quotas (``quota.vcpus``), so that a
    form can show it next to them."""
    return QuotaExceeded(f"{message}: {'; '.join(over.values())}", tuple(f"quota.{attr}" for attr in over))


@contextmanager
def org_lock(ctx: Context, org: str) -> Iterator[None]:
    """Hold the organization's lock (before any VDC's own lock, never after)."""
    with locks.lock(ctx, f"{LEASE_PREFIX}{org}", f"organization {org}"):
        yield


def set_allowance(ctx: Context, organization: str, data: Mapping[str, Any]) -> AllowanceUsage:
    """Give an organization (of Zitadel) its allowance, or change it (ADMIN). Refused below what its VDCs
    already have, or without something one of them uses, saying what."""
    access.require_admin(ctx)
    catalog.check_fields({**data, "organization": organization}, FIELDS)
    org = organization_id(organization)
    source = ctx.require_zitadel()
    known = source.organization(org)  # a write: the organization must exist in Zitadel
    if known is None:
        raise NotFound("organization", org)
    allowance = _validate(ctx, org, known.name, data)
    with org_lock(ctx, org):
        mine = _vdcs_of(ctx, org)
        allotted = _sum(mine)
        if over := _over(allotted, allowance):
            raise _exceeded(
                f"the VDCs of organization {named(allowance)} already have more than this allowance", over
            )
        for vdc in mine:
            _check_offerings(vdc, allowance)
        # The project granted to the organization, so that its users can be given its roles within it.
        source.grant_project(org, granted_roles(v.id for v in mine))
        entry = ctx.kube.get_catalog(KIND, org)
        if entry is None:
            ctx.kube.create_catalog(KIND, org, allowance.to_spec())
        else:
            ctx.kube.replace_catalog(KIND, org, allowance.to_spec(), entry.resource_version)
    return AllowanceUsage(allowance, tuple(v.id for v in mine), allotted)


def delete_allowance(ctx: Context, organization: str) -> Allowance:
    """Take an organization's allowance away (ADMIN), and the project's grant to it in Zitadel; refused
    (``Conflict``) while it has VDCs.

    Zitadel deletes with the grant the organization's authorizations of the project: its users lose the
    roles given within it (ORG_OWNER, USER; it has no VDC left). An ADMIN gives an owner back with
    ``access_admin.memberships.set_platform_roles``, which grants the project again to an organization
    without an allowance.

    The order, under the organization's lock: the grant first, then the allowance. If Zitadel does not
    answer (or none is configured), ``Unavailable`` names it and the allowance stays. If the cluster then
    fails, the allowance stays without its grant: deleting it again finishes (a grant already gone is no
    error), and giving it again grants the project again.
    """
    access.require_admin(ctx)
    org = organization_id(organization)
    with org_lock(ctx, org):
        entry = ctx.kube.get_catalog(KIND, org)
        if entry is None:
            raise NotFound("organization", org)
        if mine := _vdcs_of(ctx, org):
            raise Conflict(
                f"organization {named(Allowance.from_spec(entry.spec))} still has VDC(s) "
                f"{', '.join(v.id for v in mine)}: delete them first"
            )
        ctx.require_zitadel().revoke_project(org)
        ctx.kube.delete_catalog(KIND, org, entry.resource_version)
    return Allowance.from_spec(entry.spec)


# -------------------------------------------------------------------------- VDC writes within it

_OFFERINGS = (
    ("zones", "zones", "zone"),
    ("compute_profiles", "compute_profiles", "compute profile"),
    ("storage_profiles", "storage_profiles", "storage profile"),
    ("images", "images", "image"),
)


def _check_offerings(vdc: Vdc, allowance: Allowance) -> None:
    for field_name, attr, what in _OFFERINGS:
        outside = [n for n in getattr(vdc, attr) if n not in getattr(allowance, attr)]
        if outside:
            raise ValidationFailed(
                field_name,
                f"{what}(s) {', '.join(outside)} of VDC {vdc.id!r} are not in the allowance of organization "
                f"{named(allowance)}",
            )


def vdc_organization(ctx: Context, data: Mapping[str, Any]) -> str:
    """The organization a VDC to create belongs to, checked against who asks.

    ADMIN: the one named, or none (a VDC of the platform's own). An ORG_OWNER: the one named, which must
    be theirs (another is NOT_FOUND, as a missing one), or theirs when they own only one.
    """
    named = data.get("organization")
    if ctx.principal.is_admin:
        return "" if named in (None, "") else organization_id(named)
    access.require_access_manager(ctx)
    owned = sorted(ctx.principal.owned_organizations)
    if named in (None, ""):
        if len(owned) != 1:
            raise ValidationFailed(
                "organization", f"name the organization of the VDC: one of {', '.join(owned)}"
            )
        return owned[0]
    org = organization_id(named)
    if org not in owned:
        raise NotFound("organization", org)
    return org


def organization_of_vdc(ctx: Context, vdc_id: str) -> str:
    """The organization of a VDC the caller may change; ``NotFound`` for one they may not (or none).

    Read before any lock: a VDC's organization never changes, and its lock comes after its
    organization's.
    """
    entry = ctx.kube.get_catalog(catalog.VDC, vdc_id)
    org = "" if entry is None else Vdc.from_spec(entry.spec).organization
    if entry is None or not access.manages_organization(ctx, org):
        raise NotFound("VDC", vdc_id)
    return org


@contextmanager
def guard(ctx: Context, org: str) -> Iterator[None]:
    """Around a write of a VDC of ``org``: hold the organization's lock (nothing for a platform VDC)."""
    if not org:
        yield
        return
    with org_lock(ctx, org):
        yield


def check_within(ctx: Context, vdc: Vdc, replacing: str | None = None) -> None:
    """Refuse (``QuotaExceeded`` naming the resources, ``ValidationFailed`` for an offering) a VDC that would
    take its organization's VDCs past the allowance; call it under ``guard``. ``replacing``: the id of the
    VDC being changed (its old quota is freed)."""
    if not vdc.organization:
        return
    allowance = _stored(ctx, vdc.organization)
    if allowance is None:
        raise QuotaExceeded(
            f"organization {vdc.organization} has no allowance yet: an ADMIN gives it one first"
        )
    _check_offerings(vdc, allowance)
    others = [v for v in _vdcs_of(ctx, vdc.organization) if v.id not in (vdc.id, replacing)]
    if over := _over(_sum(others) + vdc.quota, allowance):
        raise _exceeded(
            f"VDC {vdc.id!r} would take the VDCs of organization {named(allowance)} past its allowance", over
        )


@contextmanager
def within_allowance(ctx: Context, vdc: Vdc) -> Iterator[None]:
    """Around a VDC's creation: the organization's lock held, the allowance checked (``check_within``)."""
    with guard(ctx, vdc.organization):
        check_within(ctx, vdc)
        yield
