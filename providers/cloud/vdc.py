"""The cluster's VDC as the cloud controller reaches it: flex.plane's API through ``apiclient``, as a
service account that is USER of that VDC only (``apiclient/operations/cloud_controller.graphql``).

The controller never holds Proxmox credentials nor talks to a host: what it may do is what the VDC's
members may do through the API, within the VDC's quota. Failures are ``apiclient``'s typed errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from apiclient import FlexPlane, ProtocolError
from apiclient.generated.cloud_node_virtual_machines import (
    CloudNodeVirtualMachinesVirtualMachines,
    CloudNodeVirtualMachinesVirtualMachinesEdgesNode,
)
from apiclient.generated.fragments import EdgeGatewayFields
from apiclient.generated.input_types import GatewayFirewallRuleInput, PortForwardInput
from providers.cloud.model import Forward, Machine, Rule

PAGE_SIZE = 100

Payload = TypeVar("Payload")


def answered(payload: Payload | None) -> Payload:
    """A mutation's payload; the API answers one for every mutation it ran (null only beside errors,
    which the client raised already)."""
    if payload is None:
        raise ProtocolError("a mutation answered neither its payload nor errors")
    return payload


class Vdc:
    """The VDC's VMs and edge gateways, and the changes the controller makes to them."""

    def __init__(self, api: FlexPlane) -> None:
        self.api = api

    def machines(self) -> dict[str, Machine]:
        """Every VM of the VDC by name, from its listing (no VM's config is read)."""

        def page(after: str | None) -> CloudNodeVirtualMachinesVirtualMachines:
            return self.api.cloud_node_virtual_machines(first=PAGE_SIZE, after=after).virtual_machines

        listed: Iterator[CloudNodeVirtualMachinesVirtualMachinesEdgesNode] = self.api.paged(page)
        return {
            vm.name: Machine(vm.id, vm.name, vm.zone, vm.host, vm.compute_profile)
            for vm in listed
            if vm.status != "deleted"
        }

    def machine(self, ident: str) -> Machine | None:
        """One VM with its SMBIOS uuid and NIC addresses (one read of its config)."""
        vm = self.api.cloud_node_virtual_machine(ident).virtual_machine
        if vm is None:
            return None
        addresses = tuple(nic.ip_address for nic in vm.nics or [] if nic.ip_address)
        return Machine(vm.id, vm.name, vm.zone, vm.host, vm.compute_profile, vm.smbios_uuid, addresses)

    def gateways(self) -> dict[str, EdgeGatewayFields]:
        """The VDC's edge gateways by zone: public IPs with their forwards, firewall rules."""
        return {gateway.zone: gateway for gateway in self.api.edge_gateways().edge_gateways}

    def allocate(self, zone: str) -> str:
        allocated = answered(self.api.allocate_public_ip(zone=zone).allocate_public_ip).public_ip
        if allocated is None:
            raise ProtocolError("allocatePublicIp answered neither an address nor errors")
        return allocated.address

    def release(self, address: str) -> None:
        self.api.release_public_ip(address)

    def forward(self, address: str, forward: Forward) -> None:
        wanted = PortForwardInput.model_validate(
            {
                "public_ip": address,
                "protocol": forward.protocol,
                "port": forward.port,
                "to_address": forward.to_address,
                "to_port": forward.to_port,
            }
        )
        self.api.add_port_forward(wanted)

    def unforward(self, address: str, protocol: str, port: int) -> None:
        self.api.remove_port_forward(address, protocol, port)

    def add_rule(self, zone: str, rule: Rule, description: str) -> EdgeGatewayFields | None:
        """Append an inbound rule; answers the gateway as it is now (its rules' positions)."""
        wanted = GatewayFirewallRuleInput.model_validate(
            {
                "direction": "in",
                "action": rule.action,
                "protocol": rule.protocol,
                "source": rule.source,
                "destination": rule.destination,
                "port_from": rule.port_from,
                "port_to": rule.port_to,
                "description": description,
            }
        )
        return answered(
            self.api.add_gateway_firewall_rule(wanted, zone=zone).add_gateway_firewall_rule
        ).edge_gateway

    def remove_rule(self, zone: str, position: int) -> EdgeGatewayFields | None:
        removed = self.api.remove_gateway_firewall_rule(position, zone=zone).remove_gateway_firewall_rule
        return answered(removed).edge_gateway
