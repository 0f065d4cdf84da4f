"""What a VDC's topology shows, read in one pass through the services the lists read: its networks
(``services.networks``: one SDN read per zone, the zones in parallel), its VMs with the networks they have
a NIC on (``services.inventory``: one ``/cluster/resources`` per zone, in parallel; a NIC's network and
address are the VM's address tags, never its config), its gateways with their public IPs and forwards
(``services.gateways``: one read of the management cluster) and its clusters (``services.clusters``: five
lists of its namespace, and one of its Machines when it has clusters: a worker VM bears its Machine's name).

No VM is read on its own. A zone that did not answer within the reads' deadline is reported on the
request's context (the page's banner names it): it is shown as unavailable, and the other zones are drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse

from orchestrator.errors import FlexPlaneError
from orchestrator.models import Vdc
from orchestrator.models.clusters import MACHINE, KubernetesCluster, namespace_of
from orchestrator.models.networks import Network, addresses_in, network_id
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import clusters, gateways, inventory, networks
from orchestrator.services.clusters import reads as cluster_reads
from orchestrator.services.context import Context
from orchestrator.services.gateways import PublicAddress
from portal.errors import PAGE_ERRORS
from portal.topology.layout import (
    ClusterFact,
    Drawing,
    GatewayFact,
    GatewayLine,
    MachineFact,
    NetworkFact,
    ZoneFacts,
    layout,
    ordered,
)


@dataclass(frozen=True)
class Member:
    """A VM on a network, for the text alternative: the VM and its address there."""

    machine: MachineFact
    address: str


@dataclass
class ZoneView:
    """One zone of the page: what it holds and its drawing; ``available`` False when it did not answer."""

    zone: str
    available: bool
    facts: ZoneFacts = field(default_factory=lambda: ZoneFacts(""))
    drawing: Drawing | None = None
    # Each network's VMs (network id -> members) and the VMs on none, for the list beside the drawing.
    members: dict[str, list[Member]] = field(default_factory=dict)
    unattached: list[MachineFact] = field(default_factory=list)

    @property
    def networks(self) -> list[tuple[NetworkFact, list[Member]]]:
        return [(n, self.members.get(n.id, [])) for n in self.facts.networks]


@dataclass
class Topology:
    """The VDC's zones, in its order, and its clusters; ``clusters_problem``: why they could not be read."""

    zones: list[ZoneView]
    clusters: list[KubernetesCluster]
    clusters_problem: str = ""


def _vms(ctx: Context, vdc: Vdc) -> dict[str, list[VirtualMachine]]:
    """The VDC's VMs (its pool's members) by zone, with their tags, from this request's one
    ``/cluster/resources`` per zone."""
    found: dict[str, list[VirtualMachine]] = {}
    for zone, guests in inventory.zone_resources(ctx).guests.items():
        found[zone] = [VirtualMachine.from_guest(zone, g) for g in guests if g.pool == vdc.pool]
    return found


def _cluster_nodes(ctx: Context, vdc: Vdc, found: list[KubernetesCluster]) -> dict[str, str]:
    """VM name -> the cluster it is a worker of: one list of the VDC's Machines (a worker VM bears its
    Machine's name), and none when it has no cluster."""
    if not found:
        return {}
    machines = cluster_reads.read(ctx, [namespace_of(vdc.id)], kinds=(MACHINE,)).of(MACHINE)
    return {m.name: m.cluster for m in machines if m.cluster}


