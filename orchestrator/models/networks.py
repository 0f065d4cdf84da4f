"""A VDC's networks: each a Proxmox SDN VNet with one IPv4 subnet, in one zone.

No store of flex.plane's own says which VNet is whose: the VNet's alias, which Proxmox keeps, carries
the VDC, the network's name and its addressing (``fp vdc=<vdc> net=<name> cidr=<cidr> gw=<gw>
dns=<a+b>``), so one read of a zone's VNets lists every network of it. The subnet Proxmox holds is the
truth for Proxmox's own use; the alias mirrors it for the listing. VNet ids are at most 8 characters
(Proxmox's limit): ``fp`` and six random letters and digits, unique in the zone's cluster.

Each VDC's VNets sit in an SDN zone of its own (``fpz`` and five random characters): Proxmox names a
subnet by its SDN zone and its CIDR, so two VDCs' networks can have the same addresses only in two
SDN zones. Their VXLAN ids or VLAN tags are unique in the whole cluster.

A NIC is a VM's ``netN`` on a network's VNet, with the address cloud-init gives it in ``ipconfigN``;
the same config write tags the VM ``fp-ip-<vnet>-<address>``, so the addresses a network has handed
out are read from one ``/cluster/resources`` of the zone (tags included, also of VMs whose host is
down), never from every VM's config.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from orchestrator.sources.proxmox.sdn import VNet

DEFAULT_NETWORK = "default"
# The default network's addresses in every VDC and zone: VDCs never share a VNet, so they may overlap.
DEFAULT_CIDR = "10.0.0.0/24"
PREFIX_SHORTEST, PREFIX_LONGEST = 16, 29
# What flex.plane never hands to a VM: the subnet's first three host addresses (the gateway, and room
# for a resolver and an appliance, as clouds commonly keep) and the gateway wherever it is.
RESERVED_HOSTS = 3
MAX_DNS_SERVERS = 3
ALIAS_MARK = "fp"
VNET_PREFIX = "fp"
SDN_ZONE_PREFIX = "fpz"
VNET_ID = re.compile(r"[a-z][a-z0-9]{0,7}")
_ALIAS_FIELD = re.compile(r"([a-z]+)=(\S*)")
ADDRESS_TAG_PREFIX = "fp-ip-"
_ADDRESS_TAG = re.compile(r"fp-ip-([a-z][a-z0-9]{0,7})-([0-9]{1,3}(?:\.[0-9]{1,3}){3})")
PRIVATE_RANGES = tuple(ipaddress.IPv4Network(r) for r in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


def address_tag(vnet: str, address: ipaddress.IPv4Address | str) -> str:
    """The tag recording that a VM holds ``address`` on VNet ``vnet``."""
    return f"{ADDRESS_TAG_PREFIX}{vnet}-{address}"


def addresses_in(tags: Iterable[str]) -> list[tuple[str, ipaddress.IPv4Address]]:
    """(VNet, address) of every address tag among ``tags``."""
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    for tag in tags:
        match = _ADDRESS_TAG.fullmatch(tag)
        if match:
            try:
                found.append((match.group(1), ipaddress.IPv4Address(match.group(2))))
            except ValueError:
                continue
    return found


def network_id(zone: str, vnet: str) -> str:
    """A network's id in the API: ``<zone>/<vnet>``, unique across VDCs (its name is unique only within
    its VDC and zone: requests may name it so, ``<zone>/<name>`` or its name in the VM's zone)."""
    return f"{zone}/{vnet}"


