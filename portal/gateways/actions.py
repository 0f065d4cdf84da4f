"""What the gateway pages let a user do, and the GraphQL mutation behind each (the parity test reads
:data:`MUTATIONS`): each view calls the same service function as that mutation's resolver."""

from __future__ import annotations

from portal.actions import Action, registry

# Every portal action on edge gateways, with the GraphQL mutation that does the same.
ALLOCATE = Action("gateway.allocate", "allocatePublicIp")
RELEASE = Action("gateway.release", "releasePublicIp")
ATTACH = Action("gateway.attach", "attachPublicIp")
DETACH = Action("gateway.detach", "detachPublicIp")
FORWARD = Action("gateway.forward", "addPortForward")
UNFORWARD = Action("gateway.unforward", "removePortForward")
ADD_RULE = Action("gateway.rule.add", "addGatewayFirewallRule")
REMOVE_RULE = Action("gateway.rule.remove", "removeGatewayFirewallRule")

MUTATIONS: dict[str, str] = registry(
    ALLOCATE, RELEASE, ATTACH, DETACH, FORWARD, UNFORWARD, ADD_RULE, REMOVE_RULE
)
