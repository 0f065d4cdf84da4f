"""The portal's user: the person the identity provider vouched for, kept in the signed session only.

There is no database (docs/architecture.md, "Where state lives"): the user is built from the ID token's
claims and the userinfo answer at login, written into the signed cookie session, and rebuilt from
it on every request. The model is unmanaged and never saved; it exists because Django's
``auth.login()`` needs a model instance with a primary key to record in the session.

It has no ``last_login`` field on purpose: Django connects ``update_last_login`` (a database
write) to ``user_logged_in`` only for user models that have one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django.conf import settings
from django.db import models

from orchestrator.auth import Principal


class PortalUser(models.Model):
    """The signed-in user: their OIDC subject, profile and flex.plane roles."""

    subject = models.CharField(primary_key=True, max_length=255)
    username = models.CharField(max_length=255, blank=True)
    name = models.CharField(max_length=255, blank=True)
    email = models.CharField(max_length=255, blank=True)
    roles = models.JSONField(default=list)
    # The user's organization and those they own (ORG_OWNER), as the roles claim said at login.
    organization = models.CharField(max_length=255, blank=True)
    owned_organizations = models.JSONField(default=list)

    USERNAME_FIELD = "subject"
    REQUIRED_FIELDS: ClassVar[list[str]] = []
    # What Django's auth machinery asks of any user object.
    is_active = True
    is_anonymous = False
    is_authenticated = True
    is_staff = False
    is_superuser = False

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.display_name

    def get_username(self) -> str:
        return self.username or self.subject

    @property
    def display_name(self) -> str:
        return self.name or self.username or self.email or self.subject

    @property
    def principal(self) -> Principal:
        """The caller as the orchestrator's services know it: the same as a bearer token's."""
        return Principal(
            subject=self.subject,
            name=self.name,
            email=self.email,
            roles=frozenset(self.roles),
            organization=self.organization,
            owned_organizations=frozenset(self.owned_organizations),
        )

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> PortalUser:
        """The user the claims describe (``sub``, profile, Zitadel's roles claim)."""
        principal = Principal.from_claims(claims, settings.FLEXPLANE_OIDC_PROJECT_ID)
        return cls(
            subject=principal.subject,
            username=str(claims.get("preferred_username") or ""),
            name=principal.name,
            email=principal.email,
            roles=sorted(principal.roles),
            organization=principal.organization,
            owned_organizations=sorted(principal.owned_organizations),
        )

    def to_session(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "username": self.username,
            "name": self.name,
            "email": self.email,
            "roles": list(self.roles),
            "organization": self.organization,
            "owned_organizations": list(self.owned_organizations),
        }

    @classmethod
    def from_session(cls, data: Mapping[str, Any]) -> PortalUser | None:
        """The user a session recorded, or None when what it holds is not one."""
        subject, roles = data.get("subject"), data.get("roles")
        if not isinstance(subject, str) or not subject or not isinstance(roles, list):
            return None
        return cls(
            subject=subject,
            username=str(data.get("username") or ""),
            name=str(data.get("name") or ""),
            email=str(data.get("email") or ""),
            roles=[str(role) for role in roles],
            organization=str(data.get("organization") or ""),
            owned_organizations=[str(org) for org in data.get("owned_organizations") or []],
        )