@dataclass(frozen=True)
class Network:
    """A VDC's network in one zone, as its VNet's alias describes it."""

    vdc: str
    zone: str
    name: str
    vnet: str
    # The Proxmox SDN zone of the VNet (the VDC's own in this zone).
    sdn_zone: str
    tag: int | None
    cidr: str
    gateway: str
    dns: tuple[str, ...] = ()
    # Not applied yet: Proxmox holds the VNet as a pending change (a create that did not finish).
    pending: bool = False

    @property
    def id(self) -> str:
        return network_id(self.zone, self.vnet)

    def named(self, ref: str, zone: str | None = None) -> bool:
        """Whether ``ref`` names this network: its id, ``<zone>/<name>``, or its name in ``zone``."""
        return ref in (self.id, f"{self.zone}/{self.name}") or (zone == self.zone and ref == self.name)

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.cidr)

    @property
    def prefix(self) -> int:
        return self.subnet.prefixlen

    @property
    def subnet_id(self) -> str:
        """Proxmox's id of its subnet: ``<sdn zone>-<network address>-<prefix length>``."""
        return f"{self.sdn_zone}-{self.cidr.replace('/', '-')}"

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_NETWORK

    def alias(self) -> str:
        return render_alias(self.vdc, self.name, self.cidr, self.gateway, self.dns)

    @classmethod
    def from_vnet(cls, zone: str, vnet: VNet) -> Network | None:
        """The network a VNet is, or None when its alias is not flex.plane's (an admin's own VNet)."""
        described = parse_alias(vnet.alias)
        if described is None:
            return None
        vdc, name, cidr, gateway, dns = described
        return cls(vdc, zone, name, vnet.id, vnet.zone, vnet.tag, cidr, gateway, dns, pending=vnet.pending)


def render_alias(vdc: str, name: str, cidr: str, gateway: str, dns: Iterable[str]) -> str:
    servers = "+".join(dns)
    return f"{ALIAS_MARK} vdc={vdc} net={name} cidr={cidr} gw={gateway} dns={servers}"


def parse_alias(alias: str) -> tuple[str, str, str, str, tuple[str, ...]] | None:
    """(vdc, name, cidr, gateway, dns) of a flex.plane alias; None for any other alias."""
    head, _sep, rest = alias.strip().partition(" ")
    if head != ALIAS_MARK:
        return None
    fields = dict(_ALIAS_FIELD.findall(rest))
    try:
        vdc, name, cidr, gateway = fields["vdc"], fields["net"], fields["cidr"], fields["gw"]
        subnet = ipaddress.IPv4Network(cidr)
        if ipaddress.IPv4Address(gateway) not in subnet:
            return None
        dns = tuple(str(ipaddress.IPv4Address(a)) for a in fields.get("dns", "").split("+") if a)
    except (KeyError, ValueError):
        return None
    if not vdc or not name:
        return None
    return vdc, name, str(subnet), gateway, dns


def reserved(
    subnet: ipaddress.IPv4Network, gateway: ipaddress.IPv4Address
) -> frozenset[ipaddress.IPv4Address]:
    """The addresses of ``subnet`` no VM gets: network, broadcast, the gateway, the first host ones."""
    first = int(subnet.network_address)
    kept = {subnet.network_address, subnet.broadcast_address, gateway}
    kept |= {ipaddress.IPv4Address(first + i) for i in range(1, RESERVED_HOSTS + 1)}
    return frozenset(a for a in kept if a in subnet)


def free_addresses(
    subnet: ipaddress.IPv4Network, gateway: ipaddress.IPv4Address, used: Iterable[ipaddress.IPv4Address]
) -> Iterator[ipaddress.IPv4Address]:
    """The subnet's addresses a new NIC may get, lowest first."""
    taken = reserved(subnet, gateway) | set(used)
    return (a for a in subnet.hosts() if a not in taken)


@dataclass(frozen=True)
class Nic:
    """A VM's network card: slot ``index`` (``netN``), its MAC, the VNet it is on, the network that
    VNet is (None: not a network of the VM's VDC), and the address cloud-init gives it."""

    index: int
    mac: str | None
    bridge: str | None
    network: Network | None
    address: str | None
    prefix: int | None
    gateway: str | None

    @property
    def key(self) -> str:
        return f"net{self.index}"
