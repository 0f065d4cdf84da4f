"""The devstack's world, brought up one way for ``make dev`` and for the tests.

On loopback only: a fake Proxmox cluster per zone (fakepve, one address per node), an agent
process per node (mTLS, certificates of a dev CA made for the run), the Kubernetes emulator
seeded with the platform catalog (zones, hosts, profiles, images and VDCs: a ConfigMap each),
the dev identity provider in its own process, and the orchestrator under daphne.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import requests
from kubernetes import client, config

from agentclient import host_identity
from devstack import seed
from devstack.fakezones import TOKEN_ID, FakeZones
from devstack.identity.client import password_token
from devstack.identity.process import IdentityProvider
from devstack.images import ImageServer
from devstack.kube import KubeServer
from devstack.pki import CertificateAuthority
from orchestrator.sources.kube import config_map

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
AGENT_PORT = 7443
ORCHESTRATOR_CLIENT_CN = "flexplane-orchestrator"


def _running(part: T | None, name: str) -> T:
    if part is None:
        raise RuntimeError(f"{name} is not running")
    return part


@dataclass(frozen=True)
class WorldConfig:
    scratch: Path
    # Every address is 127.<subnet>.x.y, so that several worlds (make dev, the tests) can coexist.
    subnet: int = 10
    zones: tuple[str, ...] = ("zone-a", "zone-b")
    nodes_per_zone: int = 3
    orchestrator_host: str = "127.0.0.1"
    orchestrator_port: int = 8000
    # 0: any free port (tests); the devstack keeps its issuer URL stable across restarts.
    identity_port: int = 0
    seed_guests: bool = True
    # Extra FLEXPLANE_* settings for the orchestrator (without the prefix), e.g. shorter deadlines in tests.
    orchestrator_settings: tuple[tuple[str, str], ...] = ()

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


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it when the devstack process dies, however it dies."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Process:
    """A child process started by the world, with its output in a log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def stop(self, grace: float = 5.0) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(grace)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def spawn(name: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> Process:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        popen = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            preexec_fn=_die_with_parent,
        )
    return Process(name, popen, log)


def wait_for_line(process: Process, needle: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in process.output():
            return
        if process.popen.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"{process.name} did not start ({needle!r} not seen):\n{process.output()[-4000:]}")


@dataclass
class Agent:
    zone: str
    node: str
    address: str
    identity: str
    config_path: Path
    process: Process | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{AGENT_PORT}"


