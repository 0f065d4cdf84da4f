"""Edge gateways: the desired state the orchestrator sends a node, and the state the node reports.

A VDC's edge gateway in a zone runs on one node, in a network namespace: a leg on each of the VDC's
VNet bridges holding the subnet's gateway address, a leg on the zone's external (uplink) bridge
holding the gateway's external address and its public addresses, and one nftables ruleset:

- egress: every connection from the legs out of the uplink is SNAT-ed to the external address (or
  to its public address, for a VM with a 1:1 NAT);
- a port forward (public IP:port/protocol to a VM address:port) is DNAT-ed, and lets its traffic
  in: it is an explicit opening;
- a 1:1 NAT (a public IP's ``nat_to``) maps every connection to the public IP onto the VM's address
  and the VM's egress back onto the public IP; which connections may come in is the firewall's to say;
- the firewall rules, in order, the first matching a new connection decides; inbound (from the
  uplink to the legs) is denied by default, egress is allowed by default; a rule's destination
  and ports match either the address and port sent to (the public ones) or those they are
  translated to (the VM's); replies of accepted connections always pass (connection tracking).

Every type is a frozen dataclass checked on construction: a bad value raises
:class:`GatewaySpecError` (a ValueError) whose ``field`` names it, as the node names it when it
refuses a spec (``forwards[2].port``). ``to_dict``/``from_dict`` give the plain-JSON form (for a
ConfigMap, or the node's kept copy); ``spec_to_proto``/``spec_from_proto`` and
``state_to_proto``/``state_from_proto`` the wire form of the agent's Gateways service.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import grpc

from agentclient.errors import ERROR_METADATA_KEY, AgentError, translate_error
from agentclient.proto.flexplane.agent.v1 import agent_pb2

if TYPE_CHECKING:
    from agentclient.identity import AgentTarget

# Trailing metadata of the agent's Gateways errors (with ERROR_METADATA_KEY of agentclient.errors).
GATEWAY_REFUSED = "gateway-refused"  # INVALID_ARGUMENT: the spec is refused; nothing changed
GATEWAY_FAILED = "gateway-failed"  # FAILED_PRECONDITION: the node could not apply it; the previous state runs
FIELD_METADATA_KEY = "flexplane-field"  # with GATEWAY_REFUSED: the field refused, e.g. "forwards[2].port"

PROTOCOLS = ("tcp", "udp")
RULE_PROTOCOLS = ("tcp", "udp", "icmp", "any")
DIRECTIONS = ("in", "out")
ACTIONS = ("allow", "deny")
MAX_ID = 48
# A gateway's id: lowercase letters, digits, inner dots, hyphens and underscores.
_ID = re.compile(r"^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?\Z")
# A Linux interface name (at most 15 characters).
_IFNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}\Z")

T = TypeVar("T")


class GatewaySpecError(ValueError):
    """A value of a gateway's spec is refused; ``field`` names it (``uplink.address``, ``rules[0].ports``)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message

    def within(self, prefix: str) -> GatewaySpecError:
        """The same error with its field named from an enclosing value (``forwards[2]``)."""
        return GatewaySpecError(f"{prefix}.{self.field}", self.message)


def _ip(name: str, value: object) -> ipaddress.IPv4Address:
    if not isinstance(value, str):
        raise GatewaySpecError(name, f"must be an IPv4 address, not {type(value).__name__}")
    try:
        return ipaddress.IPv4Address(value)
    except ValueError:
        raise GatewaySpecError(name, f"{value!r} is not an IPv4 address") from None


def _interface(name: str, value: object) -> ipaddress.IPv4Interface:
    """An address with its prefix, e.g. 10.20.0.1/24: neither the network's nor its broadcast address."""
    if not isinstance(value, str) or "/" not in value:
        raise GatewaySpecError(name, f"{value!r} is not an IPv4 address with a prefix (e.g. 10.20.0.1/24)")
    try:
        interface = ipaddress.IPv4Interface(value)
    except ValueError:
        raise GatewaySpecError(name, f"{value!r} is not an IPv4 address with a prefix") from None
    network = interface.network
    if network.prefixlen > 30:
        raise GatewaySpecError(name, f"{value!r}: a /{network.prefixlen} leaves no room for hosts")
    if interface.ip in (network.network_address, network.broadcast_address):
        raise GatewaySpecError(name, f"{value!r} is the network's own or broadcast address")
    return interface


