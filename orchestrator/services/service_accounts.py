"""Service accounts: credentials for a tenant's scripts, one VDC each, kept in Zitadel.

A service account is a Zitadel machine user given USER and ``vdc:<id>`` (one VDC, nothing more) with one
JWT profile key that expires. Its script signs an assertion with the key and gets an access token from
Zitadel (RFC 7523), a JWT the orchestrator checks as it checks a person's (``orchestrator/auth.py``): its
subject is the machine user, so the audit log names the service account, never the person who made it.

Why a key and not a personal access token: Zitadel's PATs are opaque, so every call would cost an
introspection round-trip to Zitadel (with the API's own client credentials); a key's tokens are JWTs that
the orchestrator already verifies locally. The price is on the client's side (it mints an assertion, as
``orchestrator/sources/zitadel.py`` does for the platform's own service user), which the CLI and the
typed client do for the user. Revoking deletes the machine user: its key gives no next token; a token
already issued stays valid until it expires, as a person's roles do (``access.py``).

Who: a member of the VDC holding USER (OpenStack's application credentials are their user's own) may
create, list and revoke the VDC's service accounts, which can do no more in it than USER; ADMIN sees
and revokes every one. Another VDC's account answers as a missing one. A service account itself may
list but neither create nor revoke: a leaked key that could mint keys of its own would outlive its own
revocation.

What is kept where: the user name is ``sa.<vdc>.<name>`` (VDC ids and names are DNS labels, so the
prefix is unambiguous and a name is unique within its VDC); the description holds who made it, when,
and when its key expires, as JSON. Nothing is kept in the orchestrator.

The platform makes one of its own with each tenant cluster: ``k8s-<cluster>``, the identity of the
cluster's cloud controller (``providers.cloud``), made by the create (no person asks for it: whoever
creates the cluster is already USER of the VDC), its key valid ``MAX_LIFETIME``, and revoked when the
cluster is deleted; its key is renewed before it expires (``clusters.identity.renew_keys``), and the
description then says the new key's expiry. Its ``createdBy`` is ``flex.plane``. It is listed with the
VDC's others, and a member may revoke it as any other: the cluster's cloud controller then gets no next
token. Names beginning ``k8s-`` are kept for these, so a tenant's own account never takes a cluster's.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field

from orchestrator.auth import VDC_ROLE_PREFIX
from orchestrator.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from orchestrator.models import Vdc
from orchestrator.services import access
from orchestrator.services.context import Context
from orchestrator.services.vdcs.definitions import get_vdc
from orchestrator.sources.kube_objects import CLOUD_CONTROLLER_ACCOUNT_PREFIX, cloud_controller_account
from orchestrator.sources.protocols import ZitadelApi
from orchestrator.sources.zitadel import MachineUser, ZitadelRefused

PREFIX = "sa."
# The longest a key may live: a year. A tenant's account then needs a new one (its keys are not rotated in
# place); a cluster's is given a new key before it expires (``clusters.identity.renew_keys``).
MAX_LIFETIME = datetime.timedelta(days=365)
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")
KIND = "service account"
# Who made the accounts the platform makes for itself (a person's are made by their subject).
PLATFORM = "flex.plane"


@dataclass(frozen=True)
class ServiceAccount:
    """A service account as the API shows it: never its key."""

    id: str
    name: str
    vdc: str
    created: datetime.datetime | None
    expires: datetime.datetime | None
    created_by: str


@dataclass(frozen=True)
class CreatedServiceAccount:
    """A new service account and its key file's JSON, answered this once (Zitadel keeps no private key)."""

    account: ServiceAccount
    key: str = field(repr=False)


def create_service_account(
    ctx: Context, vdc_id: str, name: str, expires_at: datetime.datetime
) -> CreatedServiceAccount:
    """A service account with USER in this VDC only, and its key, valid until ``expires_at``."""
    vdc = _member_vdc(ctx, vdc_id)
    _check_name(name)
    expires = _check_expiry(expires_at)
    source = ctx.require_zitadel()
    _require_a_person(ctx, source)
    now = datetime.datetime.now(datetime.UTC)
    about = {
        "vdc": vdc.id,
        "createdBy": ctx.principal.subject,
        "created": iso_utc(now),
        "expires": iso_utc(expires),
    }
    try:
        user_id, key = _make(source, vdc, name, name, json.dumps(about), expires)
    except ZitadelRefused as exc:
        if exc.status == "already_exists":
            raise Conflict(f"VDC {vdc.id!r} already has a service account named {name!r}") from exc
        raise
    return CreatedServiceAccount(
        ServiceAccount(user_id, name, vdc.id, now, expires, ctx.principal.subject), key
    )


