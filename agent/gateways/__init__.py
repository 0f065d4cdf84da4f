"""Edge gateways on the node: a VDC's way out of its networks (NAT, public IPs, port forwards, firewall).

Each gateway the orchestrator applies (:mod:`agentclient.gateways` says what a spec holds) runs in a
network namespace of its own, with a veth leg on each of the VDC's VNet bridges and one on the
external bridge, routed by the kernel and filtered and translated by one nftables ruleset
(:mod:`~agent.gateways.rules`). :mod:`~agent.gateways.net` builds the namespace with the ``ip`` tool,
:mod:`~agent.gateways.manager` applies specs all or nothing, keeps the last one per gateway and
restores them on start, :mod:`~agent.gateways.service` is the gRPC service. The data path needs
neither the agent nor the orchestrator: it keeps forwarding when the agent stops.

A node needs ``nft`` (Debian's nftables) and ``ip`` (iproute2), and the agent runs as root.
"""

from agent.gateways.manager import ApplyFailed, GatewayManager
from agent.gateways.service import GatewaysServicer

__all__ = ["ApplyFailed", "GatewayManager", "GatewaysServicer"]
