"""Zones (one Proxmox cluster each) and their hosts, from the platform catalog."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainSerializer, model_validator

from agentclient import AgentTarget, host_identity
from orchestrator.models.specs import (
    MAX_NAME_LENGTH,
    MAX_TITLE_LENGTH,
    NamedById,
    Spec,
    description_field,
    field,
    id_field,
)

DEFAULT_MEMORY_OVERCOMMIT = 1.0
DEFAULT_CPU_OVERCOMMIT = 4.0

# How a zone builds tenant networks when its entry says nothing (zones made before networks existed):
# VXLAN among its nodes, ids 1000 to 4000 (valid VLAN tags too), and room for VXLAN's 50 bytes in 1500.
NETWORK_TYPES = ("vxlan", "vlan")
DEFAULT_NETWORK_TYPE = "vxlan"
DEFAULT_NETWORK_BRIDGE = "vmbr0"
DEFAULT_NETWORK_ID_FIRST = 1000
DEFAULT_NETWORK_ID_LAST = 4000
DEFAULT_NETWORK_MTU = 1450
MAX_VXLAN_ID = 16_777_215
MAX_VLAN_TAG = 4094
# No VLAN on the external bridge (edge gateways' uplinks are untagged).
NO_VLAN = 0


def _joined(value: Any) -> Any:
    """A stored list as the model holds it: comma-separated, as the form and the API take it."""
    return ", ".join(str(item) for item in value) if isinstance(value, list) else value


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


# A list the spec stores as a JSON list, and the model, the form and the API hold comma-separated.
CommaList = Annotated[str, BeforeValidator(_joined), PlainSerializer(_items, return_type=list[str])]


def _network(name: str, *more: Any, **declared: Any) -> Any:
    return field(*more, path=("network", name), **declared)


def _external(name: str, *more: Any, **declared: Any) -> Any:
    return field(*more, path=("external", name), **declared)


class Zone(NamedById):
    """A Proxmox cluster that VMs can be placed in.

    Its tenant networks are a Proxmox SDN zone of ``network_type`` (VXLAN among the zone's nodes, or
    VLANs on ``network_bridge``), VNets numbered from the id range, with this MTU; tenants may use
    RFC 1918 addresses and ``network_ranges``; ``network_dns`` are a new network's default resolvers.
    Its external network, where edge gateways have their uplink (none while ``external_bridge`` is
    empty: no gateways in the zone): the bridge (and VLAN tag, 0 for none), its CIDR and gateway, the
    public addresses flex.plane hands out and the nodes that may host gateways. Stored nested
    (``network``, ``external``); a zone without an external network is stored without ``external``,
    as zones were before gateways.
    """

    id: str = id_field()
    name: str = field(
        label="Display name", help="Its name on pages (default: the id).", max_length=MAX_TITLE_LENGTH
    )
    description: str = description_field()
    network_type: str = _network(
        "type",
        DEFAULT_NETWORK_TYPE,
        label="Tenant networks",
        help="How its tenant networks are built: VXLAN among its hosts, or VLANs on one bridge.",
        choices=NETWORK_TYPES,
    )
    network_bridge: str = _network(
        "bridge",
        DEFAULT_NETWORK_BRIDGE,
        label="VLAN bridge",
        help="The bridge tenant VLANs ride on (VLAN only), e.g. vmbr0.",
        max_length=15,
    )
    network_id_first: int = _network(
        "idFirst",
        DEFAULT_NETWORK_ID_FIRST,
        label="First network id",
        help="The first VXLAN id or VLAN tag flex.plane may hand out:",
        ge=1,
        le=MAX_VXLAN_ID,
    )
    network_id_last: int = _network(
        "idLast",
        DEFAULT_NETWORK_ID_LAST,
        label="Last network id",
        help="The last VXLAN id or VLAN tag flex.plane may hand out (a VLAN tag is at most 4094):",
        ge=1,
        le=MAX_VXLAN_ID,
    )
    network_mtu: int = _network(
        "mtu",
        DEFAULT_NETWORK_MTU,
        label="Network MTU",
        help="The MTU of tenant networks (VXLAN needs 50 bytes less than the hosts' links):",
        ge=576,
        le=9000,
    )
    network_ranges: CommaList = _network(
        "ranges",
        "",
        label="Other address ranges",
        help="IPv4 ranges tenants may use besides RFC 1918's, comma-separated CIDRs (empty: none).",
        max_length=1000,
    )
    network_dns: CommaList = _network(
        "dns",
        "",
        label="DNS servers",
        help="The resolvers a new network gets unless its creator names others, comma-separated "
        "IPv4 addresses (empty: none).",
        max_length=200,
    )
    network_routed: bool = _network(
        "routed",
        False,
        label="Routed to the management cluster",
        help="On when the site's routers carry this zone's tenant networks to the management cluster, "
        "where tenant clusters' control planes answer: their workers then need no edge gateway.",
    )
    external_bridge: str = _external(
        "bridge",
        "",
        label="External bridge",
        help="The bridge of the external network edge gateways' uplinks are on, e.g. vmbr1 "
        "(empty: no edge gateways in this zone).",
        max_length=15,
    )
    external_vlan: int = _external(
        "vlan",
        NO_VLAN,
        label="External VLAN",
        help="The VLAN tag of the external network on that bridge (0: untagged):",
        ge=0,
        le=MAX_VLAN_TAG,
    )
    external_cidr: str = _external(
        "cidr",
        "",
        label="External CIDR",
        help="The external network's IPv4 subnet, e.g. 203.0.113.0/24.",
        max_length=18,
    )
    external_gateway: str = _external(
        "gateway",
        "",
        label="External gateway",
        help="The external network's router, an address of its CIDR.",
        max_length=15,
    )
    external_pool: CommaList = _external(
        "pool",
        "",
        label="Public address pool",
        help="The addresses flex.plane hands to edge gateways and public IPs, comma-separated ranges "
        "(203.0.113.10-203.0.113.99), CIDRs or addresses, all in the external CIDR.",
        max_length=1000,
    )
    gateway_nodes: CommaList = _external(
        "nodes",
        "",
        label="Gateway hosts",
        help="The hosts (Proxmox nodes) that may run edge gateways, comma-separated (empty: any host of "
        "the zone).",
        max_length=1000,
    )

    def __str__(self) -> str:
        return self.id

    @property
    def ranges(self) -> list[str]:
        """The address ranges tenants may use besides RFC 1918's."""
        return _items(self.network_ranges)

    @property
    def dns_servers(self) -> list[str]:
        """A new network's default resolvers."""
        return _items(self.network_dns)

    @property
    def has_external_network(self) -> bool:
        """Whether edge gateways can run in this zone (an admin set its external network)."""
        return bool(self.external_bridge and self.external_cidr and self.external_gateway)

    @property
    def public_pool(self) -> list[str]:
        """The public address ranges gateways get their addresses from (``a-b``, CIDRs or addresses)."""
        return _items(self.external_pool)

    @property
    def gateway_hosts(self) -> list[str]:
        """The nodes that may host gateways (empty: any host of the zone)."""
        return _items(self.gateway_nodes)

    def to_spec(self) -> dict[str, Any]:
        spec = super().to_spec()
        if not (self.external_bridge or self.external_cidr or self.external_gateway or self.external_pool):
            del spec["external"]  # a zone without one is stored as zones were before gateways
        return spec


