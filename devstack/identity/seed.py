"""Make the database match the configuration: the users of USERS.json and the two clients.

Seeding runs at every start and is idempotent: a second run with the same input changes
nothing that a token depends on; a run with changed input updates users and clients in place.
Users that are no longer listed are removed, so USERS.json is the whole directory.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.hashers import check_password
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import transaction
from oauth2_provider.models import Application

from devstack.identity.api.models import (
    Account,
    Authorization,
    MachineKey,
    Organization,
    ProjectGrant,
    ProjectRole,
    new_id,
)
from devstack.identity.claims import ORGANISATION_ID, organisation_of, subject_of
from devstack.identity.client import CLI_DEVICE_CLIENT_ID
from devstack.identity.keys import write_private_file
from devstack.identity.users import SeedUser

logger = logging.getLogger(__name__)

PORTAL_CLIENT_ID = "flexplane-portal"
CLI_CLIENT_ID = "flexplane-cli"
# The orchestrator's service user, and the project roles flex.plane relies on being there.
SERVICE_USER = "flexplane-orchestrator"
PLATFORM_ROLES = ("ADMIN", "USER", "ORG_OWNER")


@dataclass(frozen=True)
class PortalSeed:
    """The portal's registration; its plaintext secret is kept for the relying party."""

    client_secret: str
    redirect_uris: tuple[str, ...]
    post_logout_redirect_uris: tuple[str, ...]
    client_id: str = PORTAL_CLIENT_ID

    def to_json(self, issuer: str) -> dict[str, Any]:
        return {
            "issuer": issuer,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "redirect_uris": list(self.redirect_uris),
            "post_logout_redirect_uris": list(self.post_logout_redirect_uris),
        }


def portal_client_secret(portal_client_path: Path, given: str | None) -> str:
    """The secret given, else the one recorded in the data directory, else a new one."""
    if given:
        return given
    if portal_client_path.exists():
        recorded = json.loads(portal_client_path.read_text(encoding="utf-8")).get("client_secret")
        if isinstance(recorded, str) and recorded:
            return recorded
    return secrets.token_urlsafe(32)


def seed(users: Sequence[SeedUser], portal: PortalSeed, project_id: str = "flexplane") -> None:
    with transaction.atomic():
        ensure_users(users)
        for user in users:
            ensure_grants(user, project_id)
        ensure_portal_client(portal)
        ensure_cli_client()
        ensure_cli_device_client()


def ensure_grants(seed_user: SeedUser, project_id: str) -> None:
    """The user's account in their organisation, and the roles USERS.json gives them there.

    Only what the file changed since the last seeding is applied: roles granted or revoked through
    the API since then stay as they are.
    """
    org_id, domain = organisation_of(seed_user.organization)
    org, _ = Organization.objects.update_or_create(
        id=org_id, defaults={"name": seed_user.organization, "domain": domain}
    )
    user = User.objects.get(username=seed_user.username)
    account, created = Account.objects.get_or_create(
        user=user, defaults={"zitadel_id": subject_of(seed_user.username), "organization": org}
    )
    if account.organization_id != org.id:
        account.organization = org
    before = set() if created else set(account.seeded_roles)
    wanted = set(seed_user.roles)
    for role in sorted(wanted):
        ProjectRole.objects.get_or_create(project_id=project_id, key=role, defaults={"display_name": role})
    if (
        org.id != ORGANISATION_ID and wanted
    ):  # another organization: the project granted to it, with the roles
        granted, _ = ProjectGrant.objects.get_or_create(project_id=project_id, organization=org)
        if missing := sorted(wanted - set(granted.role_keys)):
            granted.role_keys = [*granted.role_keys, *missing]
            granted.save()
    grant, _ = Authorization.objects.get_or_create(account=account, project_id=project_id, organization=org)
    keys = [k for k in grant.role_keys if k not in before - wanted]
    keys += [k for k in sorted(wanted - before) if k not in keys]
    if keys != grant.role_keys:
        grant.role_keys = keys
        grant.save()
    account.seeded_roles = sorted(wanted)
    account.save()


