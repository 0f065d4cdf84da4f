"""What the network pages let a user do, and the GraphQL mutation behind each (the parity test reads
:data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

CREATE = "network.create"
DELETE = "network.delete"
ATTACH = "network.attach"
DETACH = "network.detach"

# Every portal action on networks and NICs -> the GraphQL mutation that does the same.
MUTATIONS: dict[str, str] = {
    CREATE: "createNetwork",
    DELETE: "deleteNetwork",
    ATTACH: "attachNetwork",
    DETACH: "detachNetwork",
}
