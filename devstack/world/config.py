"""What a world is asked to be (:class:`WorldConfig`: subnet, zones, nodes, options) and its fixed names.

Every address of a world is 127.<subnet>.x.y on loopback, so that several worlds (make dev, the
tests' workers) can run side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The checkout's root (where the agent's bootstrap runs, and make dev keeps its scratch folder).
ROOT = Path(__file__).resolve().parents[2]
AGENT_PORT = 7443
# The world's registry listens on an address of its own: the same port for every world (not the
# package's 5000, which its service, where systemd starts it, holds on every address).
REGISTRY_PORT = 5443
ORCHESTRATOR_CLIENT_CN = "flexplane-orchestrator"
# The Cluster API providers' client certificate for the agents (the agents accept it by default).
PROVIDERS_CLIENT_CN = "flexplane-capi"
# The third octet of the addresses the LoadBalancer stand-in gives hosted control planes: 127.<subnet>.90.x.
PROVIDERS_LB_OCTET = 90
# The platform CA Secret's name: the orchestrator's default (FLEXPLANE_AGENT_CA_SECRET).
AGENT_CA_SECRET = "flexplane-agent-ca"


@dataclass(frozen=True)
class WorldConfig:
    scratch: Path
    # Every address is 127.<subnet>.x.y, so that several worlds (make dev, the tests) can coexist.
    subnet: int = 10
    zones: tuple[str, ...] = ("zone-a", "zone-b")
    nodes_per_zone: int = 3
    orchestrator_host: str = "127.0.0.1"
    orchestrator_port: int = 8000
    # The orchestrator's HTTPS port, where nodes enroll; 0: any free port (tests).
    enrollment_port: int = 0
    # 0: any free port (tests); the devstack keeps its issuer URL stable across restarts.
    identity_port: int = 0
    seed_guests: bool = True
    # Extra FLEXPLANE_* settings for the orchestrator (without the prefix), e.g. shorter deadlines in tests.
    orchestrator_settings: tuple[tuple[str, str], ...] = ()
    # Seconds between an agent's checks of the release channel (a node's default is an hour).
    agent_update_interval: float = 60.0
    # Every node in a network namespace of its own, reached over the WireGuard mesh (root only).
    mesh: bool = False
    # Agent releases published to an OCI registry of the world's own (devstack/registry.py), as a site
    # does (relayed into a mesh world's node namespaces); False: the channel's folder serves them.
    release_registry: bool = True
    # The Cluster API providers (python -m providers) and the stand-ins they need: Cluster API core and
    # CABPK (devstack/capi_core.py), the LoadBalancer controller and the hosted control planes' pods
    # (devstack/hosted_control_plane.py). See devstack/world/providers.py.
    providers: bool = False
    # Extra FLEXPLANE_PROVIDERS_* settings for the providers (without the prefix).
    providers_settings: tuple[tuple[str, str], ...] = ()

    def node_address(self, zone_index: int, node_index: int) -> str:
        return f"127.{self.subnet}.{zone_index + 1}.{node_index + 1}"

    @property
    def identity_host(self) -> str:
        return f"127.{self.subnet}.0.2"

    @property
    def kube_host(self) -> str:
        return f"127.{self.subnet}.0.3"

    @property
    def images_host(self) -> str:
        return f"127.{self.subnet}.0.4"

    @property
    def registry_host(self) -> str:
        return f"127.{self.subnet}.0.5"
