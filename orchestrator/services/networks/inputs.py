"""A network's create, checked: its name, addresses and resolvers against the zone's rules."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.errors import ValidationFailed
from orchestrator.models import Zone
from orchestrator.models.networks import (
    MAX_DNS_SERVERS,
    PREFIX_LONGEST,
    PREFIX_SHORTEST,
    PRIVATE_RANGES,
    RESERVED_HOSTS,
)

# A DNS label: what a network's name is (it shows in the VNet's alias and in pages).
NETWORK_NAME = re.compile(r"[a-z]([a-z0-9-]{0,30}[a-z0-9])?")


@dataclass(frozen=True)
class CreateNetwork:
    """What a create asks for (unvalidated)."""

    name: str
    cidr: str
    zone: str | None = None
    gateway: str | None = None
    dns: tuple[str, ...] | None = None


@dataclass(frozen=True)
class NetworkPlan:
    name: str
    subnet: ipaddress.IPv4Network
    gateway: ipaddress.IPv4Address
    dns: tuple[str, ...]


def validate_name(name: str) -> str:
    if not NETWORK_NAME.fullmatch(name or ""):
        raise ValidationFailed(
            "name",
            f"network name {str(name)[:40]!r} is not a DNS label: 1 to 32 lowercase letters, digits "
            "and '-', starting with a letter and not ending with '-'",
        )
    return name


def _allowed(subnet: ipaddress.IPv4Network, zone: Zone) -> bool:
    ranges = [*PRIVATE_RANGES, *(ipaddress.IPv4Network(r) for r in zone.ranges)]
    return any(subnet.subnet_of(r) for r in ranges)


def validate_subnet(cidr: str, zone: Zone) -> ipaddress.IPv4Network:
    try:
        subnet = ipaddress.IPv4Network(cidr, strict=True)
    except ValueError as exc:
        raise ValidationFailed("cidr", f"cidr {str(cidr)[:60]!r} is not an IPv4 network: {exc}") from None
    if not PREFIX_SHORTEST <= subnet.prefixlen <= PREFIX_LONGEST:
        raise ValidationFailed(
            "cidr", f"cidr {subnet}: a network is a /{PREFIX_SHORTEST} to a /{PREFIX_LONGEST}"
        )
    if not _allowed(subnet, zone):
        others = f" or {zone.network_ranges}" if zone.ranges else ""
        raise ValidationFailed(
            "cidr",
            f"cidr {subnet} is not private: use RFC 1918 addresses (10/8, 172.16/12, 192.168/16){others}",
        )
    return subnet


def validate_gateway(gateway: str | None, subnet: ipaddress.IPv4Network) -> ipaddress.IPv4Address:
    """The gateway: the subnet's first usable address unless one is named, which must be a host of it."""
    if gateway is None or gateway == "":
        return next(subnet.hosts())
    try:
        address = ipaddress.IPv4Address(gateway)
    except ValueError:
        raise ValidationFailed("gateway", f"gateway {str(gateway)[:40]!r} is not an IPv4 address") from None
    if address not in subnet or address in (subnet.network_address, subnet.broadcast_address):
        raise ValidationFailed("gateway", f"gateway {address} is not a host address of {subnet}")
    return address


def validate_dns(servers: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for server in servers:
        try:
            address = str(ipaddress.IPv4Address(server))
        except ValueError:
            raise ValidationFailed("dns", f"dns: {str(server)[:40]!r} is not an IPv4 address") from None
        if address not in out:
            out.append(address)
    if len(out) > MAX_DNS_SERVERS:
        raise ValidationFailed("dns", f"dns: at most {MAX_DNS_SERVERS} servers (cloud-init's limit)")
    return tuple(out)


def validate(spec: CreateNetwork, zone: Zone) -> NetworkPlan:
    name = validate_name(spec.name)
    subnet = validate_subnet(spec.cidr, zone)
    gateway = validate_gateway(spec.gateway, subnet)
    if subnet.num_addresses - 2 <= RESERVED_HOSTS:
        raise ValidationFailed("cidr", f"cidr {subnet} leaves no address for a VM")
    dns = validate_dns(spec.dns if spec.dns is not None else zone.dns_servers)
    return NetworkPlan(name, subnet, gateway, dns)


def validate_address(address: str, subnet: ipaddress.IPv4Network, field: str) -> ipaddress.IPv4Address:
    try:
        parsed = ipaddress.IPv4Address(address)
    except ValueError:
        raise ValidationFailed(field, f"{str(address)[:40]!r} is not an IPv4 address") from None
    if parsed not in subnet:
        raise ValidationFailed(field, f"address {parsed} is not in the network's {subnet}")
    return parsed
