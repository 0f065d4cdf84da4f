"""Zones (one Proxmox cluster each) and their hosts, from the platform catalog."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models

from agentclient import AgentTarget, host_identity

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


class Zone(models.Model):
    """A Proxmox cluster that VMs can be placed in."""

    id = models.CharField(primary_key=True, max_length=63)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    # How its tenant networks are built: a Proxmox SDN zone of this type (VXLAN among the zone's nodes,
    # or VLANs on ``network_bridge``), VNets numbered from the id range, with this MTU; tenants may use
    # RFC 1918 addresses and ``network_ranges``; ``network_dns`` are a new network's default resolvers.
    network_type = models.CharField(max_length=8, default=DEFAULT_NETWORK_TYPE)
    network_bridge = models.CharField(max_length=15, default=DEFAULT_NETWORK_BRIDGE)
    network_id_first = models.PositiveIntegerField(default=DEFAULT_NETWORK_ID_FIRST)
    network_id_last = models.PositiveIntegerField(default=DEFAULT_NETWORK_ID_LAST)
    network_mtu = models.PositiveIntegerField(default=DEFAULT_NETWORK_MTU)
    # Comma-separated, as the form and the API take them (``ranges``, ``dns_servers``: as lists).
    network_ranges = models.CharField(max_length=1000, default="")
    network_dns = models.CharField(max_length=200, default="")
    # Its external network, where edge gateways have their uplink (none while ``external_bridge`` is
    # empty: no gateways in the zone): the bridge (and VLAN tag, 0 for none), its CIDR and gateway, the
    # public addresses flex.plane hands out (comma-separated ranges ``a-b``, CIDRs or addresses, all in
    # the CIDR) and the nodes that may host gateways (comma-separated; empty: any host of the zone).
    external_bridge = models.CharField(max_length=15, default="")
    external_vlan = models.PositiveIntegerField(default=NO_VLAN)
    external_cidr = models.CharField(max_length=18, default="")
    external_gateway = models.CharField(max_length=15, default="")
    external_pool = models.CharField(max_length=1000, default="")
    gateway_nodes = models.CharField(max_length=1000, default="")

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.id

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Zone:
        ident = str(spec["id"])
        network = spec.get("network") or {}
        external = spec.get("external") or {}
        return cls(
            id=ident,
            name=str(spec.get("name") or ident),
            description=str(spec.get("description") or ""),
            network_type=str(network.get("type") or DEFAULT_NETWORK_TYPE),
            network_bridge=str(network.get("bridge") or DEFAULT_NETWORK_BRIDGE),
            network_id_first=int(network.get("idFirst") or DEFAULT_NETWORK_ID_FIRST),
            network_id_last=int(network.get("idLast") or DEFAULT_NETWORK_ID_LAST),
            network_mtu=int(network.get("mtu") or DEFAULT_NETWORK_MTU),
            network_ranges=", ".join(str(r) for r in network.get("ranges") or []),
            network_dns=", ".join(str(a) for a in network.get("dns") or []),
            external_bridge=str(external.get("bridge") or ""),
            external_vlan=int(external.get("vlan") or NO_VLAN),
            external_cidr=str(external.get("cidr") or ""),
            external_gateway=str(external.get("gateway") or ""),
            external_pool=", ".join(str(r) for r in external.get("pool") or []),
            gateway_nodes=", ".join(str(n) for n in external.get("nodes") or []),
        )

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
        spec = self._spec()
        if not (self.external_bridge or self.external_cidr or self.external_gateway or self.external_pool):
            del spec["external"]  # a zone without one is stored as zones were before gateways
        return spec

    def _spec(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "network": {
                "type": self.network_type,
                "bridge": self.network_bridge,
                "idFirst": self.network_id_first,
                "idLast": self.network_id_last,
                "mtu": self.network_mtu,
                "ranges": self.ranges,
                "dns": self.dns_servers,
            },
            "external": {
                "bridge": self.external_bridge,
                "vlan": self.external_vlan,
                "cidr": self.external_cidr,
                "gateway": self.external_gateway,
                "pool": self.public_pool,
                "nodes": self.gateway_hosts,
            },
        }


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def host_ident(zone: str, node: str) -> str:
    """A host's id in the catalog: ``<zone>.<node>`` (both DNS labels, so the dot is unambiguous)."""
    return f"{zone}.{node}"


class Host(models.Model):
    """A Proxmox node of a zone, and the address of the flex.plane agent that runs on it.

    A cordoned host takes no new VMs; its VMs keep running. Placement counts a host's memory
    times ``memory_overcommit`` and its CPU threads times ``cpu_overcommit``.
    """

    key = models.CharField(primary_key=True, max_length=127)
    zone = models.CharField(max_length=63)
    node = models.CharField(max_length=63)
    endpoint = models.CharField(max_length=255)
    cordoned = models.BooleanField(default=False)
    memory_overcommit = models.FloatField(default=DEFAULT_MEMORY_OVERCOMMIT)
    cpu_overcommit = models.FloatField(default=DEFAULT_CPU_OVERCOMMIT)

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.key

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Host:
        zone, node = str(spec["zone"]), str(spec["node"])
        return cls(
            key=f"{zone}/{node}",
            zone=zone,
            node=node,
            endpoint=str(spec["endpoint"]),
            cordoned=bool(spec.get("cordoned", False)),
            memory_overcommit=float(spec.get("memoryOvercommit", DEFAULT_MEMORY_OVERCOMMIT)),
            cpu_overcommit=float(spec.get("cpuOvercommit", DEFAULT_CPU_OVERCOMMIT)),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "zone": self.zone,
            "node": self.node,
            "endpoint": self.endpoint,
            "cordoned": self.cordoned,
            "memoryOvercommit": self.memory_overcommit,
            "cpuOvercommit": self.cpu_overcommit,
        }

    @property
    def ident(self) -> str:
        """The host's id in the catalog (``<zone>.<node>``)."""
        return host_ident(self.zone, self.node)

    @property
    def target(self) -> AgentTarget:
        """Where to dial this host's agent, and the name its certificate must carry."""
        return AgentTarget(identity=host_identity(self.zone, self.node), address=self.endpoint)
