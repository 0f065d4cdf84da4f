"""A tenant cluster's cloud controller's identity: the service account of its VDC it acts as, and the
Secret of the VDC's namespace that hands its key to the control-plane provider (the names:
``kube_objects.cloud_controller_account`` and ``cloud_controller_secret``).

Made by the create, once the name is known free and the quota fits and before any object is written, where
the platform has an identity provider (Zitadel); without one there is no controller, and the kubelets run
without ``--cloud-provider=external`` (they would wait, tainted, for a controller that never comes).
A create that fails afterwards takes both back; the delete revokes the account and deletes the Secret.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from orchestrator.errors import Conflict, FlexPlaneError, Unavailable
from orchestrator.models.clusters import CLUSTER_NAME_LABEL, VDC_LABEL, namespace_of
from orchestrator.models.vdcs import Vdc
from orchestrator.services import service_accounts
from orchestrator.services.context import Context
from orchestrator.sources.kube_objects import (
    CLOUD_CONTROLLER_KEY,
    cloud_controller_account,
    cloud_controller_secret,
)
from orchestrator.sources.zitadel import WHERE as IDENTITY_PROVIDER

logger = logging.getLogger(__name__)


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
