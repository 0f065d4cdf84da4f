"""Authorization, in one place: who may see and do what, in which VDC."""

from __future__ import annotations

from orchestrator.errors import PermissionDenied
from orchestrator.services.context import Context


def require_self_service(ctx: Context) -> None:
    """The caller holds USER (self-service) or ADMIN."""
    if not (ctx.principal.is_user or ctx.principal.is_admin):
        raise PermissionDenied("this needs the USER or ADMIN role")


def require_admin(ctx: Context) -> None:
    if not ctx.principal.is_admin:
        raise PermissionDenied("this needs the ADMIN role")


def require_access_manager(ctx: Context) -> None:
    """The caller manages access: ADMIN everywhere, ORG_OWNER within the organizations they own."""
    if not (ctx.principal.is_admin or ctx.principal.is_org_owner):
        raise PermissionDenied("this needs the ADMIN or ORG_OWNER role")


def manages_organization(ctx: Context, organization: str) -> bool:
    """ADMIN manages every organization; an ORG_OWNER the ones they own (as their token says)."""
    owned = ctx.principal.owned_organizations
    return ctx.principal.is_admin or (bool(organization) and organization in owned)


def visible_vdcs(ctx: Context) -> frozenset[str] | None:
    """The VDCs the request may read: the one it names, else all the caller's (``None``: every VDC).

    Naming a VDC one is not a member of is refused outright: ADMIN may name any.
    """
    require_self_service(ctx)
    principal = ctx.principal
    if ctx.vdc is not None:
        if not principal.is_admin and ctx.vdc not in principal.vdcs:
            raise PermissionDenied(f"you are not a member of VDC {ctx.vdc!r}")
        return frozenset({ctx.vdc})
    if principal.is_admin:
        return None
    return principal.vdcs
