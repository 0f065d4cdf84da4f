"""What the service-account pages let a user do, and the GraphQL mutation behind each (the parity test
reads :data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

from portal.actions import Action, registry

# Every portal action on service accounts, with the GraphQL mutation that does the same.
CREATE = Action("service-account.create", "createServiceAccount")
REVOKE = Action("service-account.revoke", "revokeServiceAccount")

MUTATIONS: dict[str, str] = registry(CREATE, REVOKE)