def _make(
    source: ZitadelApi, vdc: Vdc, name: str, display: str, description: str, expires: datetime.datetime
) -> tuple[str, str]:
    """The machine user ``sa.<vdc>.<name>``, USER of the VDC with a JWT profile key: its id and key file."""
    organization = vdc.organization or source.project_organization()
    user_id = source.create_machine_user(organization, f"{PREFIX}{vdc.id}.{name}", display, description)
    try:
        source.use_jwt_access_tokens(user_id, organization, display, description)
        source.create_authorization(user_id, organization, ["USER", f"{VDC_ROLE_PREFIX}{vdc.id}"])
        key = source.add_machine_key(user_id, expires)
    except Exception:
        source.delete_user(user_id)  # no half-made account: it could never be used
        raise
    return user_id, key


def create_cluster_account(ctx: Context, vdc: Vdc, cluster: str) -> CreatedServiceAccount:
    """The service account of cluster ``cluster``'s cloud controller (``k8s-<cluster>``, see the module's
    docstring), made by the platform for the cluster's create, which has checked its caller and the name.

    One left by an earlier cluster of that name (whose delete could not revoke it) is revoked and made
    anew: its key is in nobody's hands but a Secret's. One of that name the platform did not make is
    ``Conflict`` (none can be made now: such names are kept; one could predate that)."""
    source = ctx.require_zitadel()
    name = cloud_controller_account(cluster)
    now = datetime.datetime.now(datetime.UTC)
    expires = now + MAX_LIFETIME
    about = {
        "vdc": vdc.id,
        "createdBy": PLATFORM,
        "cluster": cluster,
        "created": iso_utc(now),
        "expires": iso_utc(expires),
    }
    description = json.dumps(about, separators=(",", ":"))  # Zitadel keeps 200 characters
    display = f"cluster {cluster}'s cloud controller"
    for left in _cluster_accounts(source, vdc.id, cluster, mine=False):
        if left.created_by != PLATFORM:
            raise Conflict(
                f"VDC {vdc.id!r} has a service account named {name!r} that flex.plane did not make: "
                f"revoke it, or name the cluster otherwise (cluster {cluster}'s cloud controller needs it)"
            )
        source.delete_user(left.id)
    user_id, key = _make(source, vdc, name, display, description, expires)
    return CreatedServiceAccount(ServiceAccount(user_id, name, vdc.id, now, expires, PLATFORM), key)


def revoke_cluster_account(ctx: Context, vdc_id: str, cluster: str) -> bool:
    """Revoke cluster ``cluster``'s cloud controller's service account as its cluster goes; False when
    there was none (a member revoked it by hand, or it was never made)."""
    source = ctx.require_zitadel()
    found = _cluster_accounts(source, vdc_id, cluster, mine=True)
    for account in found:
        source.delete_user(account.id)
    return bool(found)


def add_cluster_key(ctx: Context, user_id: str) -> tuple[str, datetime.datetime]:
    """A new key for a cluster's cloud controller's account ``user_id``, valid ``MAX_LIFETIME``: its key
    file's JSON and its expiry (its other keys stay valid)."""
    expires = datetime.datetime.now(datetime.UTC) + MAX_LIFETIME
    return ctx.require_zitadel().add_machine_key(user_id, expires), expires


def note_cluster_key_expiry(ctx: Context, vdc_id: str, cluster: str, expires: datetime.datetime) -> None:
    """The description of cluster ``cluster``'s cloud controller's account says its key expires at
    ``expires`` (as the VDC's service accounts are listed); nothing when there is no such account."""
    source = ctx.require_zitadel()
    username = f"{PREFIX}{vdc_id}.{cloud_controller_account(cluster)}"
    for machine in source.machine_users(username):
        account = _account(machine)
        if machine.username != username or account is None or account.created_by != PLATFORM:
            continue
        about = json.loads(machine.description)  # the platform's own, so JSON (``_account`` read it)
        about["expires"] = iso_utc(expires)
        description = json.dumps(about, separators=(",", ":"))
        source.use_jwt_access_tokens(machine.id, machine.organization_id, machine.name, description)


