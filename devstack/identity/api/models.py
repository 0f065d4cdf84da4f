"""What the Zitadel-shaped API keeps: organizations, users' organizations, project roles, authorizations,
and the service users' keys and tokens."""

from __future__ import annotations

import hashlib
import secrets
from typing import ClassVar

from django.conf import settings
from django.db import models


def new_id() -> str:
    """An id shaped like Zitadel's: 18 digits."""
    return str(10**17 + secrets.randbelow(9 * 10**17))


def checksum(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Organization(models.Model):
    id = models.CharField(primary_key=True, max_length=200)
    name = models.CharField(max_length=200, unique=True)
    domain = models.CharField(max_length=253)
    objects: ClassVar[models.Manager[Organization]] = models.Manager()

    def __str__(self) -> str:
        return self.name


class Account(models.Model):
    """A user's Zitadel side: their id (the tokens' ``sub``) and the organization that owns them."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    zitadel_id = models.CharField(max_length=200, unique=True)
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="accounts")
    organization_id: str
    # The roles USERS.json gave the user when last seeded: a change of the file changes only those.
    seeded_roles = models.JSONField(default=list)
    # A service account (Zitadel's machine user): no password, signs in with its keys only.
    machine = models.BooleanField(default=False)
    # Zitadel's accessTokenType of a machine user: JWT access tokens instead of opaque ones (the default).
    jwt_access_tokens = models.BooleanField(default=False)
    objects: ClassVar[models.Manager[Account]] = models.Manager()

    def __str__(self) -> str:
        return self.zitadel_id


class ProjectRole(models.Model):
    project_id = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    display_name = models.CharField(max_length=200)
    group = models.CharField(max_length=200, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    objects: ClassVar[models.Manager[ProjectRole]] = models.Manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project_id", "key"], name="unique_role_per_project")]

    def __str__(self) -> str:
        return self.key


class Grant(models.Model):
    """Role keys of a project, given within an organization (to it, or to one of its users)."""

    project_id = models.CharField(max_length=200)
    role_keys = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)
    changed = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class ProjectGrant(Grant):
    """The project granted to another organization: the roles its users may be given within it."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="project_grants")
    objects: ClassVar[models.Manager[ProjectGrant]] = models.Manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project_id", "organization"], name="one_grant_per_project_org")
        ]

    def __str__(self) -> str:
        return f"{self.project_id}@{self.organization.pk}"


class Authorization(Grant):
    """A user grant: role keys of a project for a user, within an organization."""

    id = models.CharField(primary_key=True, max_length=200, default=new_id)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="authorizations")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="authorizations")
    active = models.BooleanField(default=True)
    objects: ClassVar[models.Manager[Authorization]] = models.Manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "project_id", "organization"],
                name="one_authorization_per_user_project_org",
            )
        ]

    def __str__(self) -> str:
        return self.id


class MachineKey(models.Model):
    """A service user's public key (its JWT profile key); the private half is in the key file only."""

    key_id = models.CharField(primary_key=True, max_length=200)
    user_id = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    public_key = models.TextField()
    # The key is refused after this moment (Zitadel's expirationDate); None: never.
    expires = models.DateTimeField(null=True, blank=True)
    objects: ClassVar[models.Manager[MachineKey]] = models.Manager()

    def __str__(self) -> str:
        return self.key_id


class ApiToken(models.Model):
    """An access token issued to a service user (only its checksum is kept)."""

    checksum = models.CharField(primary_key=True, max_length=64)
    user_id = models.CharField(max_length=200)
    scopes = models.JSONField(default=list)
    expires = models.DateTimeField()
    objects: ClassVar[models.Manager[ApiToken]] = models.Manager()

    def __str__(self) -> str:
        return self.user_id


class DevicePoll(models.Model):
    """When a device last polled for its token with a device code, the interval it must keep now, and
    whether the code was exchanged: the device authorization grant's pace (RFC 8628 3.5, ``slow_down``) and
    its one use, which the toolkit's grant keeps neither of (devstack/identity/device.py)."""

    device_code = models.CharField(primary_key=True, max_length=100)
    polled = models.DateTimeField()
    interval = models.IntegerField()
    exchanged = models.BooleanField(default=False)
    objects: ClassVar[models.Manager[DevicePoll]] = models.Manager()

    def __str__(self) -> str:
        return f"{self.device_code[:8]}… every {self.interval} s"
