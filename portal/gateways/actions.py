"""What the gateway pages let a user do, and the GraphQL mutation behind each (the parity test reads
:data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

ALLOCATE = "gateway.allocate"
RELEASE = "gateway.release"
ATTACH = "gateway.attach"
DETACH = "gateway.detach"
FORWARD = "gateway.forward"
UNFORWARD = "gateway.unforward"
ADD_RULE = "gateway.rule.add"
REMOVE_RULE = "gateway.rule.remove"

# Every portal action on edge gateways -> the GraphQL mutation that does the same.
MUTATIONS: dict[str, str] = {
    ALLOCATE: "allocatePublicIp",
    RELEASE: "releasePublicIp",
    ATTACH: "attachPublicIp",
    DETACH: "detachPublicIp",
    FORWARD: "addPortForward",
    UNFORWARD: "removePortForward",
    ADD_RULE: "addGatewayFirewallRule",
    REMOVE_RULE: "removeGatewayFirewallRule",
}