def _cidr(name: str, value: object) -> ipaddress.IPv4Network:
    if not isinstance(value, str):
        raise GatewaySpecError(name, f"must be an IPv4 CIDR, not {type(value).__name__}")
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        raise GatewaySpecError(
            name, f"{value!r} is not an IPv4 CIDR (e.g. 0.0.0.0/0, 10.20.0.0/24)"
        ) from None


def _port(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise GatewaySpecError(name, f"must be a port number, not {type(value).__name__}")
    if not 1 <= value <= 65535:
        raise GatewaySpecError(name, f"{value} is outside 1-65535")
    return value


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise GatewaySpecError(name, f"{value!r} is not one of {', '.join(choices)}")


def _ifname(name: str, value: object) -> None:
    if not isinstance(value, str) or not _IFNAME.match(value):
        raise GatewaySpecError(name, f"{value!r} is not a network interface name (at most 15 characters)")


def _items(name: str, values: object, kind: type[T]) -> tuple[T, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise GatewaySpecError(name, f"must be a sequence of {kind.__name__}")
    items = tuple(values)
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise GatewaySpecError(
                f"{name}[{index}]", f"must be a {kind.__name__}, not {type(item).__name__}"
            )
    return items


@dataclass(frozen=True)
class Uplink:
    """The gateway's leg on the zone's external network."""

    bridge: str  # the node's bridge of the external network, e.g. "vmbr0"
    vlan: int | None  # its VLAN tag on that bridge; None: untagged
    address: str  # the gateway's external address with prefix, e.g. "203.0.113.2/24"
    gateway: str  # the external network's router, the default route

    def __post_init__(self) -> None:
        _ifname("bridge", self.bridge)
        if self.vlan is not None and (
            not isinstance(self.vlan, int) or isinstance(self.vlan, bool) or not 1 <= self.vlan <= 4094
        ):
            raise GatewaySpecError("vlan", f"{self.vlan!r} is not a VLAN tag (1-4094) or None")
        interface = _interface("address", self.address)
        router = _ip("gateway", self.gateway)
        if router not in interface.network or router == interface.ip:
            raise GatewaySpecError("gateway", f"{self.gateway} is not another address of {interface.network}")

    @property
    def interface(self) -> ipaddress.IPv4Interface:
        return ipaddress.IPv4Interface(self.address)


@dataclass(frozen=True)
class Leg:
    """The gateway's leg on one of the VDC's VNets."""

    vnet: str  # the VNet's bridge name on the node
    address: str  # the subnet's gateway address with prefix, e.g. "10.20.0.1/24"

    def __post_init__(self) -> None:
        _ifname("vnet", self.vnet)
        _interface("address", self.address)

    @property
    def interface(self) -> ipaddress.IPv4Interface:
        return ipaddress.IPv4Interface(self.address)


@dataclass(frozen=True)
class PublicIp:
    """A public address the gateway holds on its uplink; with ``nat_to``, 1:1 NAT-ed to that VM address."""

    address: str
    nat_to: str | None = None

    def __post_init__(self) -> None:
        _ip("address", self.address)
        if self.nat_to is not None:
            _ip("nat_to", self.nat_to)


@dataclass(frozen=True)
class PortForward:
    """public_ip:port/protocol, arriving on the uplink, delivered to to_address:to_port."""

    public_ip: str
    protocol: Literal["tcp", "udp"]
    port: int
    to_address: str
    to_port: int

    def __post_init__(self) -> None:
        _ip("public_ip", self.public_ip)
        _choice("protocol", self.protocol, PROTOCOLS)
        _port("port", self.port)
        _ip("to_address", self.to_address)
        _port("to_port", self.to_port)


@dataclass(frozen=True)
class FirewallRule:
    """One firewall rule: ``in`` is from the uplink to the legs, ``out`` from the legs to the uplink."""

    direction: Literal["in", "out"]
    action: Literal["allow", "deny"]
    protocol: Literal["tcp", "udp", "icmp", "any"]
    source: str  # CIDR
    destination: str  # CIDR
    ports: tuple[int, int] | None = None  # a destination port range, tcp and udp only; None: every port

    def __post_init__(self) -> None:
        _choice("direction", self.direction, DIRECTIONS)
        _choice("action", self.action, ACTIONS)
        _choice("protocol", self.protocol, RULE_PROTOCOLS)
        _cidr("source", self.source)
        _cidr("destination", self.destination)
        if self.ports is None:
            return
        if self.protocol not in PROTOCOLS:
            raise GatewaySpecError("ports", f"a {self.protocol} rule has no ports")
        if not isinstance(self.ports, tuple) or len(self.ports) != 2:
            raise GatewaySpecError("ports", f"{self.ports!r} is not a (first, last) port range")
        first, last = _port("ports", self.ports[0]), _port("ports", self.ports[1])
        if first > last:
            raise GatewaySpecError("ports", f"{first}-{last} ends before it starts")


@dataclass(frozen=True)
class GatewaySpec:
    """The whole desired state of one gateway, as the orchestrator sends it to the node that runs it.

    Checked as a whole too: the legs' subnets do not overlap each other or the uplink's network,
    a public IP is listed once and is not the external address, a forward's public IP is one of
    the public IPs or the external address, a 1:1 NAT's and a forward's VM address is on a leg,
    and no public IP:port/protocol is forwarded twice.
    """

    id: str  # e.g. "<vdc>.<zone>"; safe in names
    generation: int
    uplink: Uplink
    legs: tuple[Leg, ...] = ()
    public_ips: tuple[PublicIp, ...] = ()
    forwards: tuple[PortForward, ...] = ()
    rules: tuple[FirewallRule, ...] = ()

    def __post_init__(self) -> None:
        check_gateway_id(self.id)
        if not isinstance(self.generation, int) or isinstance(self.generation, bool) or self.generation < 0:
            raise GatewaySpecError("generation", f"{self.generation!r} is not a generation (an integer >= 0)")
        if not isinstance(self.uplink, Uplink):
            raise GatewaySpecError("uplink", f"must be an Uplink, not {type(self.uplink).__name__}")
        for name, kind in (
            ("legs", Leg),
            ("public_ips", PublicIp),
            ("forwards", PortForward),
            ("rules", FirewallRule),
        ):
            object.__setattr__(self, name, _items(name, getattr(self, name), kind))
        self._check_whole()

    def _check_whole(self) -> None:
        external = self.uplink.interface
        networks: list[ipaddress.IPv4Network] = [external.network]
        vnets: set[str] = {self.uplink.bridge}
        for index, leg in enumerate(self.legs):
            network = leg.interface.network
            if leg.vnet in vnets:
                raise GatewaySpecError(f"legs[{index}].vnet", f"bridge {leg.vnet} has another leg already")
            clash = next((other for other in networks if other.overlaps(network)), None)
            if clash is not None:
                raise GatewaySpecError(f"legs[{index}].address", f"{network} overlaps {clash}")
            vnets.add(leg.vnet)
            networks.append(network)
        public: dict[str, PublicIp] = {}
        for index, ip in enumerate(self.public_ips):
            if ip.address in public:
                raise GatewaySpecError(f"public_ips[{index}].address", f"{ip.address} is listed twice")
            if ipaddress.IPv4Address(ip.address) == external.ip:
                raise GatewaySpecError(
                    f"public_ips[{index}].address", f"{ip.address} is the external address"
                )
            if any(ipaddress.IPv4Address(ip.address) in leg.interface.network for leg in self.legs):
                raise GatewaySpecError(f"public_ips[{index}].address", f"{ip.address} is on a VNet leg")
            if ip.nat_to is not None:
                self._on_a_leg(f"public_ips[{index}].nat_to", ip.nat_to)
            public[ip.address] = ip
        nat_targets = [ip.nat_to for ip in self.public_ips if ip.nat_to is not None]
        for address in nat_targets:
            if nat_targets.count(address) > 1:
                index = max(i for i, ip in enumerate(self.public_ips) if ip.nat_to == address)
                raise GatewaySpecError(
                    f"public_ips[{index}].nat_to", f"{address} has another 1:1 NAT already"
                )
        seen: set[tuple[str, str, int]] = set()
        for index, forward in enumerate(self.forwards):
            if forward.public_ip not in public and ipaddress.IPv4Address(forward.public_ip) != external.ip:
                raise GatewaySpecError(
                    f"forwards[{index}].public_ip",
                    f"{forward.public_ip} is neither a public IP of the gateway nor its external address",
                )
            key = (forward.public_ip, forward.protocol, forward.port)
            if key in seen:
                raise GatewaySpecError(
                    f"forwards[{index}].port",
                    f"{forward.public_ip}:{forward.port}/{forward.protocol} is forwarded already",
                )
            seen.add(key)
            self._on_a_leg(f"forwards[{index}].to_address", forward.to_address)

    def _on_a_leg(self, name: str, address: str) -> None:
        ip = ipaddress.IPv4Address(address)
        for leg in self.legs:
            interface = leg.interface
            if ip in interface.network:
                if ip in (
                    interface.ip,
                    interface.network.network_address,
                    interface.network.broadcast_address,
                ):
                    raise GatewaySpecError(name, f"{address} is not a VM address of {interface.network}")
                return
        raise GatewaySpecError(name, f"{address} is not on any of the gateway's networks")

    def to_dict(self) -> dict[str, Any]:
        """The plain-JSON form (:meth:`from_dict` reads it back)."""
        return _spec_dict(self, lambda rule: list(rule.ports) if rule.ports is not None else None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GatewaySpec:
        """A spec from its plain-JSON form; GatewaySpecError names the first bad field."""
        if not isinstance(data, Mapping):
            raise GatewaySpecError("spec", "must be an object")
        uplink = data.get("uplink")
        if not isinstance(uplink, Mapping):
            raise GatewaySpecError("uplink", "must be an object")
        return cls(
            id=data.get("id"),  # type: ignore[arg-type]  # checked on construction
            generation=data.get("generation"),  # type: ignore[arg-type]
            uplink=_build("uplink", Uplink, uplink, UPLINK_KEYS),
            legs=_build_all("legs", Leg, data.get("legs", ()), LEG_KEYS),
            public_ips=_build_all("public_ips", PublicIp, data.get("public_ips", ()), PUBLIC_IP_KEYS),
            forwards=_build_all("forwards", PortForward, data.get("forwards", ()), FORWARD_KEYS),
            rules=_build_all(
                "rules",
                FirewallRule,
                data.get("rules", ()),
                (*RULE_KEYS, "ports"),
                convert={"ports": lambda v: tuple(v) if isinstance(v, list | tuple) else v},
            ),
        )


# The fields of a spec's parts, named alike in its plain-JSON form, its dataclasses and its message
# (but for a rule's ports: a (first, last) pair in the first two, port_from and port_to in the message).
UPLINK_KEYS = ("bridge", "vlan", "address", "gateway")
LEG_KEYS = ("vnet", "address")
PUBLIC_IP_KEYS = ("address", "nat_to")
FORWARD_KEYS = ("public_ip", "protocol", "port", "to_address", "to_port")
RULE_KEYS = ("direction", "action", "protocol", "source", "destination")
# A gateway's state, but for its counters (a mapping).
STATE_KEYS = ("id", "generation", "node", "healthy", "detail")


def _fields(part: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: getattr(part, key) for key in keys}


def _spec_dict(spec: Any, ports: Callable[[Any], Any]) -> dict[str, Any]:
    """The plain-JSON form of a spec or of its GatewaySpec message, whose fields are named alike; ``ports``
    reads a rule's port range. The message's zero values (no VLAN, no 1:1 NAT) are None there."""
    return {
        "id": spec.id,
        "generation": spec.generation,
        "uplink": {**_fields(spec.uplink, UPLINK_KEYS), "vlan": spec.uplink.vlan or None},
        "legs": [_fields(leg, LEG_KEYS) for leg in spec.legs],
        "public_ips": [
            {**_fields(ip, PUBLIC_IP_KEYS), "nat_to": ip.nat_to or None} for ip in spec.public_ips
        ],
        "forwards": [_fields(forward, FORWARD_KEYS) for forward in spec.forwards],
        "rules": [{**_fields(rule, RULE_KEYS), "ports": ports(rule)} for rule in spec.rules],
    }


def check_gateway_id(value: object) -> str:
    """A gateway's id, checked: 1-48 lowercase letters, digits, inner dots, hyphens, underscores."""
    if not isinstance(value, str) or len(value) > MAX_ID or not _ID.match(value):
        raise GatewaySpecError(
            "id", f"{value!r} is not a gateway id (1-{MAX_ID} lowercase letters, digits, inner . - _)"
        )
    return value


def _build(
    name: str,
    kind: Callable[..., T],
    data: object,
    keys: tuple[str, ...],
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
) -> T:
    if not isinstance(data, Mapping):
        raise GatewaySpecError(name, "must be an object")
    values = {key: data.get(key) for key in keys}
    for key, function in (convert or {}).items():
        values[key] = function(values[key])
    try:
        return kind(**values)
    except GatewaySpecError as exc:
        raise exc.within(name) from None


def _build_all(
    name: str,
    kind: Callable[..., T],
    data: object,
    keys: tuple[str, ...],
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
) -> tuple[T, ...]:
    if isinstance(data, str | bytes | Mapping) or not isinstance(data, Iterable):
        raise GatewaySpecError(name, "must be a list")
    return tuple(_build(f"{name}[{index}]", kind, item, keys, convert) for index, item in enumerate(data))


@dataclass(frozen=True)
class GatewayState:
    """What the node running a gateway says of it."""

    id: str
    generation: int  # of the spec the node runs
    node: str
    healthy: bool  # the namespace, its legs and its ruleset are all in place
    detail: str = ""  # what is wrong when not healthy
    # From nftables: egress_/ingress_/dropped_ packets and bytes.
    counters: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "counters", MappingProxyType({str(k): int(v) for k, v in self.counters.items()})
        )


# ------------------------------------------------------------------------------------ the wire


def spec_to_proto(spec: GatewaySpec) -> Any:
    """The GatewaySpec message of a spec (where it has no VLAN, no 1:1 NAT or no ports: zero values)."""
    return agent_pb2.GatewaySpec(
        id=spec.id,
        generation=spec.generation,
        uplink=agent_pb2.GatewayUplink(
            **{**_fields(spec.uplink, UPLINK_KEYS), "vlan": spec.uplink.vlan or 0}
        ),
        legs=[agent_pb2.GatewayLeg(**_fields(leg, LEG_KEYS)) for leg in spec.legs],
        public_ips=[
            agent_pb2.GatewayPublicIp(**{**_fields(ip, PUBLIC_IP_KEYS), "nat_to": ip.nat_to or ""})
            for ip in spec.public_ips
        ],
        forwards=[
            agent_pb2.GatewayPortForward(**_fields(forward, FORWARD_KEYS)) for forward in spec.forwards
        ],
        rules=[
            agent_pb2.GatewayFirewallRule(
                **_fields(rule, RULE_KEYS),
                port_from=rule.ports[0] if rule.ports else 0,
                port_to=rule.ports[1] if rule.ports else 0,
            )
            for rule in spec.rules
        ],
    )


def spec_from_proto(message: Any) -> GatewaySpec:
    """The spec a GatewaySpec message carries; GatewaySpecError names the first bad field."""

    def ports(rule: Any) -> tuple[int, int] | None:
        return (rule.port_from, rule.port_to) if rule.port_from or rule.port_to else None

    return GatewaySpec.from_dict(_spec_dict(message, ports))


def state_to_proto(state: GatewayState) -> Any:
    return agent_pb2.GatewayState(**_fields(state, STATE_KEYS), counters=dict(state.counters))


def state_from_proto(message: Any) -> GatewayState:
    return GatewayState(**_fields(message, STATE_KEYS), counters=dict(message.counters))


# ------------------------------------------------------------------------------------ errors


class GatewayError(AgentError):
    """Gateways.Apply failed on the node's side; ``gateway`` is the gateway's id."""

    def __init__(self, target: AgentTarget, detail: str = "", gateway: str = "") -> None:
        super().__init__(target, detail)
        self.args = (target, detail, gateway)
        self.gateway = gateway


class GatewayRefused(GatewayError):
    """The node refused the spec; ``field`` names the field (e.g. ``forwards[2].port``). Nothing changed."""

    def __init__(self, target: AgentTarget, detail: str = "", gateway: str = "", field: str = "") -> None:
        super().__init__(target, detail, gateway)
        self.args = (target, detail, gateway, field)
        self.field = field

    def __str__(self) -> str:
        return f"The {self.host} refused gateway {self.gateway}: {self.detail.rstrip('.')}."


class GatewayFailed(GatewayError):
    """The node could not apply the gateway (a missing bridge, nft refused); its previous state runs."""

    def __str__(self) -> str:
        return f"The {self.host} could not apply gateway {self.gateway}: {self.detail.rstrip('.')}."


def translate_gateway_error(
    error: grpc.Call, target: AgentTarget, timeout: float, gateway: str
) -> AgentError:
    """The typed error of a failed Gateways call: GatewayRefused, GatewayFailed, or another AgentError."""
    metadata = {key: value for key, value in (error.trailing_metadata() or ())}
    kind = metadata.get(ERROR_METADATA_KEY)
    details = error.details() or ""
    code = error.code()
    if code == grpc.StatusCode.INVALID_ARGUMENT and kind == GATEWAY_REFUSED:
        field_name = metadata.get(FIELD_METADATA_KEY)
        return GatewayRefused(target, details, gateway, field_name if isinstance(field_name, str) else "")
    if code == grpc.StatusCode.FAILED_PRECONDITION and kind == GATEWAY_FAILED:
        return GatewayFailed(target, details, gateway)
    return translate_error(error, target, timeout)
