"""A tenant cluster's Services of type LoadBalancer, as its VDC's edge gateways hold them.

The cluster's cloud controller (``providers.cloud``) gives each such Service a public IP of the VDC, forwards
its ports to the Service's NodePorts on the ready nodes, and marks the address as the Service's with the
description of the gateway firewall rules that let traffic in (``kube_objects.balancer_description``).
So the gateways say, with no call into the tenant cluster, which addresses serve which Service: what the
cluster's page and the API show. A Service still waiting for its address (beyond the VDC's ``publicIps``
quota, say) is not on a gateway yet, and is the tenant cluster's to tell (``kubectl get services``).

When the cluster is deleted, ``release_all`` gives its addresses back (with their forwards) and removes
the rules that marked them: its controller, revoked with it, could no longer do so. The controller runs on
until its control plane's namespace is gone, with a token minted before the revocation, and may take an
address meanwhile; ``sweep`` (each pass of the gateway reconciler) gives back what gateways still hold for
clusters that no longer exist.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, replace

from orchestrator.errors import FlexPlaneError
from orchestrator.models.clusters import CLUSTER, namespace_of, vdc_of
from orchestrator.models.gateways import FirewallRule, Gateway, PortForward
from orchestrator.services import access, gateways
from orchestrator.services.clusters import reads
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


@dataclass(frozen=True)
class _Marked:
    """An address ``gateway`` holds for a Service of the cluster: the Service, and the rules marking it."""

    address: str
    namespace: str
    name: str
    rules: tuple[FirewallRule, ...]


def _marks(rule: FirewallRule, cluster: str) -> tuple[str, str] | None:
    """The Service (namespace, name) of ``cluster`` that ``rule`` marks its destination for, else None."""
    named = balancer_named(rule.description)
    return named[1:] if named is not None and named[0] == cluster else None


def _marked(gateway: Gateway, cluster: str) -> list[_Marked]:
    """The addresses ``gateway`` holds (as public IPs) for ``cluster``'s Services, in its rules' order."""
    held = {ip.address for ip in gateway.public_ips}
    found: dict[str, _Marked] = {}
    for rule in gateway.rules:
        service, address = _marks(rule, cluster), _address(rule.destination)
        if service is None or address is None or address not in held:
            continue
        if address in found:
            found[address] = replace(found[address], rules=(*found[address].rules, rule))
        else:
            found[address] = _Marked(address, *service, (rule,))
    return list(found.values())


def load_balancers(ctx: Context, vdc: str, cluster: str) -> list[LoadBalancer]:
    """The LoadBalancer Services of ``vdc``'s cluster ``cluster`` that have their address, by namespace
    and name (the gateways read once per request). The caller has read the cluster, so may see them."""
    found: list[LoadBalancer] = []
    for gateway in store.all_gateways(ctx):
        if gateway.vdc != vdc:
            continue
        for marked in _marked(gateway, cluster):
            forwards = [f for f in gateway.forwards if f.public_ip == marked.address]
            # With source ranges, a deny of the rest follows their allow rules: the allowed are the sources.
            sources = (r.source for r in marked.rules if r.action == "allow")
            found.append(
                LoadBalancer(
                    namespace=marked.namespace,
                    name=marked.name,
                    zone=gateway.zone,
                    address=marked.address,
                    ports=_ports(forwards),
                    nodes=tuple(sorted({f.to_address for f in forwards}, key=ipaddress.IPv4Address)),
                    source_ranges=tuple(dict.fromkeys(sources)),
                )
            )
    return sorted(found, key=lambda b: (b.namespace, b.name, b.zone))


def sweep(ctx: Context) -> dict[tuple[str, str], list[str]]:
    """Give back the addresses the gateways hold for clusters that are gone (``release_all`` for each),
    keyed by (VDC, cluster), with what could not be done. ADMIN (the gateway reconciler's pass).

    The gateways are read before the clusters: a cluster marks an address only once it exists, so one
    listed afterwards is never taken for gone. A cluster being deleted still exists (its delete releases
    what it holds; what it takes after that is swept once it is gone)."""
    access.require_admin(ctx)
    marked = {
        (gateway.vdc, named[0])
        for gateway in store.everything(ctx)
        for rule in gateway.rules
        if (named := balancer_named(rule.description)) is not None
    }
    if not marked:
        return {}
    vdcs = sorted({vdc for vdc, _ in marked})
    found = reads.read(ctx, [namespace_of(vdc) for vdc in vdcs], kinds=(CLUSTER,))
    present = {(vdc_of(c.namespace) or "", c.name) for c in found.of(CLUSTER)}
    swept: dict[tuple[str, str], list[str]] = {}
    for vdc, cluster in sorted(marked - present):
        logger.warning(
            "cluster %s of VDC %s is gone: giving back the addresses its Services held", cluster, vdc
        )
        in_vdc = Context(principal=ctx.principal, vdc=vdc, sources=ctx.sources)  # as the cluster's delete
        swept[(vdc, cluster)] = release_all(in_vdc, vdc, cluster)
    return swept


def _ports(forwards: list[PortForward]) -> tuple[Port, ...]:
    return tuple(
        sorted({Port(f.protocol, f.port, f.to_port) for f in forwards}, key=lambda p: (p.port, p.protocol))
    )


def release_all(ctx: Context, vdc: str, cluster: str) -> list[str]:
    """Give back every address the gateways of ``vdc`` hold for ``cluster``'s Services, and remove the
    rules that mark them; what could not be done, as failures to report (each gateway on its own).

    A change recorded while the gateway's host does not answer is done: the gateway reconciler sends it
    on. So what counts is the gateway as it is stored afterwards, not the answer of each change."""

    def unmarked(current: Gateway, _all: object) -> tuple[Gateway, None]:
        return replace(current, rules=tuple(r for r in current.rules if _marks(r, cluster) is None)), None

    failures: list[str] = []
    for gateway in store.everything(ctx):
        if gateway.vdc != vdc or not any(_marks(r, cluster) for r in gateway.rules):
            continue
        said: list[str] = []
        for marked in _marked(gateway, cluster):
            try:
                gateways.release_public_ip(ctx, marked.address)
            except FlexPlaneError as exc:
                said.append(exc.message)
        try:
            changes.change_gateway(ctx, gateway.zone, unmarked, create=False)
        except FlexPlaneError as exc:
            said.append(exc.message)
        after = store.load(ctx, vdc, gateway.zone)
        left = [r for r in after.rules if _marks(r, cluster)] if after is not None else []
        if left:
            held = ", ".join(m.address for m in _marked(after, cluster)) if after is not None else ""
            what = held or f"{len(left)} rule(s)"
            failures.append(
                f"the load balancers' {what} on the edge gateway in zone {gateway.zone}: {'; '.join(said)}"
            )
        elif said:
            logger.warning("cluster %s's load balancers released in zone %s: %s", cluster, gateway.zone, said)
    return failures
