"""What the security-group pages let a user do, and the GraphQL mutation behind each (the parity test
reads :data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

CREATE = "security-group.create"
UPDATE = "security-group.update"
DELETE = "security-group.delete"
ASSIGN = "security-group.assign"

# Every portal action on security groups -> the GraphQL mutation that does the same.
MUTATIONS: dict[str, str] = {
    CREATE: "createSecurityGroup",
    UPDATE: "updateSecurityGroup",
    DELETE: "deleteSecurityGroup",
    ASSIGN: "assignSecurityGroups",
}
