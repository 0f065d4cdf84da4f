"""The claims Zitadel puts in its tokens, built for a local user.

A user's roles are the role keys of their authorizations (``devstack.identity.api``: seeded from
USERS.json, changed through the Zitadel-shaped API), each mapped, as Zitadel maps it, to the
organisations that granted it: ``{"USER": {"100000001": "flexplane.localhost"}}``. A token is built
when it is issued, so a change shows in the user's next token.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the settings module imports this module before Django's apps are ready
    from django.contrib.auth.models import AbstractUser

ORGANISATION_ID = "100000001"
ORGANISATION_DOMAIN = "flexplane.localhost"
ORGANISATION_NAME = "flexplane"

GENERIC_ROLES_CLAIM = "urn:zitadel:iam:org:project:roles"
# The organisation that owns the user (Zitadel adds it for the scope urn:zitadel:iam:user:resourceowner).
RESOURCE_OWNER_CLAIM = "urn:zitadel:iam:user:resourceowner:id"

# The scopes a Zitadel relying party asks for to receive roles and the project audience; this
# provider accepts them so that the same client configuration works against both.
ROLES_SCOPES = ("urn:zitadel:iam:org:project:roles", "urn:zitadel:iam:org:projects:roles")

PROFILE_CLAIMS = ("preferred_username", "name", "email")


def project_roles_claim(project_id: str) -> str:
    return f"urn:zitadel:iam:org:project:{project_id}:roles"


def project_audience_scope(project_id: str) -> str:
    return f"urn:zitadel:iam:org:project:id:{project_id}:aud"


def subject_of(username: str) -> str:
    """The user's ``sub``: an opaque 18-digit id, as Zitadel's, the same in every data directory.

    It is derived from the username, so a user keeps their subject when the devstack is
    rebuilt from scratch, and anything recorded against it (ownership, audit) still matches.
    """
    digest = hashlib.sha256(f"flexplane-identity:user:{username}".encode()).digest()
    return str(10**17 + int.from_bytes(digest[:8], "big") % (9 * 10**17))


def organisation_of(name: str) -> tuple[str, str]:
    """An organisation's id and domain: the default one's, or derived from its name (stable, as ``sub``)."""
    if name == ORGANISATION_NAME:
        return ORGANISATION_ID, ORGANISATION_DOMAIN
    digest = hashlib.sha256(f"flexplane-identity:org:{name}".encode()).digest()
    return str(2 * 10**17 + int.from_bytes(digest[:8], "big") % (10**17)), f"{name}.localhost"


def roles_of(user: AbstractUser) -> dict[str, dict[str, str]]:
    """``{role: {orgId: orgDomain}}`` from the user's active authorizations of this project."""
    from devstack.identity.api.models import Authorization  # only once Django's apps are ready
    from devstack.identity.config import current_config

    granted: dict[str, dict[str, str]] = {}
    grants = Authorization.objects.filter(
        account__user=user, project_id=current_config().project_id, active=True
    ).select_related("organization")
    for grant in grants:
        for role in grant.role_keys:
            granted.setdefault(role, {})[grant.organization.id] = grant.organization.domain
    return dict(sorted(granted.items()))


def roles_claims(
    roles: list[str] | dict[str, dict[str, str]], project_id: str
) -> dict[str, dict[str, dict[str, str]]]:
    """Both of Zitadel's roles claims: the project's own and the generic one, with the same map.

    A plain list of roles is granted by this provider's default organisation.
    """
    if isinstance(roles, dict):
        granted = {role: dict(orgs) for role, orgs in roles.items()}
    else:
        granted = {role: {ORGANISATION_ID: ORGANISATION_DOMAIN} for role in roles}
    return {project_roles_claim(project_id): granted, GENERIC_ROLES_CLAIM: dict(granted)}


def user_claims(user: AbstractUser, project_id: str) -> dict[str, Any]:
    """``sub``, the profile claims, the user's organisation and the roles claims of ``user``."""
    account = getattr(user, "account", None)
    claims: dict[str, Any] = {
        "sub": account.zitadel_id if account is not None else subject_of(user.get_username()),
        "preferred_username": user.get_username(),
        "name": user.get_full_name() or user.get_username(),
        "email": user.email,
        **roles_claims(roles_of(user), project_id),
    }
    if account is not None:
        claims[RESOURCE_OWNER_CLAIM] = account.organization_id
    return claims
