"""Users as access management shows them: their profile, platform roles and VDCs, read from Zitadel.

ADMIN sees every user; an ORG_OWNER the users of the organizations they own, and no other (a user of
another organization is reported exactly as one that does not exist).

Calls to Zitadel: a search is one ListUsers (one per organization owned) and one ListAuthorizations of the
project (per organization owned), whatever the number of users found: never a call per user. Zitadel
answers at most 1000 of each (its largest page); a search names up to 50 users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.auth import ADMIN, ORG_OWNER, USER, VDC_ROLE_PREFIX
from orchestrator.errors import NotFound, ValidationFailed
from orchestrator.services import access
from orchestrator.services.context import Context
from orchestrator.sources.protocols import ZitadelApi
from orchestrator.sources.zitadel import Authorization, User

PLATFORM_ROLES = (ADMIN, USER, ORG_OWNER)
SEARCH_MAX = 100
# Zitadel's ids: digits (an 18-digit snowflake); tolerate its other id forms (letters, '-', '_').
_USER_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class UserAccess:
    """A user, their platform roles and the VDCs they are a member of."""

    id: str
    username: str
    name: str
    email: str
    organization: str
    roles: tuple[str, ...]
    vdcs: tuple[str, ...]


def access_of(user: User, grants: Iterable[Authorization]) -> UserAccess:
    keys = {key for grant in grants if grant.user_id == user.id for key in grant.role_keys}
    return UserAccess(
        id=user.id,
        username=user.username,
        name=user.name,
        email=user.email,
        organization=user.organization_id,
        roles=tuple(sorted(k for k in keys if k in PLATFORM_ROLES)),
        vdcs=tuple(sorted(k[len(VDC_ROLE_PREFIX) :] for k in keys if k.startswith(VDC_ROLE_PREFIX))),
    )


def search_text(search: object) -> str:
    """The search, checked: 1 to 100 characters of text, without control characters."""
    if not isinstance(search, str):
        raise ValidationFailed("search", "search must be text")
    text = search.strip()
    if not text:
        raise ValidationFailed("search", "search must not be empty: give part of a name, user name or email")
    if len(text) > SEARCH_MAX:
        raise ValidationFailed("search", f"search must be at most {SEARCH_MAX} characters")
    if _CONTROL.search(text):
        raise ValidationFailed("search", "search must not hold control characters")
    return text


def user_id_of(value: object, field: str = "user") -> str:
    if not isinstance(value, str) or not _USER_ID.match(value):
        raise ValidationFailed(field, "a user id is 1 to 200 letters, digits, '-' or '_' (Zitadel's user id)")
    return value


def _organizations(ctx: Context) -> Sequence[str | None]:
    """The organizations the caller may look into: every one (None) for ADMIN, else the ones they own."""
    return [None] if ctx.principal.is_admin else sorted(ctx.principal.owned_organizations)


def grants_of(source: ZitadelApi, ctx: Context) -> list[Authorization]:
    """The project's authorizations the caller may see (one call, or one per organization owned)."""
    return [g for org in _organizations(ctx) for g in source.authorizations(organization_id=org)]


def search_users(ctx: Context, search: str) -> list[UserAccess]:
    """Users whose name, user name or email contains ``search`` (ADMIN, or ORG_OWNER for their users)."""
    access.require_access_manager(ctx)
    text = search_text(search)
    source = ctx.require_zitadel()
    found = {u.id: u for org in _organizations(ctx) for u in source.search_users(text, organization_id=org)}
    if not found:
        return []
    grants = grants_of(source, ctx)
    return [access_of(user, grants) for user in sorted(found.values(), key=lambda u: (u.name, u.id))]


def get_user(ctx: Context, source: ZitadelApi, user_id: str) -> User:
    """One user the caller may manage; ``NotFound`` for one that does not exist or is not theirs."""
    ident = user_id_of(user_id)
    for user in source.users([ident]):
        if user.id == ident and access.manages_organization(ctx, user.organization_id):
            return user
    raise NotFound("user", ident)


def user_access(ctx: Context, user_id: str) -> UserAccess:
    """One user with their roles and VDCs (ADMIN, or ORG_OWNER for their users; others NOT_FOUND)."""
    access.require_access_manager(ctx)
    source = ctx.require_zitadel()
    user = get_user(ctx, source, user_id)
    return access_of(user, source.authorizations(user_ids=[user.id]))
