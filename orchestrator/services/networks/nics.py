"""VMs' NICs on a VDC's networks: what they are, which addresses are taken, and the next free one.

No store holds the addresses: each NIC's address is in its VM's config (``ipconfigN``, which
cloud-init applies), and the same config write tags the VM with it (``fp-ip-<vnet>-<address>``). What
a network has handed out is read from those tags in the zone's ``/cluster/resources`` (one call, and
VMs whose host is down count too), under the VDC's lock: the lock every create and attach of the VDC
takes, so two never see the same address free. Only a VM of the same VDC can be on the VDC's VNet.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.errors import ValidationFailed
from orchestrator.models.networks import Network, Nic, addresses_in, free_addresses, reserved
from orchestrator.services import inventory
from orchestrator.services.context import Context
from orchestrator.services.networks.inputs import validate_address
from orchestrator.sources.proxmox import ClusterResources, IpConfig, NetDevice, QemuConfig


@dataclass(frozen=True)
class NicRequest:
    """A NIC a create or attach asks for: a network (``<zone>/<name>``, or a name in the VM's zone) and
    optionally its address."""

    network: str
    address: str | None = None


def nic_on(network: Network, address: ipaddress.IPv4Address) -> tuple[NetDevice, IpConfig]:
    """The ``netN`` and ``ipconfigN`` of a NIC on ``network`` with ``address``."""
    device = NetDevice("virtio", None, (("bridge", network.vnet), ("firewall", "1")))
    return device, IpConfig(ip=f"{address}/{network.prefix}", gw=network.gateway)


def nics(config: QemuConfig, networks: Iterable[Network]) -> list[Nic]:
    """A VM's NICs from its config, each with the network its VNet is (of ``networks``)."""
    by_vnet = {n.vnet: n for n in networks}
    out: list[Nic] = []
    for index, device in config.nets:
        ip = config.ipconfig(index)
        address, prefix = None, None
        if ip is not None and ip.ip and "/" in ip.ip:
            address, _sep, bits = ip.ip.partition("/")
            prefix = int(bits) if bits.isdigit() else None
        network = by_vnet.get(device.bridge or "")
        out.append(
            Nic(
                index,
                device.macaddr,
                device.bridge,
                network,
                address,
                prefix,
                ip.gw if ip is not None else None,
            )
        )
    return out


def used_addresses(resources: ClusterResources, vnet: str) -> set[ipaddress.IPv4Address]:
    """The addresses VMs of the zone hold on VNet ``vnet`` (their address tags)."""
    return {address for guest in resources.vms for on, address in addresses_in(guest.tag_list) if on == vnet}


def resolve(request: NicRequest, networks: Sequence[Network], zone: str | None, field: str) -> Network:
    """The network a NIC request names: ``<zone>/<name>``, or a name in ``zone``; another VDC's network
    is as unknown as a missing one."""
    for network in networks:
        if network.named(request.network, zone):
            return network
    raise ValidationFailed(field, f"there is no network {request.network!r} in this VDC")


def zone_of(requests: Sequence[NicRequest], field: str) -> str | None:
    """The zone the networks named as ``<zone>/<name>`` are in (None: none named a zone); all in one."""
    zones = {r.network.partition("/")[0] for r in requests if "/" in r.network}
    if len(zones) > 1:
        raise ValidationFailed(
            field, f"a VM's networks are all in one zone, not in {', '.join(sorted(zones))}"
        )
    return next(iter(zones), None)


def allocate(
    requests: Sequence[tuple[Network, str | None]],
    resources: ClusterResources,
    field: str,
    *,
    address_field: str | None = None,
) -> list[ipaddress.IPv4Address]:
    """An address per requested NIC: the one asked for (checked: in range, not reserved, not taken), else
    the lowest free one of its network.

    An error names the caller's own input field: ``<field>[i].ip_address`` for a list of NIC inputs (such
    as createVirtualMachine's ``networks``), or ``address_field`` where one NIC's address is an argument of
    its own (attachNetwork's ``ip_address``)."""
    taken: dict[str, set[ipaddress.IPv4Address]] = {}
    out: list[ipaddress.IPv4Address] = []
    for position, (network, asked) in enumerate(requests):
        used = taken.setdefault(network.vnet, used_addresses(resources, network.vnet))
        where = address_field or f"{field}[{position}].ip_address"
        gateway = ipaddress.IPv4Address(network.gateway)
        if asked is not None:
            address = validate_address(asked, network.subnet, where)
            if address in reserved(network.subnet, gateway):
                raise ValidationFailed(
                    where, f"address {address} is reserved in {network.cidr} (its gateway or first hosts)"
                )
            if address in used:
                raise ValidationFailed(where, f"address {address} is in use on network {network.id}")
        else:
            free = next(free_addresses(network.subnet, gateway, used), None)
            if free is None:
                raise ValidationFailed(
                    where, f"network {network.id} ({network.cidr}) has no free address left"
                )
            address = free
        used.add(address)
        out.append(address)
    return out


def vms_on(ctx: Context, network: Network) -> list[str]:
    """The names of the VMs with a NIC on ``network`` (their address tags, read now)."""
    resources = inventory.zone_api(ctx, network.zone).resources("vm")
    return [
        guest.name or str(guest.vmid)
        for guest in resources.vms
        if any(on == network.vnet for on, _address in addresses_in(guest.tag_list))
    ]


def nameservers(networks: Iterable[Network]) -> tuple[str, ...]:
    """The resolvers of a VM on ``networks``: theirs, in NIC order, at most three (cloud-init's limit)."""
    found: list[str] = []
    for network in networks:
        for server in network.dns:
            if server not in found:
                found.append(server)
    return tuple(found[:3])