def _cluster_accounts(source: ZitadelApi, vdc_id: str, cluster: str, *, mine: bool) -> list[ServiceAccount]:
    """The VDC's accounts named for cluster ``cluster``'s cloud controller (``mine``: those the platform
    made only)."""
    username = f"{PREFIX}{vdc_id}.{cloud_controller_account(cluster)}"
    found = [_account(m) for m in source.machine_users(username) if m.username == username]
    return [a for a in found if a is not None and (not mine or a.created_by == PLATFORM)]


def service_accounts(ctx: Context, vdc_id: str | None) -> list[ServiceAccount]:
    """The VDC's service accounts; without a VDC, those of every VDC the caller is a member of (ADMIN: all).

    One ``ListUsers`` call whatever the number of accounts."""
    access.require_self_service(ctx)
    prefix = f"{PREFIX}{_member_vdc(ctx, vdc_id).id}." if vdc_id is not None else PREFIX
    found = [_account(m) for m in ctx.require_zitadel().machine_users(prefix)]
    return [a for a in found if a is not None and _may_manage(ctx, a.vdc)]


def revoke_service_account(ctx: Context, account_id: str) -> ServiceAccount:
    """Delete the service account: its key gives no next token. Another VDC's answers as a missing one."""
    access.require_self_service(ctx)
    source = ctx.require_zitadel()
    _require_a_person(ctx, source)
    found = next((a for a in service_accounts(ctx, None) if a.id == account_id), None)
    if found is None:
        raise NotFound(KIND, account_id)
    source.delete_user(found.id)
    return found


def _require_a_person(ctx: Context, source: ZitadelApi) -> None:
    """Only people make and revoke service accounts (see the module's docstring)."""
    if any(user.id == ctx.principal.subject for user in source.machine_users(PREFIX)):
        raise PermissionDenied(
            "a service account cannot make or revoke service accounts: a member of its VDC does"
        )


def _member_vdc(ctx: Context, vdc_id: str) -> Vdc:
    """The VDC, if the caller is its member with USER (or ADMIN); ``NotFound`` as a missing one otherwise."""
    access.require_self_service(ctx)
    if not _may_manage(ctx, vdc_id):
        raise NotFound("VDC", vdc_id)
    return get_vdc(ctx, vdc_id)


def _may_manage(ctx: Context, vdc_id: str) -> bool:
    principal = ctx.principal
    return principal.is_admin or (principal.is_user and vdc_id in principal.vdcs)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValidationFailed(
            "name",
            "a service account's name is 1 to 40 lowercase letters, digits and '-' (not at either end)",
        )
    if name.startswith(CLOUD_CONTROLLER_ACCOUNT_PREFIX):
        raise ValidationFailed(
            "name",
            f"names beginning {CLOUD_CONTROLLER_ACCOUNT_PREFIX!r} are kept for the service accounts "
            "flex.plane makes for its Kubernetes clusters",
        )


def _check_expiry(expires_at: datetime.datetime) -> datetime.datetime:
    if not isinstance(expires_at, datetime.datetime):
        raise ValidationFailed("expiresAt", "give the key's expiry as a date and time")
    expires = expires_at if expires_at.tzinfo else expires_at.replace(tzinfo=datetime.UTC)
    now = datetime.datetime.now(datetime.UTC)
    if expires <= now:
        raise ValidationFailed("expiresAt", f"the expiry {iso_utc(expires)} is not in the future")
    if expires > now + MAX_LIFETIME:
        raise ValidationFailed("expiresAt", f"a key lives at most {MAX_LIFETIME.days} days")
    return expires


def _account(user: MachineUser) -> ServiceAccount | None:
    """The service account a machine user is, from its user name and description; None if it is not one."""
    vdc, _, name = user.username.removeprefix(PREFIX).partition(".")
    if not user.username.startswith(PREFIX) or not vdc or not name:
        return None
    try:
        about = json.loads(user.description or "{}")
    except ValueError:
        about = {}
    about = about if isinstance(about, dict) else {}
    return ServiceAccount(
        id=user.id,
        name=name,
        vdc=vdc,
        created=parse_utc(about.get("created")),
        expires=parse_utc(about.get("expires")),
        created_by=str(about.get("createdBy") or ""),
    )


def iso_utc(moment: datetime.datetime) -> str:
    """A moment as the accounts' descriptions and the clusters' key Secrets write it: RFC 3339, UTC."""
    return moment.astimezone(datetime.UTC).isoformat(timespec="seconds")


def parse_utc(value: object) -> datetime.datetime | None:
    """An RFC 3339 moment (``Z`` or an offset; one without is read as UTC), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
