"""Edge gateways: a VDC's way out of its networks in a zone (NAT, public IPs, port forwards, firewall).

A VDC has at most one gateway per zone, made on demand: by ``create_edge_gateway``, or by the first
public IP allocated there. Its desired state is a ConfigMap (``store``); every change is made under the
VDC's lock, written at the version read, and then sent to the host that runs it (``node``: placement,
moves, what a host that does not answer means). Addresses come from the zone's public pool, never handed
out twice (``changes``).

Who may do what: a USER member of the VDC (or ADMIN) acts in the VDC the request names; another VDC's
gateway or public IP is reported exactly as one that does not exist (a public IP of another VDC, where
one is named as input, is INVALID naming the field, as a made-up one is).

- ``reads``: the gateways and public IPs of the VDCs the request may see, and what a VDC holds;
- ``changes``: a gateway made, deleted, following the VDC's networks, its firewall rules;
- ``public_ips``: public IPs handed out and given back, their 1:1 NAT and port forwards;
- ``inputs``: what a change is given, checked; ``store``, ``node``: the desired state and the hosts;
- ``reconcile``: each gateway kept running on a host (``manage.py reconcile_gateways``);
- ``targets``: what the portal offers and shows of VMs.
"""

from orchestrator.services.gateways.changes import (
    POOL_LEASE_PREFIX,
    Edit,
    add_firewall_rule,
    create_edge_gateway,
    delete_edge_gateway,
    delete_vdc_gateways,
    follow_networks,
    remove_firewall_rule,
)
from orchestrator.services.gateways.inputs import ForwardRequest
from orchestrator.services.gateways.public_ips import (
    add_port_forward,
    allocate_public_ip,
    attach_public_ip,
    detach_public_ip,
    release_public_ip,
    remove_port_forward,
)
from orchestrator.services.gateways.reads import (
    EdgeGateway,
    PublicAddress,
    edge_gateway,
    gateway_zones,
    list_edge_gateways,
    list_public_ips,
    live,
    public_ips_used,
)

__all__ = [
    "POOL_LEASE_PREFIX",
    "EdgeGateway",
    "Edit",
    "ForwardRequest",
    "PublicAddress",
    "add_firewall_rule",
    "add_port_forward",
    "allocate_public_ip",
    "attach_public_ip",
    "create_edge_gateway",
    "delete_edge_gateway",
    "delete_vdc_gateways",
    "detach_public_ip",
    "edge_gateway",
    "follow_networks",
    "gateway_zones",
    "list_edge_gateways",
    "list_public_ips",
    "live",
    "public_ips_used",
    "release_public_ip",
    "remove_firewall_rule",
    "remove_port_forward",
]