def ensure_service_user(key_path: Path, project_id: str) -> None:
    """The orchestrator's service user and its JWT profile key, in Zitadel's key file format.

    The private key is written once to ``key_path`` (mode 0600); its public half is registered.
    """
    if key_path.exists():
        recorded = json.loads(key_path.read_text(encoding="utf-8"))
        private_pem = str(recorded["key"])
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private_pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
        recorded = {
            "type": "serviceaccount",
            "keyId": new_id(),
            "key": private_pem,
            "userId": subject_of(SERVICE_USER),
            "expirationDate": "9999-12-31T23:59:59Z",
        }
        write_private_file(key_path, json.dumps(recorded, indent=2) + "\n")
    public_pem = (
        serialization.load_pem_private_key(private_pem.encode("ascii"), password=None)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode("ascii")
    )
    MachineKey.objects.update_or_create(
        key_id=str(recorded["keyId"]),
        defaults={"user_id": str(recorded["userId"]), "name": SERVICE_USER, "public_key": public_pem},
    )
    for role in PLATFORM_ROLES:
        ProjectRole.objects.get_or_create(project_id=project_id, key=role, defaults={"display_name": role})


def write_portal_client_file(path: Path, portal: PortalSeed, issuer: str) -> None:
    write_private_file(path, json.dumps(portal.to_json(issuer), indent=2) + "\n")


def ensure_users(users: Iterable[SeedUser]) -> None:
    listed = [ensure_user(user) for user in users]
    unlisted = User.objects.exclude(pk__in=[user.pk for user in listed])
    removed = sorted(unlisted.values_list("username", flat=True))
    if removed:
        unlisted.delete()  # their tokens and grants go with them
        logger.info("removed users no longer listed: %s", ", ".join(removed))


def ensure_user(seed_user: SeedUser) -> User:
    user, created = User.objects.get_or_create(username=seed_user.username)
    first_name, _, last_name = seed_user.name.strip().partition(" ")
    user.first_name = first_name
    user.last_name = last_name.strip()
    user.email = seed_user.email
    user.is_active = True
    if created or not user.check_password(seed_user.password):
        user.set_password(seed_user.password)
    user.save()
    user.groups.set([Group.objects.get_or_create(name=role)[0] for role in seed_user.roles])
    if created:
        logger.info("created user %s with roles %s", seed_user.username, ", ".join(seed_user.roles))
    return user


def ensure_portal_client(portal: PortalSeed) -> None:
    application = _application(portal.client_id)
    application.name = "flex.plane portal"
    application.client_type = Application.CLIENT_CONFIDENTIAL
    application.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
    application.redirect_uris = " ".join(portal.redirect_uris)
    application.post_logout_redirect_uris = " ".join(portal.post_logout_redirect_uris)
    application.algorithm = Application.RS256_ALGORITHM
    application.skip_authorization = True
    application.hash_client_secret = True
    # django-oauth-toolkit stores a hash: replace it only when the secret has changed.
    if not (application.client_secret and check_password(portal.client_secret, application.client_secret)):
        application.client_secret = portal.client_secret
    if portal.redirect_uris:  # without any, the portal cannot sign in yet, but tokens still work
        try:
            application.full_clean(exclude=["client_secret"])
        except ValidationError as error:
            raise ValueError(f"the portal client is invalid: {'; '.join(error.messages)}") from error
    application.save()


def ensure_cli_client() -> None:
    """A public client for scripted tokens with the resource owner password grant."""
    application = _application(CLI_CLIENT_ID)
    application.name = "flex.plane CLI"
    application.client_type = Application.CLIENT_PUBLIC
    application.authorization_grant_type = Application.GRANT_PASSWORD
    application.redirect_uris = ""
    application.post_logout_redirect_uris = ""
    application.algorithm = Application.RS256_ALGORITHM
    application.skip_authorization = True
    application.hash_client_secret = False
    application.client_secret = ""
    application.save()


def ensure_cli_device_client() -> None:
    """A public client of the device authorization grant (RFC 8628): `flexplane login` in a terminal."""
    application = _application(CLI_DEVICE_CLIENT_ID)
    application.name = "flex.plane command line"
    application.client_type = Application.CLIENT_PUBLIC
    application.authorization_grant_type = Application.GRANT_DEVICE_CODE
    application.redirect_uris = ""
    application.post_logout_redirect_uris = ""
    application.algorithm = Application.RS256_ALGORITHM
    application.skip_authorization = False
    application.hash_client_secret = False
    application.client_secret = ""
    application.save()


def _application(client_id: str) -> Any:
    return Application.objects.filter(client_id=client_id).first() or Application(client_id=client_id)
