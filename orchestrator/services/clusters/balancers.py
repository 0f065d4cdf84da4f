"""A tenant cluster's Services of type LoadBalancer, as its VDC's edge gateways hold them.

The cluster's cloud controller (``providers.cloud``) gives each such Service a public IP of the VDC, forwards
its ports to the Service's NodePorts on the ready nodes, and marks the address as the Service's with the
description of the gateway firewall rules that let traffic in (``kube_objects.balancer_description``).
So the gateways say, with no call into the tenant cluster, which addresses serve which Service: what the
cluster's page and the API show. A Service still waiting for its address (beyond the VDC's ``publicIps``
quota, say) is not on a gateway yet, and is the tenant cluster's to tell (``kubectl get services``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from orchestrator.models.gateways import PortForward
from orchestrator.services.context import Context
from orchestrator.services.gateways import store
from orchestrator.sources.kube_objects import balancer_named


@dataclass(frozen=True)
class Port:
    """A port of the Service on its address, and the NodePort it is forwarded to on each ready node."""

    protocol: str
    port: int
    node_port: int


@dataclass(frozen=True)
class LoadBalancer:
    """A LoadBalancer Service of the cluster: its public address in a zone, its ports, the nodes they
    are forwarded to, and the source ranges allowed in (anywhere unless ``loadBalancerSourceRanges``)."""

    namespace: str
    name: str
    zone: str
    address: str
    ports: tuple[Port, ...]
    nodes: tuple[str, ...]
    source_ranges: tuple[str, ...]

    @property
    def service(self) -> str:
        return f"{self.namespace}/{self.name}"


def _address(destination: str) -> str | None:
    """The one address a rule's destination names (``a.b.c.d/32``), else None."""
    try:
        network = ipaddress.IPv4Network(destination, strict=False)
    except ValueError:
        return None
    return str(network.network_address) if network.prefixlen == network.max_prefixlen else None


def load_balancers(ctx: Context, vdc: str, cluster: str) -> list[LoadBalancer]:
    """The LoadBalancer Services of ``vdc``'s cluster ``cluster`` that have their address, by namespace
    and name (the gateways read once per request). The caller has read the cluster, so may see them."""
    found: list[LoadBalancer] = []
    for gateway in store.all_gateways(ctx):
        if gateway.vdc != vdc:
            continue
        held = {ip.address for ip in gateway.public_ips}
        marked: dict[str, tuple[str, str, list[str]]] = {}  # address -> namespace, name, sources
        for rule in gateway.rules:
            named = balancer_named(rule.description)
            address = _address(rule.destination)
            if named is None or named[0] != cluster or address not in held:
                continue
            namespace, name, sources = marked.setdefault(address, (named[1], named[2], []))
            if rule.action == "allow":  # with source ranges, a deny of the rest follows them
                sources.append(rule.source)
        for address, (namespace, name, sources) in marked.items():
            forwards = [f for f in gateway.forwards if f.public_ip == address]
            found.append(
                LoadBalancer(
                    namespace=namespace,
                    name=name,
                    zone=gateway.zone,
                    address=address,
                    ports=_ports(forwards),
                    nodes=tuple(sorted({f.to_address for f in forwards}, key=ipaddress.IPv4Address)),
                    source_ranges=tuple(dict.fromkeys(sources)),
                )
            )
    return sorted(found, key=lambda b: (b.namespace, b.name, b.zone))


def _ports(forwards: list[PortForward]) -> tuple[Port, ...]:
    return tuple(
        sorted({Port(f.protocol, f.port, f.to_port) for f in forwards}, key=lambda p: (p.port, p.protocol))
    )
