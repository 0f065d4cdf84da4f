"""What the security-group pages let a user do, and the GraphQL mutation behind each (the parity test
reads :data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

from portal.actions import Action, registry

# Every portal action on security groups, with the GraphQL mutation that does the same.
CREATE = Action("security-group.create", "createSecurityGroup")
UPDATE = Action("security-group.update", "updateSecurityGroup")
DELETE = Action("security-group.delete", "deleteSecurityGroup")
ASSIGN = Action("security-group.assign", "assignSecurityGroups")

MUTATIONS: dict[str, str] = registry(CREATE, UPDATE, DELETE, ASSIGN)
