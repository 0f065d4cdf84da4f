"""Every action of the Access pages, and the GraphQL mutation that does the same."""

from __future__ import annotations

from portal.actions import Action, checked

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


action = checked(MUTATIONS, __name__)


def performed(name: str) -> Action:
    """A registered action with its mutation, as a confirmation page (``portal.perform.confirmation``)
    performs it: its audit record names the mutation."""
    return Action(action(name), MUTATIONS[name])
