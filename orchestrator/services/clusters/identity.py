"""A tenant cluster's cloud controller's identity: the service account of its VDC it acts as, and the
Secret of the VDC's namespace that hands its key to the control-plane provider (the names:
``kube_objects.cloud_controller_account`` and ``cloud_controller_secret``).

Made by the create, once the name is known free and the quota fits and before any object is written, where
the platform has an identity provider (Zitadel); without one there is no controller, and the kubelets run
without ``--cloud-provider=external`` (they would wait, tainted, for a controller that never comes).
A create that fails afterwards takes both back; the delete revokes the account and deletes the Secret.

The key is valid a year (``service_accounts.MAX_LIFETIME``) and renewed in place, the account kept
(``renew_keys``, which ``manage.py reconcile_gateways`` runs on its first pass and every 10 minutes).
The Secret says when its key expires (the annotation ``flexplane.io/key-expires``, written with each
key; a Secret written before there was one is read by the ``expirationDate`` its key file carries, and
one whose key carries none either is renewed at once). A key that expires within ``RENEW_BEFORE`` (30
days) is replaced: a new key of the same account, written to the Secret, whose change the control-plane
provider rolls the controller onto within its drift timer's minute; the Secret then names the key it
replaced and when (``flexplane.io/key-replaced``, ``flexplane.io/key-renewed``). The replaced key stays
valid in Zitadel for ``RENEWAL_GRACE`` (an hour: the controller holds it until it restarts, and a
rollout that waits on a slow node must not lose its access), then a later run deletes it and the two
annotations. The account's description says the new expiry, as the VDC's service accounts are listed.
"""

from __future__ import annotations

import datetime
import json
import logging
from dataclasses import dataclass

from orchestrator.errors import Conflict, FlexPlaneError, Unavailable
from orchestrator.models.clusters import CLUSTER, CLUSTER_NAME_LABEL, VDC_LABEL, namespace_of, vdc_of
from orchestrator.models.vdcs import Vdc
from orchestrator.services import access, service_accounts
from orchestrator.services.clusters import reads
from orchestrator.services.context import Context
from orchestrator.services.service_accounts import iso_utc, parse_utc
from orchestrator.sources.kube_objects import (
    CLOUD_CONTROLLER_EXPIRES_ANNOTATION,
    CLOUD_CONTROLLER_KEY,
    CLOUD_CONTROLLER_RENEWED_ANNOTATION,
    CLOUD_CONTROLLER_REPLACED_ANNOTATION,
    SecretEntry,
    cloud_controller_account,
    cloud_controller_secret,
)
from orchestrator.sources.zitadel import WHERE as IDENTITY_PROVIDER
from orchestrator.sources.zitadel import ZitadelRefused

logger = logging.getLogger(__name__)

# A key is replaced when it expires within this; the key it replaced is deleted this long after.
RENEW_BEFORE = datetime.timedelta(days=30)
RENEWAL_GRACE = datetime.timedelta(hours=1)


@dataclass(frozen=True)
class Identity:
    """The cloud controller's identity a create made: its VDC, its cluster, the account's id."""

    vdc: str
    cluster: str
    account: str


def make(ctx: Context, vdc: Vdc, cluster: str) -> Identity | None:
    """The account made and its key written to the Secret (the VDC's namespace exists); None where the
    platform has no identity provider. ``Unavailable`` naming Zitadel when the account cannot be made,
    ``Conflict`` when a tenant's account holds its name; either way nothing is left."""
    if ctx.zitadel is None:
        return None
    try:
        made = service_accounts.create_cluster_account(ctx, vdc, cluster)
    except Conflict:
        raise
    except FlexPlaneError as exc:
        raise Unavailable(
            IDENTITY_PROVIDER,
            f"the identity provider (Zitadel) could not make the service account of cluster {cluster}'s "
            f"cloud controller ({exc.message}); nothing was made, retry",
        ) from exc
    identity = Identity(vdc.id, cluster, made.account.id)
    try:
        ctx.clusterapi.write_secret(
            namespace_of(vdc.id),
            cloud_controller_secret(cluster),
            {CLOUD_CONTROLLER_KEY: made.key.encode()},
            {VDC_LABEL: vdc.id, CLUSTER_NAME_LABEL: cluster},
            _expiry_annotation(made.account.expires),
        )
    except FlexPlaneError as exc:
        exc.message = f"cluster {cluster}'s cloud controller's key could not be stored: {exc.message}"
        take_back(ctx, identity, exc)
        raise
    return identity


