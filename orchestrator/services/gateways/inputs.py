"""What tenants ask of a gateway, checked (pure): port forwards, 1:1 NAT targets, firewall rules.

Each bad value is a ``ValidationFailed`` naming its field as the API spells it; nothing here reads a
neighbour, so the whole of a change is checked before anything is written or sent to a node.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import ValidationFailed
from orchestrator.models.gateways import (
    ACTIONS,
    ANYWHERE,
    DIRECTIONS,
    HIGHEST_PORT,
    LOWEST_PORT,
    MAX_FORWARDS,
    MAX_RULES,
    PROTOCOLS,
    RULE_PROTOCOLS,
    FirewallRule,
    Gateway,
    Leg,
    PortForward,
)
from orchestrator.models.networks import reserved

MAX_RULE_DESCRIPTION = 200


@dataclass(frozen=True)
class ForwardRequest:
    """A port forward as asked for (unvalidated)."""

    public_ip: str
    protocol: str
    port: Any
    to_address: str
    to_port: Any = None  # default: the same port


def port(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationFailed(field, f"{field} must be a whole number from {LOWEST_PORT} to {HIGHEST_PORT}")
    if not LOWEST_PORT <= value <= HIGHEST_PORT:
        raise ValidationFailed(field, f"{field} {value} is outside {LOWEST_PORT}-{HIGHEST_PORT}")
    return value


def choice(value: Any, choices: Sequence[str], field: str) -> str:
    text = str(value or "").lower()
    if text not in choices:
        raise ValidationFailed(field, f"{field} must be one of {', '.join(choices)}, not {str(value)[:20]!r}")
    return text


def vm_address(value: Any, legs: Sequence[Leg], field: str) -> str:
    """A VM's address on one of the VDC's networks in the gateway's zone: none that NIC allocation
    keeps back (``orchestrator.models.networks.reserved``: the network's own addresses, its gateway,
    its first hosts), since no VM can hold one."""
    try:
        address = ipaddress.IPv4Address(str(value or "").strip())
    except ValueError:
        raise ValidationFailed(field, f"{field}: {str(value)[:40]!r} is not an IPv4 address") from None
    for leg in legs:
        interface = ipaddress.IPv4Interface(leg.address)
        if address in interface.network:
            if address in reserved(interface.network, interface.ip):
                raise ValidationFailed(
                    field,
                    f"{field}: {address} is reserved in network {leg.network} ({interface.network}: its "
                    "gateway or first hosts), not a VM's",
                )
            return str(address)
    raise ValidationFailed(field, f"{field}: {address} is not on any of the VDC's networks in this zone")


def cidr(value: Any, field: str) -> str:
    text = str(value or "").strip() or ANYWHERE
    try:
        network = ipaddress.IPv4Network(text, strict=False)
    except ValueError:
        raise ValidationFailed(field, f"{field}: {text[:40]!r} is not an IPv4 CIDR") from None
    return str(network)


def forward(request: ForwardRequest, gateway: Gateway) -> PortForward:
    """A new port forward of ``gateway``: its public IP one of the gateway's, its port free there, its
    target a VM address on the VDC's networks of the zone."""
    if gateway.public_ip(str(request.public_ip)) is None:
        raise ValidationFailed(
            "publicIp", f"publicIp {str(request.public_ip)[:40]!r} is not a public IP of this VDC"
        )
    protocol = choice(request.protocol, PROTOCOLS, "protocol")
    number = port(request.port, "port")
    to_port = port(number if request.to_port is None else request.to_port, "toPort")
    made = PortForward(
        str(request.public_ip),
        protocol,
        number,
        vm_address(request.to_address, gateway.legs, "toAddress"),
        to_port,
    )
    if any(f.key == made.key for f in gateway.forwards):
        raise ValidationFailed("port", f"port {number}/{protocol} of {made.public_ip} is already forwarded")
    if len(gateway.forwards) >= MAX_FORWARDS:
        raise ValidationFailed("port", f"a gateway has at most {MAX_FORWARDS} port forwards")
    return made


def rule(values: Mapping[str, Any], gateway: Gateway) -> FirewallRule:
    """A firewall rule: direction, action, protocol, source and destination CIDRs (default anywhere),
    and for tcp/udp an optional port range (``port_from``, ``port_to``)."""
    protocol = choice(values.get("protocol") or "any", RULE_PROTOCOLS, "protocol")
    first, last = values.get("port_from"), values.get("port_to")
    ports: tuple[int, int] | None = None
    if first is not None or last is not None:
        if protocol not in PROTOCOLS:
            raise ValidationFailed(
                "portFrom", f"a {protocol} rule has no ports: leave portFrom and portTo out"
            )
        low = port(first if first is not None else last, "portFrom")
        high = port(last if last is not None else low, "portTo")
        if low > high:
            raise ValidationFailed("portTo", f"portTo {high} is below portFrom {low}")
        ports = (low, high)
    description = str(values.get("description") or "").strip()
    if len(description) > MAX_RULE_DESCRIPTION or not description.isprintable():
        raise ValidationFailed(
            "description", f"description: one line of at most {MAX_RULE_DESCRIPTION} printable characters"
        )
    if len(gateway.rules) >= MAX_RULES:
        raise ValidationFailed("direction", f"a gateway has at most {MAX_RULES} firewall rules")
    return FirewallRule(
        direction=choice(values.get("direction"), DIRECTIONS, "direction"),
        action=choice(values.get("action"), ACTIONS, "action"),
        protocol=protocol,
        source=cidr(values.get("source"), "source"),
        destination=cidr(values.get("destination"), "destination"),
        ports=ports,
        description=description,
    )


def position(value: Any, count: int, field: str = "position") -> int:
    """An index into the rules (0 is the first)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise ValidationFailed(
            field,
            f"{field} must be a rule's position, 0 to {count - 1}"
            if count
            else f"{field}: the gateway has no firewall rules",
        )
    return value
