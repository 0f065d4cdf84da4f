"""The project role ``vdc:<id>`` of each VDC: added when the VDC is created, removed when it is deleted.

A VDC whose role could not be added is not made: the role comes first, before anything in Proxmox or
the management cluster, and is removed again when the rest fails. A role left from an earlier VDC of
the same id (its removal failed) is cleared before the new VDC gets it, so that nobody inherits a
membership of a VDC that was deleted. Without Zitadel configured (a test process, a deployment that
manages roles by hand) roles are not kept, and the log says so.
"""

from __future__ import annotations

import logging

from orchestrator.auth import VDC_ROLE_PREFIX
from orchestrator.errors import FlexPlaneError
from orchestrator.services.context import Context

logger = logging.getLogger(__name__)

ROLE_GROUP = "VDC members"


def role_of(vdc_id: str) -> str:
    return f"{VDC_ROLE_PREFIX}{vdc_id}"


def add_vdc_role(ctx: Context, vdc_id: str, name: str, grant: tuple[str, list[str]] | None = None) -> bool:
    """Give the project the VDC's role, with no member yet; False when Zitadel is not configured.

    ``grant``: for a VDC of an organization, the organization and the roles the project is then granted
    to it with (the VDC's among them), so that its users can be made members within it.
    Raises ``Unavailable`` (naming Zitadel) or ``ZitadelRefused``: the VDC must then not be made.
    """
    source = ctx.zitadel
    if source is None:
        logger.warning("access: Zitadel is not configured: VDC %s gets no role %s", vdc_id, role_of(vdc_id))
        return False
    source.remove_project_role(role_of(vdc_id))  # a stale role of a deleted namesake: its members go too
    source.add_project_role(role_of(vdc_id), f"Member of VDC {name}"[:200], ROLE_GROUP)
    if grant is not None:
        try:
            source.grant_project(*grant)
        except FlexPlaneError:
            remove_vdc_role(ctx, vdc_id)
            raise
    return True


def check_reachable(ctx: Context, vdc_id: str) -> None:
    """``Unavailable`` naming Zitadel unless it answers now: before a VDC is taken apart, so that its role
    does not outlive it for want of Zitadel (one read: the role's memberships)."""
    source = ctx.zitadel
    if source is not None:
        source.authorizations(role_key=role_of(vdc_id))


def remove_vdc_role(ctx: Context, vdc_id: str) -> None:
    """Remove the VDC's role and every membership of it. Best effort: a failure is logged (the next VDC
    of that id clears the role before it is given out again)."""
    source = ctx.zitadel
    if source is None:
        return
    try:
        source.remove_project_role(role_of(vdc_id))
    except FlexPlaneError as exc:
        logger.warning(
            "access: the role %s of deleted VDC %s stays in Zitadel: %s", role_of(vdc_id), vdc_id, exc
        )
