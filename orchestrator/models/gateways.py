"""Edge gateways: a VDC's router to the outside in one zone, and the public addresses it holds.

A gateway's desired state is a ConfigMap of the platform namespace (kind ``gateway``, id
``<vdc>.<zone>``, labelled with both), written optimistically (``resourceVersion``), its
``generation`` bumped on every change; the running state lives on the node that runs it (the agent's
``Gateways`` service, a network namespace with nftables). The spec also records where it is placed
(``node``), which generation that node confirmed (``appliedGeneration``) and the nodes it was moved
away from that still have to remove it (``leftOn``).

Its addresses come from the zone's public pool (``Zone.external_pool``): its uplink address (the
egress SNAT address, not counted in any quota) and its public IPs (counted in the VDC's ``publicIps``
quota), each optionally 1:1 NAT'd to a VM's address, plus port forwards and firewall rules (inbound
default deny, egress default allow: the rules are exceptions).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import field, replace
from typing import Annotated, Any

from pydantic import Field
from pydantic.dataclasses import dataclass

from orchestrator.models.specs import SPEC_CONFIG, Stored, load
from orchestrator.sources.kube_objects import VDC_LABEL

GATEWAY_KIND = "gateway"
ZONE_LABEL = "flexplane.io/zone"
PROTOCOLS = ("tcp", "udp")
RULE_PROTOCOLS = ("tcp", "udp", "icmp", "any")
DIRECTIONS = ("in", "out")
ACTIONS = ("allow", "deny")
MAX_FORWARDS = 1000
MAX_RULES = 200
LOWEST_PORT, HIGHEST_PORT = 1, 65535
ANYWHERE = "0.0.0.0/0"
MAX_NODE_ID = 48


def gateway_id(vdc: str, zone: str) -> str:
    """A gateway's id: ``<vdc>.<zone>`` (both DNS labels, so the dot is unambiguous)."""
    return f"{vdc}.{zone}"


def node_id(vdc: str, zone: str) -> str:
    """Its id on the node (the agent takes at most ``MAX_NODE_ID`` characters): ``<vdc>.<zone>`` when
    that is short enough, else a prefix of it and a digest of the whole, still unique."""
    whole = gateway_id(vdc, zone)
    if len(whole) <= MAX_NODE_ID:
        return whole
    digest = hashlib.sha256(whole.encode()).hexdigest()[:10]
    return f"{whole[: MAX_NODE_ID - 11].rstrip('.-')}-{digest}"


# ------------------------------------------------------------------------------ the public pool


def parse_range(text: str) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
    """One pool entry as (first, last): ``a-b``, a CIDR (its host addresses) or one address.

    ``ValueError`` with the reason for anything else."""
    text = text.strip()
    if "-" in text:
        low, _sep, high = text.partition("-")
        first, last = ipaddress.IPv4Address(low.strip()), ipaddress.IPv4Address(high.strip())
        if first > last:
            raise ValueError(f"{text!r} runs backwards")
        return first, last
    if "/" in text:
        net = ipaddress.IPv4Network(text, strict=True)
        if net.num_addresses <= 2:
            return net.network_address, net.broadcast_address
        return net.network_address + 1, net.broadcast_address - 1
    address = ipaddress.IPv4Address(text)
    return address, address


def pool_problem(pool: Sequence[str], cidr: str, gateway: str) -> tuple[str, str] | None:
    """Why a zone's external settings do not hold together, as (field, message); None when they do.

    The gateway must be a host address of the CIDR; every pool entry must parse, lie in the CIDR and
    hold neither the gateway nor the CIDR's network or broadcast address."""
    try:
        subnet = ipaddress.IPv4Network(cidr, strict=True)
    except ValueError as exc:
        return "external_cidr", f"externalCidr {cidr[:40]!r} is not an IPv4 network: {exc}"
    if subnet.prefixlen > 30:
        return (
            "external_cidr",
            f"externalCidr {subnet}: a /30 at the longest (room for a gateway and one more)",
        )
    try:
        router = ipaddress.IPv4Address(gateway)
    except ValueError:
        return "external_gateway", f"externalGateway {gateway[:40]!r} is not an IPv4 address"
    if router not in subnet or router in (subnet.network_address, subnet.broadcast_address):
        return "external_gateway", f"externalGateway {router} is not a host address of {subnet}"
    if not pool:
        return "external_pool", "externalPool must name at least one address for the gateways"
    for entry in pool:
        try:
            first, last = parse_range(entry)
        except ValueError as exc:
            return "external_pool", f"externalPool: {entry[:60]!r} is not a range, CIDR or address ({exc})"
        if first not in subnet or last not in subnet:
            return "external_pool", f"externalPool: {entry} is not inside the external CIDR {subnet}"
        if first <= router <= last:
            return "external_pool", f"externalPool: {entry} holds the external gateway {router}"
        for edge in (subnet.network_address, subnet.broadcast_address):
            if first <= edge <= last:
                return "external_pool", f"externalPool: {entry} holds {edge}, the CIDR's own address"
    return None


