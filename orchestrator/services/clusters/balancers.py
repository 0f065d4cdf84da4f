"""A tenant cluster's Services of type LoadBalancer, as its VDC's edge gateways hold them.

The cluster's cloud controller (``providers.cloud``) gives each such Service a public IP of the VDC, forwards
its ports to the Service's NodePorts on the ready nodes, and marks the address as the Service's with the
description of the gateway firewall rules that let traffic in (``kube_objects.balancer_description``).
So the gateways say, with no call into the tenant cluster, which addresses serve which Service: what the
cluster's page and the API show. A Service still waiting for its address (beyond the VDC's ``publicIps``
quota, say) is not on a gateway yet, and is the tenant cluster's to tell (``kubectl get services``).

When the cluster is deleted, ``release_all`` gives its addresses back (with their forwards) and removes
the rules that marked them: its controller, revoked with it, could no longer do so.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, replace

from orchestrator.errors import FlexPlaneError
from orchestrator.models.gateways import FirewallRule, Gateway, PortForward
from orchestrator.services import gateways
from orchestrator.services.context import Context
from orchestrator.services.gateways import changes, store
from orchestrator.sources.kube_objects import balancer_named

logger = logging.getLogger(__name__)

# The gateways' modules are used, not names imported from them: this module may be loaded while the
# gateways package itself is still loading (which reaches the clusters through networks, security
# groups and the VMs' quota), when its names are not there yet.


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


def release_all(ctx: Context, vdc: str, cluster: str) -> list[str]:
    """Give back every address the gateways of ``vdc`` hold for ``cluster``'s Services, and remove the
    rules that mark them; what could not be done, as failures to report (each gateway on its own).

    A change recorded while the gateway's host does not answer is done: the gateway reconciler sends it
    on. So what counts is the gateway as it is stored afterwards, not the answer of each change."""
    failures: list[str] = []
    for gateway in store.everything(ctx):
        if gateway.vdc != vdc or not _held_for(gateway, cluster)[1]:
            continue
        said: list[str] = []
        for address in _held_for(gateway, cluster)[0]:
            try:
                gateways.release_public_ip(ctx, address)
            except FlexPlaneError as exc:
                said.append(exc.message)

        def unmarked(current: Gateway, _all: object) -> tuple[Gateway, None]:
            kept = tuple(r for r in current.rules if not _marks(r.description, cluster))
            return replace(current, rules=kept), None

        try:
            changes.change_gateway(ctx, gateway.zone, unmarked, create=False)
        except FlexPlaneError as exc:
            said.append(exc.message)
        after = store.load(ctx, vdc, gateway.zone)
        addresses, rules = _held_for(after, cluster) if after is not None else ([], [])
        if addresses or rules:
            what = ", ".join(addresses) or f"{len(rules)} rule(s)"
            failures.append(
                f"the load balancers' {what} on the edge gateway in zone {gateway.zone}: {'; '.join(said)}"
            )
        elif said:
            logger.warning("cluster %s's load balancers released in zone %s: %s", cluster, gateway.zone, said)
    return failures


def _held_for(gateway: Gateway, cluster: str) -> tuple[list[str], list[FirewallRule]]:
    """The addresses ``gateway`` holds for the cluster's Services, and the rules that mark them."""
    rules = [r for r in gateway.rules if _marks(r.description, cluster)]
    held = {ip.address for ip in gateway.public_ips}
    addresses = [
        a for a in dict.fromkeys(_address(r.destination) for r in rules) if a is not None and a in held
    ]
    return addresses, rules


def _marks(description: str, cluster: str) -> bool:
    named = balancer_named(description)
    return named is not None and named[0] == cluster