def host_ident(zone: str, node: str) -> str:
    """A host's id in the catalog: ``<zone>.<node>`` (both DNS labels, so the dot is unambiguous)."""
    return f"{zone}.{node}"


class Host(Spec):
    """A Proxmox node of a zone, and the address of the flex.plane agent that runs on it.

    A cordoned host takes no new VMs; its VMs keep running. Placement counts a host's memory
    times ``memory_overcommit`` and its CPU threads times ``cpu_overcommit``.
    """

    # ``<zone>/<node>``, made from them (not stored).
    key: str = Field(default="", exclude=True)
    zone: str = field(label="Zone", help="A zone's id.", required=True, max_length=MAX_NAME_LENGTH, key=True)
    node: str = field(
        label="Host",
        help="The host's name (its Proxmox node).",
        required=True,
        max_length=MAX_NAME_LENGTH,
        key=True,
    )
    endpoint: str = field(
        label="Agent endpoint", help="The agent's address, host:port.", required=True, max_length=255
    )
    cordoned: bool = field(False, label="Cordoned", help="Cordoned hosts take no new VMs.")
    memory_overcommit: float = field(
        DEFAULT_MEMORY_OVERCOMMIT,
        label="Memory overcommit",
        help="Placement counts the host's memory times this ratio:",
        ge=0.1,
        le=8.0,
    )
    cpu_overcommit: float = field(
        DEFAULT_CPU_OVERCOMMIT,
        label="CPU overcommit",
        help="Placement counts the host's CPU threads times this ratio:",
        ge=0.1,
        le=64.0,
    )

    def __str__(self) -> str:
        return self.key

    @model_validator(mode="before")
    @classmethod
    def _keyed(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and not data.get("key") and data.get("zone") and data.get("node"):
            return {**data, "key": f"{data['zone']}/{data['node']}"}
        return data

    @property
    def ident(self) -> str:
        """The host's id in the catalog (``<zone>.<node>``)."""
        return host_ident(self.zone, self.node)

    @property
    def target(self) -> AgentTarget:
        """Where to dial this host's agent, and the name its certificate must carry."""
        return AgentTarget(identity=host_identity(self.zone, self.node), address=self.endpoint)