def pool_addresses(pool: Iterable[str]) -> Iterator[ipaddress.IPv4Address]:
    """Every address of the pool, in the order given (entries that do not parse are skipped)."""
    seen: set[ipaddress.IPv4Address] = set()
    for entry in pool:
        try:
            first, last = parse_range(entry)
        except ValueError:
            continue
        for number in range(int(first), int(last) + 1):
            address = ipaddress.IPv4Address(number)
            if address not in seen:
                seen.add(address)
                yield address


def next_free(pool: Iterable[str], taken: Iterable[str]) -> str | None:
    """The pool's first address nobody holds, or None when all are taken."""
    held = set(taken)
    return next((str(a) for a in pool_addresses(pool) if str(a) not in held), None)


def in_pool(pool: Iterable[str], address: str) -> bool:
    try:
        wanted = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    for entry in pool:
        try:
            first, last = parse_range(entry)
        except ValueError:
            continue
        if first <= wanted <= last:
            return True
    return False


# ------------------------------------------------------------------------------ desired state


@dataclass(frozen=True, config=SPEC_CONFIG)
class PublicIp:
    """A public address of the gateway; ``nat_to``: the VM address it is 1:1 NAT'd to, if any."""

    address: str
    nat_to: str | None = None


@dataclass(frozen=True, config=SPEC_CONFIG)
class PortForward:
    """``public_ip:port/protocol`` forwarded to ``to_address:to_port``."""

    public_ip: str
    protocol: str
    port: int
    to_address: str
    to_port: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.public_ip, self.protocol, self.port)


@dataclass(frozen=True, config=SPEC_CONFIG)
class FirewallRule:
    """An exception to the gateway's defaults (inbound deny, egress allow), in order: the first
    rule a packet matches decides. ``ports`` is an inclusive range (tcp and udp only)."""

    direction: str
    action: str
    protocol: str
    source: str = ANYWHERE
    destination: str = ANYWHERE
    ports: tuple[int, int] | None = None
    description: str = ""


@dataclass(frozen=True, config=SPEC_CONFIG)
class Leg:
    """The gateway's leg on one of the VDC's networks: its VNet bridge and the network's gateway
    address with the prefix (``10.0.0.1/24``)."""

    network: str
    bridge: str
    address: str

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Interface(self.address).network


@dataclass(frozen=True, config=SPEC_CONFIG)
class Gateway(Stored):
    """A VDC's edge gateway in one zone, as its ConfigMap holds it (every field but its
    ``resource_version``, in camelCase: ``models.specs``)."""

    vdc: str
    zone: str
    uplink_address: str
    generation: int = 1
    public_ips: tuple[PublicIp, ...] = ()
    forwards: tuple[PortForward, ...] = ()
    rules: tuple[FirewallRule, ...] = ()
    legs: tuple[Leg, ...] = ()
    node: str | None = None
    applied_generation: int = 0
    left_on: tuple[str, ...] = ()
    # The version of the ConfigMap it was read from (not stored: the next write is made at it).
    resource_version: Annotated[str, Field(exclude=True)] = field(default="", compare=False)

    @property
    def id(self) -> str:
        return gateway_id(self.vdc, self.zone)

    @property
    def addresses(self) -> list[str]:
        """Every pool address it holds: its uplink's and its public IPs."""
        return [self.uplink_address, *(p.address for p in self.public_ips)]

    @property
    def applied(self) -> bool:
        """Whether its node confirmed the current generation."""
        return self.node is not None and self.applied_generation == self.generation

    def public_ip(self, address: str) -> PublicIp | None:
        return next((p for p in self.public_ips if p.address == address), None)

    def changed(self, **changes: Any) -> Gateway:
        """The next generation with ``changes`` (what the node confirmed stays as it was)."""
        return replace(self, generation=self.generation + 1, **changes)

    def labels(self) -> dict[str, str]:
        return {VDC_LABEL: self.vdc, ZONE_LABEL: self.zone}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], resource_version: str = "") -> Gateway:
        return load(cls, {**spec, "resource_version": resource_version})