def take_back(ctx: Context, identity: Identity | None, error: FlexPlaneError) -> None:
    """Undo ``make`` after the create failed, and say in ``error`` if something stays."""
    if identity is None:
        return
    left = remove(ctx, identity.vdc, identity.cluster)
    if left:
        note = f"cluster {identity.cluster}'s cloud controller's identity stays ({'; '.join(left)})"
        logger.warning("cluster create in VDC %s: %s", identity.vdc, note)
        error.message = f"{error.message}; {note}"
    error.args = (error.message,)


def remove(ctx: Context, vdc_id: str, cluster: str) -> list[str]:
    """Revoke the cluster's cloud controller's account and delete its Secret, each whatever the other
    does; what could not be done, as failures to report (none where the platform has no identity
    provider and no Secret is there)."""
    failures: list[str] = []
    secret = cloud_controller_secret(cluster)
    try:
        ctx.clusterapi.delete_secret(namespace_of(vdc_id), secret)
    except FlexPlaneError as exc:
        failures.append(f"Secret {secret}: {exc.message}")
    if ctx.zitadel is not None:
        try:
            service_accounts.revoke_cluster_account(ctx, vdc_id, cluster)
        except FlexPlaneError as exc:
            failures.append(f"service account {cloud_controller_account(cluster)}: {exc.message}")
    return failures


@dataclass(frozen=True)
class KeyRenewal:
    """What a pass of ``renew_keys`` did with one cluster's key: ``action`` is ``kept`` (not due, or the
    key it replaced still in its grace), ``renewed`` (a new key in the Secret) or ``retired`` (the key it
    replaced deleted in Zitadel); ``expires`` when the key in the Secret expires (None: unknown);
    ``error`` what could not be done (the action then says what was tried)."""

    vdc: str
    cluster: str
    action: str
    expires: datetime.datetime | None
    error: str = ""


@dataclass(frozen=True)
class _KeyFile:
    key_id: str
    user_id: str
    expires: datetime.datetime | None


def renew_keys(ctx: Context, *, before: datetime.timedelta = RENEW_BEFORE) -> list[KeyRenewal]:
    """Renew every cluster's cloud controller's key that expires within ``before``, and delete the keys
    renewals replaced once their grace has passed (see the module's docstring); one entry per cluster
    whose Secret holds a key, by VDC then cluster. ADMIN (the gateway reconciler's pass).

    One cluster's failure (Zitadel refusing, the Secret changed meanwhile) is its entry's ``error``; the
    others go on. Nothing where the platform has no identity provider (there are no controllers then).
    Costs one list of the clusters and one read of each one's Secret; Zitadel is called only for a key
    that is due or retired."""
    access.require_admin(ctx)
    if ctx.zitadel is None:
        return []
    found = reads.read(ctx, None, kinds=(CLUSTER,))
    clusters = sorted({(vdc_of(c.namespace) or "", c.name) for c in found.of(CLUSTER)})
    done: list[KeyRenewal] = []
    for vdc, cluster in clusters:
        if not vdc:
            continue
        try:
            entry = ctx.clusterapi.secret(namespace_of(vdc), cloud_controller_secret(cluster))
        except FlexPlaneError as exc:
            done.append(KeyRenewal(vdc, cluster, "read", None, exc.message))
            continue
        if entry is not None:
            done.append(_renew_one(ctx, vdc, cluster, entry, before))
    return done


