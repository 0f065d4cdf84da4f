"""What the network pages let a user do, and the GraphQL mutation behind each (the parity test reads
:data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

from portal.actions import Action, registry

# Every portal action on networks and NICs, with the GraphQL mutation that does the same.
CREATE = Action("network.create", "createNetwork")
DELETE = Action("network.delete", "deleteNetwork")
ATTACH = Action("network.attach", "attachNetwork")
DETACH = Action("network.detach", "detachNetwork")

MUTATIONS: dict[str, str] = registry(CREATE, DELETE, ATTACH, DETACH)
