"""The names agents are known by, and what a caller dials (``AgentTarget``).

Every agent presents a certificate whose subject alternative name (DNSName) is its
host identity, ``<node>.<zone>.agents.flexplane``. Callers dial an agent's address
and check, during the TLS handshake, that its certificate names the host they meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

AGENTS_DOMAIN = "agents.flexplane"

# An RFC 1123 label: letters, digits and inner hyphens, 1 to 63 characters (a part of a host's name).
DNS_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# The same in lowercase, as Kubernetes names are: the names flex.plane gives and takes (zones, nodes,
# VDCs, VMs, Proxmox pools after their prefix). The one definition of both, for the agent and the rest.
LOWER_DNS_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_LABEL = re.compile(DNS_LABEL)


@dataclass(frozen=True)
class AgentTarget:
    """An agent to call: the identity its certificate must name, and the address to dial."""

    identity: str
    address: str

    def __str__(self) -> str:
        return f"{self.identity} ({self.address})"


def is_dns_label(value: str) -> bool:
    """Whether value is a single DNS label (RFC 1123): what zones and nodes must be."""
    return _LABEL.fullmatch(value) is not None


def check_dns_label(kind: str, value: str) -> str:
    """Return value if it is a DNS label, else raise ValueError naming kind (e.g. "zone")."""
    if not isinstance(value, str) or not is_dns_label(value):
        raise ValueError(f"{kind} {value!r} is not a DNS label: use 1 to 63 letters, digits or inner hyphens")
    return value


def host_identity(zone: str, node: str) -> str:
    """The DNS name an agent's certificate names: ``<node>.<zone>.agents.flexplane``.

    Raises ValueError when zone or node is not a DNS label.
    """
    check_dns_label("zone", zone)
    check_dns_label("node", node)
    return f"{node}.{zone}.{AGENTS_DOMAIN}"
