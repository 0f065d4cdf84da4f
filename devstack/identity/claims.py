"""The claims Zitadel puts in its tokens, built for a local user.

A user's roles are the names of their Django groups (``ADMIN``, ``USER``, ``vdc:<id>``).
Zitadel grants roles per organisation, so each role maps to the one organisation of this
provider: ``{"USER": {"100000001": "flexplane.localhost"}}``.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the settings module imports this module before Django's apps are ready
    from django.contrib.auth.models import AbstractUser

ORGANISATION_ID = "100000001"
ORGANISATION_DOMAIN = "flexplane.localhost"

GENERIC_ROLES_CLAIM = "urn:zitadel:iam:org:project:roles"

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


def roles_of(user: AbstractUser) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


def roles_claims(roles: list[str], project_id: str) -> dict[str, dict[str, dict[str, str]]]:
    """Both of Zitadel's roles claims: the project's own and the generic one, with the same map."""
    granted = {role: {ORGANISATION_ID: ORGANISATION_DOMAIN} for role in roles}
    return {project_roles_claim(project_id): granted, GENERIC_ROLES_CLAIM: dict(granted)}


def user_claims(user: AbstractUser, project_id: str) -> dict[str, Any]:
    """``sub``, the profile claims and the roles claims of ``user``."""
    return {
        "sub": subject_of(user.get_username()),
        "preferred_username": user.get_username(),
        "name": user.get_full_name() or user.get_username(),
        "email": user.email,
        **roles_claims(roles_of(user), project_id),
    }
