"""Edge gateways: a VDC's router to the outside in a zone, its public IPs, port forwards and firewall."""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.graphql.core import VDC_MEMBER, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.fields import attr
from orchestrator.models.gateways import FirewallRule as RuleModel
from orchestrator.models.gateways import PortForward as ForwardModel
from orchestrator.services import gateways
from orchestrator.services.context import Context
from orchestrator.services.gateways import EdgeGateway as EdgeGatewayView
from orchestrator.services.gateways import ForwardRequest, PublicAddress
from orchestrator.services.gateways.node import Live

EdgeGatewayErrorCode, EdgeGatewayError = error_types("EdgeGateway", "QUOTA_EXCEEDED")


class PortForward(graphene.ObjectType):
    """A port of a public IP forwarded to a VM's address and port."""

    public_ip = graphene.String(required=True)
    protocol = graphene.String(required=True, description="tcp or udp.")
    port = graphene.Int(required=True, description="The public port, 1 to 65535.")
    to_address = graphene.String(required=True, description="The VM's address on a network of the VDC.")
    to_port = graphene.Int(required=True)


class PublicIp(graphene.ObjectType):
    """A public address of the VDC's edge gateway in a zone, from the zone's public pool."""

    address = graphene.String(required=True)
    zone = graphene.String(required=True)
    vdc = graphene.String(required=True)
    nat_to = graphene.String(description="The VM address it is 1:1 NAT'd to; null: none.")
    port_forwards = graphene.List(graphene.NonNull(PortForward), required=True)

    resolve_port_forwards = attr("forwards")


class GatewayFirewallRule(graphene.ObjectType):
    """A rule of the gateway's firewall; the first a new connection matches decides (none: inbound is
    denied, egress allowed). Replies of allowed connections always pass."""

    position = graphene.Int(required=True, description="Its place in the order, 0 first.")
    direction = graphene.String(required=True, description="in (to the VDC's networks) or out.")
    action = graphene.String(required=True, description="allow or deny.")
    protocol = graphene.String(required=True, description="tcp, udp, icmp or any.")
    source = graphene.String(required=True, description="A CIDR.")
    destination = graphene.String(required=True, description="A CIDR (public or VM addresses).")
    port_from = graphene.Int(description="The first destination port (tcp and udp); null: every port.")
    port_to = graphene.Int()
    description = graphene.String(required=True)


class GatewayCounter(graphene.ObjectType):
    name = graphene.String(required=True, description="e.g. egress_packets, ingress_bytes, dropped_packets.")
    value = graphene.BigInt(required=True)


class GatewayStatus(graphene.ObjectType):
    """What the gateway's host says of it now (asked when read)."""

    answered = graphene.Boolean(required=True, description="Whether its host answered.")
    healthy = graphene.Boolean(description="Its namespace, legs and rules are all in place; null: unknown.")
    generation = graphene.Int(description="The generation of the desired state its host runs.")
    detail = graphene.String(required=True, description="What is wrong, or why it is unknown.")
    counters = graphene.List(graphene.NonNull(GatewayCounter), required=True)


def _rule(position: int, rule: RuleModel) -> GatewayFirewallRule:
    return GatewayFirewallRule(
        position=position,
        direction=rule.direction,
        action=rule.action,
        protocol=rule.protocol,
        source=rule.source,
        destination=rule.destination,
        port_from=rule.ports[0] if rule.ports else None,
        port_to=rule.ports[1] if rule.ports else None,
        description=rule.description,
    )


