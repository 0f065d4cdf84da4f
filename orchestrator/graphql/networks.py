"""Networks: a VDC's Proxmox SDN VNets with their subnet, and VMs' NICs on them."""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.graphql.core import VDC_MEMBER, VM_MEMBER, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.fields import attr
from orchestrator.graphql.partial import report_partial
from orchestrator.graphql.vms import VirtualMachine
from orchestrator.models.networks import Network as NetworkModel
from orchestrator.services import networks
from orchestrator.services.context import Context
from orchestrator.services.networks import CreateNetwork as CreateNetworkSpec
from orchestrator.services.networks.attach import NicChange, attach_network, detach_network

NetworkErrorCode, NetworkError = error_types("Network", "QUOTA_EXCEEDED")


class Network(graphene.ObjectType):
    """A network of a VDC in one zone: a Proxmox SDN VNet with one IPv4 subnet."""

    id = graphene.ID(
        required=True,
        description="<zone>/<vnet>, unique across VDCs. Where a network is asked for, <zone>/<name> and (in "
        "the VM's zone) its name do too.",
    )
    name = graphene.String(required=True)
    zone = graphene.String(required=True)
    vdc = graphene.String(required=True)
    cidr = graphene.String(required=True, description="Its IPv4 subnet, e.g. 10.0.0.0/24.")
    gateway = graphene.String(required=True)
    dns = graphene.List(graphene.NonNull(graphene.String), required=True, description="Its VMs' resolvers.")
    vnet = graphene.String(required=True, description="The Proxmox SDN VNet it is.")
    is_default = graphene.Boolean(required=True, description="The VDC's default network of its zone.")
    pending = graphene.Boolean(
        required=True, description="Proxmox has not applied it yet (a create that did not finish)."
    )

    @staticmethod
    def resolve_dns(network: NetworkModel, info: graphene.ResolveInfo) -> list[str]:
        return list(network.dns)


class Nic(graphene.ObjectType):
    """A VM's network card."""

    key = graphene.String(required=True, description="Proxmox's key of it: net0, net1, ...")
    mac = graphene.String(description="Its MAC address (Proxmox chooses it).")
    network = graphene.Field(Network, description="The network it is on; null for a bridge of no network.")
    ip_address = graphene.String(description="The address cloud-init gives it.")
    prefix = graphene.Int(description="The prefix length of its network.")
    gateway = graphene.String()

    resolve_ip_address = attr("address")


class Query(graphene.ObjectType):
    networks = graphene.List(
        graphene.NonNull(Network),
        required=True,
        description="The networks of the VDC the FlexPlane-VDC-ID header names, else of all the caller's "
        "VDCs (ADMIN: all): one SDN read per zone. A zone that does not answer is left out, with an "
        "UNAVAILABLE error naming it.",
    )
    network = graphene.Field(Network, id=graphene.ID(required=True), description="One network by id.")

    @staticmethod
    @domain_errors
    def resolve_networks(root: Any, info: graphene.ResolveInfo) -> list[NetworkModel]:
        ctx = flexplane(info)
        return report_partial(info, networks.list_networks(ctx))

    @staticmethod
    @domain_errors
    def resolve_network(root: Any, info: graphene.ResolveInfo, id: str) -> NetworkModel:
        return networks.get_network(flexplane(info), id)


class CreateNetworkInput(graphene.InputObjectType):
    name = graphene.String(required=True, description="A DNS label, unique in the VDC and zone.")
    zone = graphene.String(description="A zone the VDC allows; may be left out when it allows only one.")
    cidr = graphene.String(
        required=True, description="An IPv4 subnet, /16 to /29, of RFC 1918 or a range the zone allows."
    )
    gateway = graphene.String(description="Default: the subnet's first usable address.")
    dns = graphene.List(
        graphene.NonNull(graphene.String), description="Up to 3 resolvers; default: the zone's."
    )


def _create(ctx: Context, input: dict[str, Any]) -> NetworkModel:
    dns = input.get("dns")
    return networks.create_network(
        ctx,
        CreateNetworkSpec(
            name=input["name"],
            cidr=input["cidr"],
            zone=input.get("zone"),
            gateway=input.get("gateway"),
            dns=tuple(dns) if dns is not None else None,
        ),
    )


class NetworkMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(VDC_MEMBER, NetworkError, "network")
    network = graphene.Field(Network)


class CreateNetwork(NetworkMutation):
    class Meta:
        service = _create
        description = (
            "Create a network in the VDC: a Proxmox SDN VNet with one subnet, applied before the answer. "
            "Repeating a create with the same name, zone and addresses answers the network it made. Errors: "
            "INVALID (naming the field), QUOTA_EXCEEDED (the VDC's networks), CONFLICT (no network id left "
            "in the zone), UNAVAILABLE, UPSTREAM_FAILURE."
        )

    class Arguments:
        input = CreateNetworkInput(required=True)


class DeleteNetwork(NetworkMutation):
    class Meta:
        service = networks.delete_network
        description = (
            "Delete a network of the VDC. Refused (CONFLICT) while VMs have a NIC on it, naming them, and "
            "for the VDC's default networks."
        )

    class Arguments:
        id = graphene.ID(required=True)

    network = graphene.Field(Network, description="The network as it was.")


class NicMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(VM_MEMBER, NetworkError)

    virtual_machine = graphene.Field(VirtualMachine)
    nic = graphene.Field(Nic)
    message = graphene.String(description="What the guest must do for the change to take effect.")

    @classmethod
    def answer(cls, result: NicChange) -> dict[str, Any]:
        return {"virtual_machine": result.vm, "nic": result.nic, "message": result.note}


class AttachNetwork(NicMutation):
    class Meta:
        service = attach_network
        description = (
            "Give a VM a NIC on a network of its VDC in its zone, with the address named or the next free "
            "one. Proxmox adds the card at once; the guest takes the address at its next boot (cloud-init), "
            "as the message says."
        )

    class Arguments:
        vm = graphene.ID(required=True)
        network = graphene.String(
            required=True, description="The network's id, or its name in the VM's zone."
        )
        ip_address = graphene.String()


class DetachNetwork(NicMutation):
    class Meta:
        service = detach_network
        description = "Remove a VM's NIC on a network."

    class Arguments:
        vm = graphene.ID(required=True)
        network = graphene.String(
            required=True, description="The network's id, or its name in the VM's zone."
        )


class Mutation(graphene.ObjectType):
    create_network = CreateNetwork.Field()
    delete_network = DeleteNetwork.Field()
    attach_network = AttachNetwork.Field()
    detach_network = DetachNetwork.Field()
