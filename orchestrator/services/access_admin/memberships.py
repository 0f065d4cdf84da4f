"""Memberships and platform roles: written to Zitadel as the role keys of users' authorizations.

A user's roles are kept in their authorizations of the project (one per user, project and organization,
as Zitadel allows): ADMIN, USER and memberships of the platform's own VDCs within the organization that
owns the project; ORG_OWNER and memberships of an organization's VDCs within that organization (which
the allowance granted the project, with those roles). A change reads the authorizations and writes them
back, under a lock per user (``services.locks``), so that two changes of one user's roles never lose
each other. Who may: ADMIN for any user and VDC; an ORG_OWNER for the users and VDCs of the
organizations they own (others are NOT_FOUND, as missing ones). Platform roles are ADMIN's alone.
A change takes effect with the user's next token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from orchestrator.auth import ORG_OWNER, VDC_ROLE_PREFIX
from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.models import Vdc
from orchestrator.services import access, catalog, locks, organizations
from orchestrator.services.access_admin.users import (
    PLATFORM_ROLES,
    UserAccess,
    access_of,
    get_user,
    grants_of,
)
from orchestrator.services.context import Context
from orchestrator.sources.protocols import ZitadelApi
from orchestrator.sources.zitadel import User

USER_LEASE_PREFIX = "fp-lock-user-"


def manageable_vdcs(ctx: Context) -> list[Vdc]:
    """The VDCs whose members the caller manages: every one for ADMIN, their organizations' for an
    ORG_OWNER (no Zitadel call: the catalog and the token)."""
    access.require_access_manager(ctx)
    return [
        vdc
        for vdc in catalog.objects(ctx, catalog.VDC, Vdc.from_spec)
        if access.manages_organization(ctx, vdc.organization)
    ]


def _vdc(ctx: Context, vdc_id: object) -> Vdc:
    """A VDC the caller manages; ``NotFound`` for one that does not exist or belongs to another org."""
    if not isinstance(vdc_id, str) or not catalog.is_slug(vdc_id):
        raise ValidationFailed("vdc", "a VDC id is a lowercase slug (letters, digits and '-')")
    entry = ctx.kube.get_catalog(catalog.VDC, vdc_id)
    if entry is not None:
        vdc = Vdc.from_spec(entry.spec)
        if access.manages_organization(ctx, vdc.organization):
            return vdc
    raise NotFound("VDC", vdc_id)


def named_user(user: User) -> str:
    """A user as an error names them: their name, their user name (and id, for a user of no name)."""
    who = user.name or user.username
    if not who:
        return f"user {user.id}"
    return f"{who} ({user.username})" if user.username and user.username != who else who


def may_join(vdc: Vdc, organization: str) -> bool:
    """Whether a user of ``organization`` may be a member of the VDC: one of the platform's own, or of their
    organization's (only its own users can be members of an organization's VDC)."""
    return not vdc.organization or vdc.organization == organization


def joinable_vdcs(ctx: Context, user: UserAccess) -> list[Vdc]:
    """The VDCs the caller manages that the user may join (``may_join``) and is not a member of yet."""
    return [v for v in manageable_vdcs(ctx) if may_join(v, user.organization) and v.id not in user.vdcs]


def named_vdc(vdc: Vdc) -> str:
    """A VDC as an error names it: its name, its id beside it (its id alone when it has no other name)."""
    return repr(vdc.id) if vdc.label == vdc.id else vdc.label


def _same_organization(ctx: Context, user: User, vdc: Vdc) -> None:
    if not may_join(vdc, user.organization_id):
        org = organizations.organization_named(ctx, vdc.organization)
        raise ValidationFailed(
            "user",
            f"{named_user(user)} is not of organization {org}, whose VDC {named_vdc(vdc)} is: "
            "only its own users can be members",
        )


class _Home:
    """The organization that owns the project, asked of Zitadel once per change, and only if needed."""

    def __init__(self, source: ZitadelApi) -> None:
        self.source = source
        self.known: str | None = None

    def __call__(self) -> str:
        if self.known is None:
            self.known = self.source.project_organization()
        return self.known


def _change(
    ctx: Context,
    source: ZitadelApi,
    user: User,
    change: Callable[[set[str]], set[str]],
    place: Callable[[str], str],
) -> UserAccess:
    """Rewrite the user's role keys (``change(current)`` -> wanted) under their lock: keys taken away leave
    whichever authorization holds them; a key added goes to the authorization within ``place(key)``'s
    organization (made if the user has none there)."""
    with locks.lock(ctx, f"{USER_LEASE_PREFIX}{user.id}", f"the access of {named_user(user)}"):
        grants = source.authorizations(user_ids=[user.id])
        current = {key for grant in grants for key in grant.role_keys}
        wanted = change(set(current))
        kept = {grant.id: [k for k in grant.role_keys if k in wanted] for grant in grants}
        new: dict[str, list[str]] = {}
        for key in sorted(wanted - current):
            org = place(key)
            target = next((g for g in grants if g.organization_id == org), None)
            (kept[target.id] if target is not None else new.setdefault(org, [])).append(key)
        for grant in grants:
            if kept[grant.id] != list(grant.role_keys):
                source.update_authorization(grant.id, kept[grant.id])
        for org, keys in new.items():
            source.create_authorization(user.id, org, keys)
        return access_of(user, source.authorizations(user_ids=[user.id]))


def grant_vdc_membership(ctx: Context, user_id: str, vdc_id: str) -> UserAccess:
    """Make the user a member of the VDC (ADMIN, or ORG_OWNER of the VDC's organization).

    The membership is given within the VDC's organization (granted the project with the VDC's role), or
    within the organization that owns the project for a VDC of the platform's own.
    """
    access.require_access_manager(ctx)
    source = ctx.require_zitadel()
    vdc = _vdc(ctx, vdc_id)
    user = get_user(ctx, source, user_id)
    _same_organization(ctx, user, vdc)
    role = f"{VDC_ROLE_PREFIX}{vdc.id}"
    home = _Home(source)
    return _change(ctx, source, user, lambda keys: keys | {role}, lambda key: vdc.organization or home())


def revoke_vdc_membership(ctx: Context, user_id: str, vdc_id: str) -> UserAccess:
    """End the user's membership of the VDC (ADMIN, or ORG_OWNER of the VDC's organization)."""
    access.require_access_manager(ctx)
    source = ctx.require_zitadel()
    vdc = _vdc(ctx, vdc_id)
    user = get_user(ctx, source, user_id)
    role = f"{VDC_ROLE_PREFIX}{vdc.id}"
    return _change(ctx, source, user, lambda keys: keys - {role}, lambda key: user.organization_id)


def set_platform_roles(ctx: Context, user_id: str, roles: Sequence[str]) -> UserAccess:
    """Give the user exactly these platform roles (ADMIN, USER, ORG_OWNER); their VDCs stay (ADMIN).

    ORG_OWNER is given within the user's organization, ADMIN and USER within the project's own. Within
    another organization than the project's, a role can be given only while the project is granted to
    it: an allowance grants it, and taking the allowance away takes the grant (and, in Zitadel, every role
    given within it, its owners' too). So that an ADMIN can give an organization its owner before its
    allowance, or give the owner back after the allowance was taken away, an organization without an
    allowance is granted the project here (USER and ORG_OWNER: it has no VDC), under its lock so that no
    allowance is given or taken meanwhile. Its owner makes VDCs once it has an allowance
    (``organizations.check_within``); the grant stays until an allowance is given (which sets its roles)
    and taken away.
    """
    access.require_admin(ctx)
    if not isinstance(roles, list | tuple) or not all(isinstance(r, str) for r in roles):
        raise ValidationFailed("roles", "roles must be a list of role names")
    unknown = sorted({r for r in roles if r not in PLATFORM_ROLES})
    if unknown:
        raise ValidationFailed(
            "roles", f"unknown role(s) {', '.join(unknown)}: one of {', '.join(PLATFORM_ROLES)}"
        )
    wanted = {r for r in PLATFORM_ROLES if r in roles}
    source = ctx.require_zitadel()
    user = get_user(ctx, source, user_id)
    home = _Home(source)
    org = user.organization_id

    def place(key: str) -> str:
        return org if key == ORG_OWNER else home()

    def change() -> UserAccess:
        return _change(ctx, source, user, lambda keys: (keys - set(PLATFORM_ROLES)) | wanted, place)

    if ORG_OWNER not in wanted or org == home():
        return change()
    with organizations.guard(ctx, org):
        if ctx.kube.get_catalog(organizations.KIND, org) is None:
            source.grant_project(org, organizations.granted_roles(_vdc_ids_of(ctx, org)))
        return change()


def _vdc_ids_of(ctx: Context, org: str) -> list[str]:
    """The ids of an organization's VDCs. One without an allowance has none (its VDCs are made within one,
    which is taken away only once they are gone): read anyway, so that a grant never drops a VDC's role."""
    return [vdc.id for vdc in catalog.objects(ctx, catalog.VDC, Vdc.from_spec) if vdc.organization == org]


def vdc_members(ctx: Context, vdc_id: str) -> list[UserAccess]:
    """The members of a VDC (ADMIN, or ORG_OWNER of the VDC's organization): two reads of Zitadel."""
    access.require_access_manager(ctx)
    vdc = _vdc(ctx, vdc_id)
    source = ctx.require_zitadel()
    role = f"{VDC_ROLE_PREFIX}{vdc.id}"
    holders = source.authorizations(role_key=role)
    users = [
        u
        for u in source.users({g.user_id for g in holders})
        if access.manages_organization(ctx, u.organization_id)
    ]
    grants = grants_of(source, ctx)
    return [access_of(user, grants) for user in sorted(users, key=lambda u: (u.name, u.id))]
