"""A VDC's networks: Proxmox SDN VNets, one IPv4 subnet each, in the zones the VDC may use.

Every VDC has a network named ``default`` in each of its zones (made with the VDC, or by the first
create of a VM that finds none, for VDCs older than networks); a VM created without naming networks
gets a NIC on it.

- ``reads``: the networks as read (one SDN read per zone), for a request or, under the VDC's lock, now;
- ``inputs``: what a create is given, checked against the zone;
- ``sdn``: networks written to the zone's SDN and applied, all or none, and the zone's network ids;
- ``defaults``: a VDC's default networks, and its networks removed with a zone or with it;
- ``changes``: ``create_network``, ``delete_network``, followed into the firewalls and the gateway;
- ``nics``, ``attach``: a VM's NICs on the networks.

Which way the imports run: the gateways and the security groups read the networks through ``reads``
(never through this package, whose ``changes`` follow a change into them).
"""

from orchestrator.services.networks.changes import create_network, delete_network
from orchestrator.services.networks.defaults import (
    default_network,
    default_plan,
    delete_vdc_networks,
    ensure_default_networks,
)
from orchestrator.services.networks.inputs import CreateNetwork, NetworkPlan, validate
from orchestrator.services.networks.reads import fresh_networks, get_network, list_networks, vdc_networks
from orchestrator.services.networks.sdn import (
    APPLY_TIMEOUT,
    PLATFORM_RESERVE_SHARE,
    free_tag,
    make,
    platform_reserve,
    remove,
)

__all__ = [
    "APPLY_TIMEOUT",
    "PLATFORM_RESERVE_SHARE",
    "CreateNetwork",
    "NetworkPlan",
    "create_network",
    "default_network",
    "default_plan",
    "delete_network",
    "delete_vdc_networks",
    "ensure_default_networks",
    "free_tag",
    "fresh_networks",
    "get_network",
    "list_networks",
    "make",
    "platform_reserve",
    "remove",
    "validate",
    "vdc_networks",
]