class EdgeGateway(graphene.ObjectType):
    """A VDC's edge gateway in one zone: its desired state (kept in the management cluster) and where it
    runs. Placed on a host the zone allows for gateways; moved when that host is drained, cordoned or
    gone."""

    id = graphene.ID(required=True, description="<vdc>.<zone>.")
    vdc = graphene.String(required=True)
    zone = graphene.String(required=True)
    node = graphene.String(description="The host it runs on (null: not placed yet).")
    generation = graphene.Int(required=True, description="Bumped on every change of its desired state.")
    applied_generation = graphene.Int(required=True, description="The generation its host confirmed.")
    applied = graphene.Boolean(required=True, description="Its host confirmed the current generation.")
    uplink_address = graphene.String(required=True, description="Its external address (egress SNAT).")
    networks = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="The ids of the networks it routes."
    )
    public_ips = graphene.List(graphene.NonNull(PublicIp), required=True)
    port_forwards = graphene.List(graphene.NonNull(PortForward), required=True)
    firewall_rules = graphene.List(graphene.NonNull(GatewayFirewallRule), required=True)
    status = graphene.Field(
        GatewayStatus, required=True, description="Health and counters, read live from its host."
    )

    resolve_id = attr("gateway.id")
    resolve_vdc = attr("gateway.vdc")
    resolve_zone = attr("gateway.zone")
    resolve_node = attr("gateway.node")
    resolve_generation = attr("gateway.generation")
    resolve_applied_generation = attr("gateway.applied_generation")
    resolve_applied = attr("gateway.applied")
    resolve_uplink_address = attr("gateway.uplink_address")

    @staticmethod
    def resolve_networks(root: EdgeGatewayView, info: graphene.ResolveInfo) -> list[str]:
        return [leg.network for leg in root.gateway.legs]

    @staticmethod
    def resolve_public_ips(root: EdgeGatewayView, info: graphene.ResolveInfo) -> list[PublicAddress]:
        return [PublicAddress(root.gateway, ip) for ip in root.gateway.public_ips]

    @staticmethod
    def resolve_port_forwards(root: EdgeGatewayView, info: graphene.ResolveInfo) -> list[ForwardModel]:
        return list(root.gateway.forwards)

    @staticmethod
    def resolve_firewall_rules(
        root: EdgeGatewayView, info: graphene.ResolveInfo
    ) -> list[GatewayFirewallRule]:
        return [_rule(i, r) for i, r in enumerate(root.gateway.rules)]

    @staticmethod
    def resolve_status(root: EdgeGatewayView, info: graphene.ResolveInfo) -> GatewayStatus:
        found: Live = gateways.live(flexplane(info), root.gateway)
        state = found.state
        if state is None:
            return GatewayStatus(
                answered=found.answered,
                healthy=None,
                generation=None,
                detail=found.problem or "",
                counters=[],
            )
        return GatewayStatus(
            answered=True,
            healthy=state.healthy,
            generation=state.generation,
            detail=state.detail,
            counters=[GatewayCounter(name=k, value=v) for k, v in sorted(state.counters.items())],
        )


class Query(graphene.ObjectType):
    edge_gateways = graphene.List(
        graphene.NonNull(EdgeGateway),
        required=True,
        description="The edge gateways of the VDC the FlexPlane-VDC-ID header names, else of all the "
        "caller's VDCs (ADMIN: all). Needs USER or ADMIN.",
    )
    edge_gateway = graphene.Field(
        EdgeGateway,
        zone=graphene.String(description="May be left out when the VDC allows one zone."),
        description="The edge gateway of the VDC the FlexPlane-VDC-ID header names in a zone (NOT_FOUND: "
        "none). " + VDC_MEMBER.doc,
    )
    public_ips = graphene.List(
        graphene.NonNull(PublicIp),
        required=True,
        description="The public IPs of the VDC the FlexPlane-VDC-ID header names, else of all the caller's "
        "VDCs (ADMIN: all).",
    )

    @staticmethod
    @domain_errors
    def resolve_edge_gateways(root: Any, info: graphene.ResolveInfo) -> list[EdgeGatewayView]:
        return gateways.list_edge_gateways(flexplane(info))

    @staticmethod
    @domain_errors
    def resolve_edge_gateway(
        root: Any, info: graphene.ResolveInfo, zone: str | None = None
    ) -> EdgeGatewayView:
        return gateways.edge_gateway(flexplane(info), zone)

    @staticmethod
    @domain_errors
    def resolve_public_ips(root: Any, info: graphene.ResolveInfo) -> list[PublicAddress]:
        return gateways.list_public_ips(flexplane(info))


_ERRORS = (
    "Errors: INVALID (naming the field), UNAVAILABLE (naming the host that did not answer: the desired "
    "state is recorded and sent again with the next change or reconcile), CONFLICT, UPSTREAM_FAILURE."
)


class GatewayMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(VDC_MEMBER, EdgeGatewayError, "edge_gateway")
    edge_gateway = graphene.Field(EdgeGateway)


class CreateEdgeGateway(GatewayMutation):
    class Meta:
        service = gateways.create_edge_gateway
        description = (
            "Make the VDC's edge gateway in a zone (its external address from the zone's public pool) and "
            "run it on a host of the zone; one there already is answered as it is. " + _ERRORS
        )

    class Arguments:
        zone = graphene.String(description="May be left out when the VDC allows one zone.")


class DeleteEdgeGateway(GatewayMutation):
    class Meta:
        service = gateways.delete_edge_gateway
        description = "Remove the VDC's edge gateway in a zone; refused (CONFLICT) while it holds public IPs."

    class Arguments:
        zone = graphene.String()


class PublicIpMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(VDC_MEMBER, EdgeGatewayError, "public_ip")
    public_ip = graphene.Field(PublicIp)


