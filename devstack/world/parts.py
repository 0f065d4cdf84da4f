"""What a world holds (:class:`WorldParts`): its running parts, its agents, its folders and URLs.

The state every part of :class:`~devstack.world.World` shares: the enrollment and systemd side
(:mod:`~devstack.world.agents`) and the orchestrator's (:mod:`~devstack.world.orchestrator`) build
on it. Also :class:`Agent`, an enrolled node's agent as the world runs it, and the seeded users'
access tokens.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agent.release import BuiltRelease
from devstack import seed
from devstack.fakezones import FakeZones
from devstack.gatewaynet import GatewayBridges
from devstack.identity.client import password_token
from devstack.identity.process import IdentityProvider
from devstack.images import ImageServer
from devstack.kube import KubeServer
from devstack.meshnet import DevMesh
from devstack.pki import CertificateAuthority
from devstack.processes import Process
from devstack.registry import Registry
from devstack.world.config import AGENT_PORT, WorldConfig

T = TypeVar("T")


def _running(part: T | None, name: str) -> T:
    if part is None:
        raise RuntimeError(f"{name} is not running")
    return part


@dataclass
class Agent:
    """An enrolled node's agent: its scratch root, its configuration, and the command systemd would run.

    ``env`` adds FLEXPLANE_AGENT_* overrides of its own, as a unit's drop-in would.
    """

    zone: str
    node: str
    address: str
    identity: str
    root: Path
    command: list[str]
    process: Process | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{AGENT_PORT}"

    @property
    def config_path(self) -> Path:
        return self.root / "etc" / "flexplane" / "agent.toml"

    @property
    def restart_request(self) -> Path:
        """The file the agent's service_restart_command touches: the world restarts the agent."""
        return self.root / "run" / "flexplane-agent.restart"

    @property
    def gateway_dir(self) -> Path:
        """Where the node keeps (and its agent restores on start) its edge gateways' specs."""
        return Path(
            self.env.get("FLEXPLANE_AGENT_GATEWAY_DIR", self.root / "var" / "lib" / "flexplane" / "gateways")
        )


@dataclass
class WorldParts:
    """Everything the orchestrator talks to, plus the orchestrator itself."""

    cfg: WorldConfig
    agents: dict[tuple[str, str], Agent] = field(default_factory=dict)
    orchestrator: Process | None = None
    kubeconfig: Path | None = None
    ca: CertificateAuthority | None = None
    enrollment_port: int = 0
    _fakes: FakeZones | None = None
    _kube: KubeServer | None = None
    _identity: IdentityProvider | None = None
    _images: ImageServer | None = None
    _processes: list[Process] = field(default_factory=list)
    release: BuiltRelease | None = None
    registry: Registry | None = None
    # The stand-in for systemd: agents start, stop and restart under this lock, restarts in a thread.
    _agents_lock: threading.RLock = field(default_factory=threading.RLock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _restarter: threading.Thread | None = None
    mesh: DevMesh | None = None
    gateway_bridges: GatewayBridges | None = None
    # The orchestrator's SECRET_KEY, new for each world (it signs the portal's sessions and the task ids).
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))

    @property
    def fakes(self) -> FakeZones:
        """The fake Proxmox zones (to seed, inspect or break them)."""
        return _running(self._fakes, "the fake zones")

    @property
    def kube(self) -> KubeServer:
        return _running(self._kube, "the Kubernetes emulator")

    @property
    def identity(self) -> IdentityProvider:
        return _running(self._identity, "the identity provider")

    @property
    def images(self) -> ImageServer:
        """The image server on loopback that the catalog's images point at (allowlisted for the agents)."""
        return _running(self._images, "the image server")

    @property
    def pki(self) -> Path:
        return self.cfg.scratch / "pki"

    @property
    def releases(self) -> Path:
        """The release channel's folder (FLEXPLANE_AGENT_RELEASES_DIR)."""
        return self.cfg.scratch / "releases"

    @property
    def release_keys(self) -> tuple[Path, Path]:
        """The release signing key and its public key (FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY)."""
        folder = self.pki / "release"
        return folder / "release-signing.pem", folder / "release-public.pem"

    @property
    def url(self) -> str:
        return f"http://{self.cfg.orchestrator_host}:{self.cfg.orchestrator_port}"

    @property
    def https_url(self) -> str:
        """The orchestrator's HTTPS endpoint (certificate of the dev CA), where nodes enroll and renew."""
        return f"https://{self.cfg.orchestrator_host}:{self.enrollment_port}"

    # ------------------------------------------------------------------ use

    def token(self, username: str) -> str:
        """An access token for a seeded user, from the identity provider."""
        user = next(u for u in seed.USERS if u["username"] == username)
        return password_token(self.identity.issuer, username, user["password"])

    def describe(self) -> dict[str, Any]:
        """What ``python -m devstack token`` needs from a running devstack."""
        assert self.identity is not None
        return {
            "url": self.url,
            "issuer": self.identity.issuer,
            "users": {u["username"]: u["password"] for u in seed.USERS},
        }
