"""Every action of the Access pages, and the GraphQL mutation that does the same."""

from __future__ import annotations

MUTATIONS: dict[str, str] = {
    "access.grant": "grantVdcMembership",
    "access.revoke": "revokeVdcMembership",
    "access.roles": "setPlatformRoles",
    "access.allowance": "setOrganizationAllowance",
    "access.allowance-delete": "deleteOrganizationAllowance",
    "access.vdc-create": "createVdc",
    "access.vdc-update": "updateVdc",
    "access.vdc-delete": "deleteVdc",
}


def action(name: str) -> str:
    """A registered action's name: an unregistered one fails when the module naming it loads."""
    if name not in MUTATIONS:
        raise LookupError(f"portal action {name!r} is not in portal.access.actions.MUTATIONS")
    return name