def _renew_one(
    ctx: Context, vdc: str, cluster: str, entry: SecretEntry, before: datetime.timedelta
) -> KeyRenewal:
    now = datetime.datetime.now(datetime.UTC)
    annotations = dict(entry.annotations)
    try:
        key = _key_file(entry.data.get(CLOUD_CONTROLLER_KEY, b""))
    except ValueError as exc:
        return KeyRenewal(vdc, cluster, "read", None, f"Secret {entry.name}: {exc}")
    expires = parse_utc(annotations.get(CLOUD_CONTROLLER_EXPIRES_ANNOTATION)) or key.expires
    replaced = annotations.get(CLOUD_CONTROLLER_REPLACED_ANNOTATION)
    if replaced:
        renewed = parse_utc(annotations.get(CLOUD_CONTROLLER_RENEWED_ANNOTATION))
        # Written with the new key: missing or garbled (a hand's edit), the new key has been there since.
        if renewed is not None and now - renewed < RENEWAL_GRACE:
            return KeyRenewal(vdc, cluster, "kept", expires)
        try:
            _retire(ctx, vdc, entry, key.user_id, replaced, annotations)
        except FlexPlaneError as exc:
            return KeyRenewal(vdc, cluster, "retired", expires, _failed(cluster, exc, f"key {replaced}"))
        return KeyRenewal(vdc, cluster, "retired", expires)
    if expires is not None and expires - now > before:
        return KeyRenewal(vdc, cluster, "kept", expires)
    try:
        renewed_until = _renew(ctx, vdc, cluster, entry, key, annotations, now)
    except FlexPlaneError as exc:
        return KeyRenewal(vdc, cluster, "renewed", expires, _failed(cluster, exc, "a new key"))
    error = ""
    try:
        service_accounts.note_cluster_key_expiry(ctx, vdc, cluster, renewed_until)
    except FlexPlaneError as exc:  # the key is renewed: only the account's listing lags
        error = f"the new key's expiry could not be written to its service account: {exc.message}"
    return KeyRenewal(vdc, cluster, "renewed", renewed_until, error)


def _renew(
    ctx: Context,
    vdc: str,
    cluster: str,
    entry: SecretEntry,
    key: _KeyFile,
    annotations: dict[str, str],
    now: datetime.datetime,
) -> datetime.datetime:
    """A new key of the account in the Secret, naming the one it replaces; the new key's expiry. A new key
    the Secret did not take is deleted again (keys do not pile up on the account)."""
    text, expires = service_accounts.add_cluster_key(ctx, key.user_id)
    annotations.update(_expiry_annotation(expires))
    annotations[CLOUD_CONTROLLER_REPLACED_ANNOTATION] = key.key_id
    annotations[CLOUD_CONTROLLER_RENEWED_ANNOTATION] = iso_utc(now)
    try:
        ctx.clusterapi.write_secret(
            namespace_of(vdc),
            entry.name,
            {**entry.data, CLOUD_CONTROLLER_KEY: text.encode()},
            entry.labels,
            annotations,
            resource_version=entry.resource_version,
        )
    except FlexPlaneError as exc:
        new_id = _key_file(text.encode()).key_id
        try:
            ctx.require_zitadel().remove_machine_key(key.user_id, new_id)
        except FlexPlaneError as left:
            logger.warning("cluster %s of VDC %s: new key %s left in Zitadel: %s", cluster, vdc, new_id, left)
            exc.message = f"{exc.message}; the new key {new_id} stays valid in Zitadel until it expires"
        raise
    logger.info(
        "cluster %s of VDC %s: cloud controller's key renewed, valid until %s",
        cluster,
        vdc,
        iso_utc(expires),
    )
    return expires


def _retire(
    ctx: Context, vdc: str, entry: SecretEntry, user_id: str, replaced: str, annotations: dict[str, str]
) -> None:
    """Delete the key a renewal replaced (one already gone is as good), then say so in the Secret."""
    try:
        ctx.require_zitadel().remove_machine_key(user_id, replaced)
    except ZitadelRefused as exc:
        if exc.status != "not_found":
            raise
    annotations.pop(CLOUD_CONTROLLER_REPLACED_ANNOTATION, None)
    annotations.pop(CLOUD_CONTROLLER_RENEWED_ANNOTATION, None)
    ctx.clusterapi.write_secret(
        namespace_of(vdc),
        entry.name,
        entry.data,
        entry.labels,
        annotations,
        resource_version=entry.resource_version,
    )


def _failed(cluster: str, exc: FlexPlaneError, what: str) -> str:
    return f"{what} for cluster {cluster}'s cloud controller: {exc.message}"


def _key_file(text: bytes) -> _KeyFile:
    """The ids and expiry (``expirationDate``, where the key file carries it) of a Zitadel key file."""
    try:
        data = json.loads(text)
        key_id, user_id = str(data["keyId"]), str(data["userId"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{CLOUD_CONTROLLER_KEY} is not a Zitadel key file (keyId, userId)") from exc
    return _KeyFile(key_id, user_id, parse_utc(data.get("expirationDate")))


def _expiry_annotation(expires: datetime.datetime | None) -> dict[str, str]:
    return {CLOUD_CONTROLLER_EXPIRES_ANNOTATION: iso_utc(expires)} if expires is not None else {}