def _gateway_lines(addresses: list[PublicAddress], names: dict[str, str], vdc: str) -> list[GatewayLine]:
    ips, forwards = reverse("public-ip-list", args=[vdc]), reverse("port-forward-list", args=[vdc])
    lines: list[GatewayLine] = []
    for ip in addresses:
        if ip.nat_to:
            to = f"{names[ip.nat_to]} ({ip.nat_to})" if ip.nat_to in names else ip.nat_to
            lines.append(GatewayLine(f"{ip.address} → {to}, 1:1 NAT", ips))
        else:
            lines.append(GatewayLine(f"{ip.address}: public IP, no 1:1 NAT", ips))
        for f in ip.forwards:
            to = f"{names[f.to_address]} " if f.to_address in names else ""
            lines.append(
                GatewayLine(f"{ip.address}:{f.port}/{f.protocol} → {to}{f.to_address}:{f.to_port}", forwards)
            )
    return lines


def _network(network: Network, vdc: str) -> NetworkFact:
    return NetworkFact(network.id, network.name, network.cidr, reverse("network-list", args=[vdc]))


def _machine(vm: VirtualMachine, vdc: str, cluster: str | None) -> MachineFact:
    return MachineFact(
        vm.id,
        vm.name,
        vm.status,
        reverse("vm-detail", args=[vdc, vm.zone, vm.vmid]),
        tuple((network_id(vm.zone, vnet), str(address)) for vnet, address in addresses_in(vm.tags)),
        cluster,
        vm.lock,
    )


def topology(ctx: Context, vdc: Vdc) -> Topology:
    """The VDC's topology, zone by zone (see the module's docstring)."""
    found_networks = networks.vdc_networks(ctx, vdc)
    vms = _vms(ctx, vdc)
    edge = {g.gateway.zone: g.gateway for g in gateways.list_edge_gateways(ctx) if g.gateway.vdc == vdc.id}
    public = [ip for ip in gateways.list_public_ips(ctx) if ip.vdc == vdc.id]
    problem = ""
    try:
        found_clusters = clusters.list_clusters(ctx)
        nodes = _cluster_nodes(ctx, vdc, found_clusters)
    except PAGE_ERRORS:
        raise
    except FlexPlaneError as exc:  # the rest is still worth drawing
        found_clusters, nodes, problem = [], {}, exc.message
    down = {failure.where for failure in ctx.unavailable}
    cluster_facts = {
        c.name: ClusterFact(c.name, c.phase, reverse("cluster-detail", args=[vdc.id, c.name]), c.network)
        for c in found_clusters
    }
    with_nodes = {
        (vm.zone, nodes[vm.name]) for machines in vms.values() for vm in machines if vm.name in nodes
    }
    zones: list[ZoneView] = []
    for zone in vdc.zones:
        if zone in down or zone not in vms:
            zones.append(ZoneView(zone, available=False))
            continue
        machines = [_machine(vm, vdc.id, nodes.get(vm.name)) for vm in vms[zone]]
        names = {address: m.name for m in machines for _, address in m.addresses}
        gateway = edge.get(zone)
        gateway_fact = None
        if gateway is not None:
            lines = _gateway_lines([ip for ip in public if ip.zone == zone], names, vdc.id)
            gateway_fact = GatewayFact(
                gateway.uplink_address,
                reverse("gateway-firewall", args=[vdc.id]),
                tuple(leg.network for leg in gateway.legs),
                tuple(lines),
                reverse("public-ip-list", args=[vdc.id]),
            )
        here = [
            fact
            for name, fact in cluster_facts.items()
            if (zone, name) in with_nodes
            or (not any(n == name for _, n in with_nodes) and fact.network.partition("/")[0] == zone)
        ]
        facts = ZoneFacts(
            zone,
            tuple(ordered(_network(n, vdc.id) for n in found_networks if n.zone == zone)),
            tuple(machines),
            tuple(here),
            gateway_fact,
        )
        view = ZoneView(zone, True, facts, layout(facts))
        known = {n.id for n in facts.networks}
        for machine in sorted(machines, key=lambda m: m.name):
            on = [(n, a) for n, a in machine.addresses if n in known]
            for network, address in on:
                view.members.setdefault(network, []).append(Member(machine, address))
            if not on:
                view.unattached.append(machine)
        zones.append(view)
    return Topology(zones, found_clusters, problem)