@dataclass
class World:
    """Everything the orchestrator talks to, plus the orchestrator itself."""

    cfg: WorldConfig
    agents: dict[tuple[str, str], Agent] = field(default_factory=dict)
    orchestrator: Process | None = None
    kubeconfig: Path | None = None
    ca: CertificateAuthority | None = None
    _fakes: FakeZones | None = None
    _kube: KubeServer | None = None
    _identity: IdentityProvider | None = None
    _images: ImageServer | None = None
    _processes: list[Process] = field(default_factory=list)

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

    # ------------------------------------------------------------------ bring up

    def start(self, *, orchestrator: bool = True) -> World:
        try:
            self._start(orchestrator)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, orchestrator: bool) -> None:
        cfg = self.cfg
        cfg.scratch.mkdir(parents=True, exist_ok=True)
        pki = cfg.scratch / "pki"
        self.ca = CertificateAuthority.create(pki / "ca")

        zones = {
            zone: {f"pve{n + 1}": cfg.node_address(z, n) for n in range(cfg.nodes_per_zone)}
            for z, zone in enumerate(cfg.zones)
        }
        token_secrets = {zone: secrets.token_hex(16) for zone in zones}
        self._fakes = FakeZones(zones, token_secrets, pki / "fakepve")
        for zone in zones:
            seed.seed_pools(self._fakes[zone].pve, zone)
            if cfg.seed_guests:
                seed.seed_guests(self._fakes[zone].pve, zone)
        self._fakes.start()

        self._images = ImageServer(cfg.images_host).start()
        self._kube = KubeServer.start(host=cfg.kube_host, port=0)
        self.kubeconfig = self._kube.write_kubeconfig(cfg.scratch / "kubeconfig")

        self._identity = IdentityProvider.start(
            data_dir=cfg.scratch / "identity",
            host=cfg.identity_host,
            port=cfg.identity_port,
            users=seed.USERS,
            project_id=seed.PROJECT_ID,
            portal_redirect_uris=[f"{self.url}/oidc/callback/"],
        )

        for zone, nodes in zones.items():
            for node, address in nodes.items():
                self._start_agent(zone, node, address, token_secrets[zone], pki)
        for agent in self.agents.values():
            assert agent.process is not None
            wait_for_line(agent.process, "flexplane-agent listening", 30)

        self._seed_catalog()
        if orchestrator:
            self.start_orchestrator()

    def _start_agent(self, zone: str, node: str, address: str, token_secret: str, pki: Path) -> None:
        assert self.ca is not None
        identity = host_identity(zone, node)
        directory = self.cfg.scratch / "agents" / f"{zone}-{node}"
        directory.mkdir(parents=True, exist_ok=True)
        cert, key = self.ca.issue_agent(identity, [address], directory, "agent")
        secret_file = directory / "proxmox-token"
        secret_file.write_text(token_secret)
        secret_file.chmod(0o600)
        config_path = directory / "agent.toml"
        config_path.write_text(
            "\n".join(
                f"{k} = {json.dumps(v)}"
                for k, v in {
                    "listen": f"{address}:{AGENT_PORT}",
                    "zone": zone,
                    "node": node,
                    "tls_cert": str(cert),
                    "tls_key": str(key),
                    "ca": str(self.ca.cert_path),
                    "proxmox_url": self.fakes[zone].url(node),
                    "proxmox_token_id": TOKEN_ID,
                    "proxmox_token_secret_file": str(secret_file),
                    "proxmox_ca": self.fakes.certfile,
                    "image_allow_hosts": [self.images.netloc],
                    "image_cache": str(directory / "images"),
                    "snippets_dir": str(directory / "snippets"),
                }.items()
            )
            + "\n"
        )
        agent = Agent(zone, node, address, identity, config_path)
        self.agents[(zone, node)] = agent
        self.start_agent(zone, node, wait=False)

    def start_agent(self, zone: str, node: str, *, wait: bool = True) -> None:
        agent = self.agents[(zone, node)]
        agent.process = spawn(
            f"agent {zone}/{node}",
            [sys.executable, "-m", "agent", "serve", "--config", str(agent.config_path)],
            self.cfg.scratch / "logs" / f"agent-{zone}-{node}.log",
        )
        self._processes.append(agent.process)
        if wait:
            wait_for_line(agent.process, "flexplane-agent listening", 30)

    def stop_agent(self, zone: str, node: str) -> None:
        agent = self.agents[(zone, node)]
        if agent.process is not None:
            agent.process.stop()

    def _seed_catalog(self) -> None:
        """The platform namespace and its catalog: zones, hosts, profiles, images, VDCs (a ConfigMap each)."""
        assert self.kubeconfig is not None
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(self.kubeconfig)))
        with contextlib.suppress(client.ApiException):
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=seed.NAMESPACE)))
        hosts = [(agent.zone, agent.node, agent.endpoint) for agent in self.agents.values()]
        for kind, ident, spec, labels in seed.catalog(self.cfg.zones, hosts, self.images):
            core.create_namespaced_config_map(seed.NAMESPACE, config_map(kind, ident, spec, labels))

    # ------------------------------------------------------------------ orchestrator

    @property
    def url(self) -> str:
        return f"http://{self.cfg.orchestrator_host}:{self.cfg.orchestrator_port}"

    def orchestrator_env(self) -> dict[str, str]:
        assert self.ca is not None
        assert self.kubeconfig is not None
        client_dir = self.cfg.scratch / "pki" / "orchestrator"
        cert, key = self.ca.issue_client(ORCHESTRATOR_CLIENT_CN, client_dir, "orchestrator")
        return {
            "DJANGO_SETTINGS_MODULE": "flexplane.settings",
            "FLEXPLANE_ALLOWED_HOSTS": f"{self.cfg.orchestrator_host},localhost,127.0.0.1",
            "FLEXPLANE_KUBECONFIG": str(self.kubeconfig),
            "FLEXPLANE_NAMESPACE": seed.NAMESPACE,
            "FLEXPLANE_OIDC_ISSUER": self.identity.issuer,
            "FLEXPLANE_OIDC_AUDIENCE": seed.PROJECT_ID,
            "FLEXPLANE_OIDC_PROJECT_ID": seed.PROJECT_ID,
            "FLEXPLANE_AGENT_CA": str(self.ca.cert_path),
            "FLEXPLANE_AGENT_CERT": str(cert),
            "FLEXPLANE_AGENT_KEY": str(key),
            "FLEXPLANE_IMAGE_ALLOW_HOSTS": self.images.netloc,
            **{f"FLEXPLANE_{name}": value for name, value in self.cfg.orchestrator_settings},
        }

    def start_orchestrator(self, extra_env: dict[str, str] | None = None) -> None:
        self.orchestrator = spawn(
            "orchestrator",
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                self.cfg.orchestrator_host,
                "-p",
                str(self.cfg.orchestrator_port),
                "flexplane.asgi:application",
            ],
            self.cfg.scratch / "logs" / "orchestrator.log",
            env={**self.orchestrator_env(), **(extra_env or {})},
        )
        self._processes.append(self.orchestrator)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.orchestrator.popen.poll() is not None:
                break
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"the orchestrator did not start:\n{self.orchestrator.output()[-4000:]}")

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

    # ------------------------------------------------------------------ tear down

    def stop(self) -> None:
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()
        self.stop_identity()
        self.stop_kube()
        if self._fakes is not None:
            self._fakes.stop()
            self._fakes = None
        if self._images is not None:
            self._images.stop()
            self._images = None

    def stop_identity(self) -> None:
        if self._identity is not None:
            self._identity.stop()
            self._identity = None

    def stop_kube(self) -> None:
        if self._kube is not None:
            self._kube.stop()
            self._kube = None

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
