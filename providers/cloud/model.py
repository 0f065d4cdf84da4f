"""What the cloud controller wants of a tenant cluster and of its VDC's gateway, as pure functions.

Nothing here calls anything: the reconcilers (``nodes``, ``balancers``) read the tenant cluster and
flex.plane, ask these functions what should be, and make the difference. So the whole decision is
tested without either, and a pass that finds the world as wanted changes nothing.

**The provider ID is ``proxmox://<the VM's SMBIOS uuid>``**, the infrastructure provider's own
(``providers.infrastructure.spec.provider_id``): Cluster API links a Machine to its Node by equal
provider IDs, and the kubelets of flex.plane's node pools already report that one (``provider-id`` in
the KubeadmConfigTemplate, from the VM's cloud-init ``instance-id``). Another scheme (``flexplane://
<zone>/<vmid>``) would never match a Machine, and a Node's provider ID cannot change once set. The
controller writes it only where the kubelet left it empty, and never replaces one.

**What the controller made on the gateway is recognised by its firewall rules.** The API labels
neither public IPs nor port forwards; firewall rules carry a description. Every address the controller
holds for a Service has rules whose description is :func:`owner` (``k8s-lb <cluster> <ns>/<name>``)
and whose destination is the address: the allow rules of its ports (from each of
``loadBalancerSourceRanges``, or from anywhere), and with source ranges a deny of the rest. So the
gateway itself says which addresses belong to which Service of which cluster, and the controller keeps
no state: the forwards of such an address are the Service's, and an address whose Service is gone is
released.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.sources.kube_objects import balancer_description, balancer_named

Body = dict[str, Any]

PROVIDER_ID_PREFIX = "proxmox://"
UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized"
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# Kubernetes' label keeping a node out of load balancers' backends.
EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
ANYWHERE = "0.0.0.0/0"
PROTOCOLS = {"TCP": "tcp", "UDP": "udp"}


# ---------------------------------------------------------------------------------------------- nodes


@dataclass(frozen=True)
class Machine:
    """A VM of the VDC as a node needs it: where it runs, its profile, and (read per VM) its SMBIOS
    uuid and NIC addresses."""

    id: str
    name: str
    zone: str
    host: str
    compute_profile: str | None = None
    smbios_uuid: str | None = None
    addresses: tuple[str, ...] = ()


def provider_id(smbios_uuid: str) -> str:
    return PROVIDER_ID_PREFIX + smbios_uuid.lower()


def labels_of(machine: Machine) -> dict[str, str]:
    """Region the flex.plane zone, zone the Proxmox host, instance type the compute profile."""
    labels = {REGION_LABEL: machine.zone, ZONE_LABEL: machine.host}
    if machine.compute_profile:
        labels[INSTANCE_TYPE_LABEL] = machine.compute_profile
    return labels


def taints_of(node: Mapping[str, Any]) -> list[Body]:
    return list((node.get("spec") or {}).get("taints") or [])


def uninitialized(node: Mapping[str, Any]) -> bool:
    return any(t.get("key") == UNINITIALIZED_TAINT for t in taints_of(node))


def needs_details(node: Mapping[str, Any]) -> bool:
    """Whether initializing the node needs the VM's config read (its uuid, its NICs): only while the
    taint is on or the provider ID missing, so a pass reads no config of a settled node."""
    return uninitialized(node) or not (node.get("spec") or {}).get("providerID")


def node_patch(node: Mapping[str, Any], machine: Machine, *, initialize: bool) -> Body | None:
    """The merge patch of the Node's labels, provider ID and taints; None when nothing differs.

    Labels follow the VM every pass (a migration changes its host); ``initialize`` (the VM's details
    were read) also sets a missing provider ID and lifts the taint."""
    meta = node.get("metadata") or {}
    current = meta.get("labels") or {}
    patch: Body = {}
    labels = {k: v for k, v in labels_of(machine).items() if current.get(k) != v}
    if labels:
        patch["metadata"] = {"labels": labels}
    if initialize:
        spec: Body = {}
        if not (node.get("spec") or {}).get("providerID") and machine.smbios_uuid:
            spec["providerID"] = provider_id(machine.smbios_uuid)
        if uninitialized(node):
            spec["taints"] = [t for t in taints_of(node) if t.get("key") != UNINITIALIZED_TAINT] or None
        if spec:
            patch["spec"] = spec
    return patch or None


def addresses_of(node_name: str, machine: Machine) -> list[Body]:
    """The Node's addresses: each NIC's as an InternalIP (the VMs sit on the VDC's private networks;
    their public side is the gateway's), then its name as Hostname."""
    found = [{"type": "InternalIP", "address": a} for a in machine.addresses]
    return [*found, {"type": "Hostname", "address": node_name}]


def status_patch(node: Mapping[str, Any], machine: Machine) -> Body | None:
    """The merge patch of the Node's addresses; None when they are as wanted (or the VM has none)."""
    if not machine.addresses:
        return None
    name = str((node.get("metadata") or {}).get("name"))
    wanted = addresses_of(name, machine)
    if ((node.get("status") or {}).get("addresses") or []) == wanted:
        return None
    return {"status": {"addresses": wanted}}


def ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def internal_ip(node: Mapping[str, Any]) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return None


def backend(node: Mapping[str, Any]) -> str | None:
    """The address a load balancer may send to: a ready, initialized node not excluded, not going away."""
    meta = node.get("metadata") or {}
    if meta.get("deletionTimestamp") or EXCLUDE_LABEL in (meta.get("labels") or {}):
        return None
    if not ready(node) or uninitialized(node):
        return None
    return internal_ip(node)


# ------------------------------------------------------------------------------------- load balancers


@dataclass(frozen=True)
class Port:
    protocol: str  # tcp or udp
    port: int
    node_port: int


@dataclass(frozen=True)
class Balancer:
    """A Service of type LoadBalancer as the gateway serves it."""

    namespace: str
    name: str
    ports: tuple[Port, ...]
    source_ranges: tuple[str, ...] = ()
    # Whether the Service names source ranges at all (all of them IPv6 still restricts: to nothing).
    restricted: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


def balancer_of(service: Mapping[str, Any]) -> Balancer | None:
    """The Service's balancer: a LoadBalancer with no other class, not being deleted; None otherwise.
    Ports without a NodePort (not allocated yet) or of SCTP are left out."""
    meta = service.get("metadata") or {}
    spec = service.get("spec") or {}
    if spec.get("type") != "LoadBalancer" or spec.get("loadBalancerClass") or meta.get("deletionTimestamp"):
        return None
    ports = tuple(
        Port(PROTOCOLS[str(p.get("protocol") or "TCP")], int(p["port"]), int(p["nodePort"]))
        for p in spec.get("ports") or []
        if p.get("nodePort") and str(p.get("protocol") or "TCP") in PROTOCOLS
    )
    given = list(spec.get("loadBalancerSourceRanges") or [])
    return Balancer(
        str(meta.get("namespace")), str(meta.get("name")), ports, source_ranges(given), bool(given)
    )


def source_ranges(values: Sequence[Any]) -> tuple[str, ...]:
    """The IPv4 CIDRs of ``loadBalancerSourceRanges``, normalised; others (IPv6: the gateway is IPv4 only)
    left out. The Service stays restricted all the same (``Balancer.restricted``)."""
    found = []
    for value in values:
        try:
            found.append(str(ipaddress.IPv4Network(str(value).strip(), strict=False)))
        except ValueError:
            continue
    return tuple(dict.fromkeys(found))


def owner(cluster: str, namespace: str, name: str) -> str:
    """The description of the gateway rules that mark an address as this Service's (the orchestrator
    reads them back for the cluster's page: ``orchestrator.sources.kube_objects.balancer_named``)."""
    return balancer_description(cluster, namespace, name)


def owned_by(description: str, cluster: str) -> tuple[str, str] | None:
    """The Service (namespace, name) of this cluster a rule's description names; None for any other."""
    found = balancer_named(description)
    return found[1:] if found is not None and found[0] == cluster else None


@dataclass(frozen=True)
class Rule:
    """An inbound gateway firewall rule, as compared: CIDRs normalised, ports a range or none."""

    action: str
    protocol: str
    source: str
    destination: str
    port_from: int | None = None
    port_to: int | None = None


def host_cidr(address: str) -> str:
    return str(ipaddress.IPv4Network(f"{address}/32"))


def wanted_rules(balancer: Balancer, address: str) -> list[Rule]:
    """The Service's rules on the gateway, in order: each port allowed from each source range (from
    anywhere without ranges), then, with ranges, everything else to the address denied (a forward's
    connection passes unless a rule before it denies: the gateway's ``inbound`` chain). A Service with
    no port yet still gets the deny: it is what marks the address as held."""
    destination = host_cidr(address)
    sources = balancer.source_ranges if balancer.restricted else (ANYWHERE,)
    rules = [
        Rule("allow", port.protocol, source, destination, port.port, port.port)
        for port in sorted(set(balancer.ports), key=lambda p: (p.protocol, p.port))
        for source in sources
    ]
    if balancer.restricted or not rules:
        rules.append(Rule("deny", "any", ANYWHERE, destination))
    return rules


@dataclass(frozen=True)
class Forward:
    protocol: str
    port: int
    to_address: str
    to_port: int


def _spread(key: str, choices: Sequence[str]) -> str:
    """One of ``choices`` chosen by a stable digest of ``key``: the Services' ports spread over the
    nodes, and the same choice every pass."""
    digest = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    return choices[digest % len(choices)]


def wanted_forwards(balancer: Balancer, backends: Iterable[str], current: Iterable[Forward]) -> list[Forward]:
    """One forward per port of the Service (the gateway forwards a public port to one address) to the
    port's NodePort on a ready node: the node it goes to now while that stays ready (no churn as nodes
    come), else one chosen among the ready nodes. None without a ready node."""
    ready_nodes = sorted(set(backends))
    if not ready_nodes:
        return []
    now = {(f.protocol, f.port): f.to_address for f in current}
    forwards = []
    for port in sorted(set(balancer.ports), key=lambda p: (p.protocol, p.port)):
        kept = now.get((port.protocol, port.port))
        key = f"{balancer.namespace}/{balancer.name}/{port.protocol}/{port.port}"
        target = kept if kept in ready_nodes else _spread(key, ready_nodes)
        forwards.append(Forward(port.protocol, port.port, target, port.node_port))
    return forwards


def ingress_patch(service: Mapping[str, Any], address: str | None) -> Body | None:
    """The merge patch of the Service's ``status.loadBalancer``; None when it already says so."""
    wanted = [{"ip": address}] if address else []
    current = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if [{"ip": i.get("ip")} for i in current] == wanted and len(current) == len(wanted):
        return None
    return {"status": {"loadBalancer": {"ingress": wanted or None}}}