class AllocatePublicIp(PublicIpMutation):
    class Meta:
        service = gateways.allocate_public_ip
        description = (
            "Hand the VDC a public IP from the zone's pool (its edge gateway there made if it has none); "
            "QUOTA_EXCEEDED past its publicIps quota, CONFLICT when the pool is used up. " + _ERRORS
        )

    class Arguments:
        zone = graphene.String(description="May be left out when the VDC allows one zone.")


class ReleasePublicIp(PublicIpMutation):
    class Meta:
        service = gateways.release_public_ip
        description = "Give a public IP back to the pool, with its 1:1 NAT and port forwards. " + _ERRORS

    class Arguments:
        address = graphene.String(required=True)


class AttachPublicIp(PublicIpMutation):
    class Meta:
        service = gateways.attach_public_ip
        description = "1:1 NAT a public IP to a VM's address on a network of the VDC in its zone. " + _ERRORS

    class Arguments:
        address = graphene.String(required=True)
        to_address = graphene.String(required=True)


class DetachPublicIp(PublicIpMutation):
    class Meta:
        service = gateways.detach_public_ip
        description = "Take a public IP's 1:1 NAT away; the VDC keeps the IP. " + _ERRORS

    class Arguments:
        address = graphene.String(required=True)


class PortForwardInput(graphene.InputObjectType):
    public_ip = graphene.String(required=True, description="A public IP of the VDC.")
    protocol = graphene.String(required=True, description="tcp or udp.")
    port = graphene.Int(required=True, description="1 to 65535, not forwarded yet on that IP and protocol.")
    to_address = graphene.String(required=True, description="A VM's address on a network of the VDC.")
    to_port = graphene.Int(description="Default: the same port.")


def _forward(ctx: Context, input: dict[str, Any]) -> PublicAddress:
    return gateways.add_port_forward(
        ctx,
        ForwardRequest(
            public_ip=input["public_ip"],
            protocol=input["protocol"],
            port=input["port"],
            to_address=input["to_address"],
            to_port=input.get("to_port"),
        ),
    )


class AddPortForward(PublicIpMutation):
    class Meta:
        service = _forward
        description = "Forward a port of a public IP to a VM's address and port. " + _ERRORS

    class Arguments:
        input = PortForwardInput(required=True)


class RemovePortForward(PublicIpMutation):
    class Meta:
        service = gateways.remove_port_forward
        description = "Stop forwarding a port of a public IP. " + _ERRORS

    class Arguments:
        public_ip = graphene.String(required=True)
        protocol = graphene.String(required=True)
        port = graphene.Int(required=True)


class GatewayFirewallRuleInput(graphene.InputObjectType):
    direction = graphene.String(required=True, description="in (to the VDC's networks) or out.")
    action = graphene.String(required=True, description="allow or deny.")
    protocol = graphene.String(description="tcp, udp, icmp or any (default).")
    source = graphene.String(description="A CIDR; default anywhere.")
    destination = graphene.String(description="A CIDR (public or VM addresses); default anywhere.")
    port_from = graphene.Int(description="tcp and udp: the first destination port.")
    port_to = graphene.Int(description="tcp and udp: the last destination port (default: portFrom).")
    description = graphene.String()
    position = graphene.Int(description="Where in the order, 0 first; default last.")


class AddGatewayFirewallRule(GatewayMutation):
    class Meta:
        service = gateways.add_firewall_rule
        description = "Add a rule to the firewall of the VDC's edge gateway in a zone. " + _ERRORS

    class Arguments:
        zone = graphene.String(description="May be left out when the VDC allows one zone.")
        input = GatewayFirewallRuleInput(required=True)


class RemoveGatewayFirewallRule(GatewayMutation):
    class Meta:
        service = gateways.remove_firewall_rule
        description = "Remove the rule at a position of the firewall of the VDC's edge gateway. " + _ERRORS

    class Arguments:
        zone = graphene.String()
        position = graphene.Int(required=True)


class Mutation(graphene.ObjectType):
    create_edge_gateway = CreateEdgeGateway.Field()
    delete_edge_gateway = DeleteEdgeGateway.Field()
    allocate_public_ip = AllocatePublicIp.Field()
    release_public_ip = ReleasePublicIp.Field()
    attach_public_ip = AttachPublicIp.Field()
    detach_public_ip = DetachPublicIp.Field()
    add_port_forward = AddPortForward.Field()
    remove_port_forward = RemovePortForward.Field()
    add_gateway_firewall_rule = AddGatewayFirewallRule.Field()
    remove_gateway_firewall_rule = RemoveGatewayFirewallRule.Field()
