"""The devstack's world, brought up one way for ``make dev`` and for the tests.

On loopback only: a fake Proxmox cluster per zone (fakepve, one address per node), the
Kubernetes emulator seeded with the platform catalog (zones, profiles, images and VDCs: a
ConfigMap each) and the platform CA (a Secret), the dev identity provider in its own process,
the orchestrator under daphne (HTTP, and HTTPS for enrollment), and an agent process per node.

Every node joins as on a real platform: an admin's join token from the GraphQL API, then
``flexplane-agent bootstrap`` against a scratch root folder of its own (``nodes/<zone>-<node>``),
which sets up the node's Proxmox API token through the fake's API, gets the agent's certificate
from the orchestrator's enrollment endpoint, installs the release channel's agent release, writes
the agent's files and its systemd unit; the world then runs the unit's ExecStart, standing in for
systemd. Enrollment adds the hosts to the catalog. Only the orchestrator's own client certificate
is issued by hand, from the same CA.

Self-update works as on a node. At start the world signs a release of this checkout
(``flexplane-agent release build``, version ``agent.__version__``, with a release key of its
scratch folder: ``pki/release``) and pushes it to the world's own OCI registry (Debian's
docker-registry on 127.<subnet>.0.5:5443, TLS of the world's CA, basic auth: devstack/registry.py),
where the orchestrator's channel names it and nodes pull it with the read-only account enrollment
gave them (``releases/`` keeps the files: the channel's fallback, without a registry); the
agents run it from their install_dir and check the channel every ``agent_update_interval``. To try
an update, build a newer version with that key and push it (``flexplane-agent release push``).
The devstack has no systemd: an agent's service_restart_command touches
``run/flexplane-agent.restart`` in its root, and the world, its stand-in for systemd, restarts
that agent (the apply step, started without systemd-run, then checks the new version answers,
as on a node).
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import requests
from kubernetes import client, config

from agent import __version__
from agent.release import BuiltRelease, build, generate_keys, load_private_key
from agent.service import UNIT_DIR, UNIT_NAME, exec_start
from agentclient import host_identity
from devstack import seed
from devstack.fakezones import FakeZones
from devstack.gatewaynet import GatewayBridges
from devstack.identity.client import password_token
from devstack.identity.process import IdentityProvider
from devstack.images import ImageServer
from devstack.kube import KubeServer
from devstack.meshnet import DevMesh
from devstack.net import free_port
from devstack.pki import CertificateAuthority
from devstack.processes import Process, spawn, wait_for_line
from devstack.registry import Registry
from orchestrator.sources.kube import config_map, secret_body

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
AGENT_PORT = 7443
# The world's registry listens on an address of its own: the same port for every world (not the
# package's 5000, which its service, where systemd starts it, holds on every address).
REGISTRY_PORT = 5443
ORCHESTRATOR_CLIENT_CN = "flexplane-orchestrator"
# The platform CA Secret's name: the orchestrator's default (FLEXPLANE_AGENT_CA_SECRET).
AGENT_CA_SECRET = "flexplane-agent-ca"
# How often the world looks for an agent's restart request (its service_restart_command's file).
RESTART_POLL = 0.2
JOIN_TOKEN_MUTATION = """
mutation ($zone: String!, $host: String!) {
  createHostJoinToken(zone: $zone, host: $host) {
    joinToken { token expiresAt command }
    errors { field message code }
  }
}
"""


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


@dataclass
class World:
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

    # ------------------------------------------------------------------ bring up

    def start(self) -> World:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        cfg = self.cfg
        cfg.scratch.mkdir(parents=True, exist_ok=True)
        self.ca = CertificateAuthority.create(self.pki / "ca")
        self.enrollment_port = cfg.enrollment_port or free_port(cfg.orchestrator_host)

        zones = {
            zone: {f"pve{n + 1}": cfg.node_address(z, n) for n in range(cfg.nodes_per_zone)}
            for z, zone in enumerate(cfg.zones)
        }
        token_secrets = {zone: secrets.token_hex(16) for zone in zones}
        self._fakes = FakeZones(zones, token_secrets, self.pki / "fakepve")
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

        self._seed_catalog()
        if cfg.mesh:
            self.mesh = DevMesh(cfg.subnet, [(z, n) for z, nodes in zones.items() for n in nodes])
            self.mesh.start(self.orchestrator_env(), cfg.scratch / "logs" / "mesh-hub.log")
            # Edge gateways plug into the node's bridges: vmbr0 and the applied VNets, in its namespace.
            mesh, fakes = self.mesh, self.fakes
            self.gateway_bridges = GatewayBridges(
                {key: mesh.namespace(*key) for key in mesh.index}, lambda zone: fakes[zone].sdn.bridges()
            )
            self.gateway_bridges.start()
        if cfg.release_registry:
            self.registry = Registry.start(
                cfg.scratch / "registry", self.ca, host=cfg.registry_host, port=REGISTRY_PORT
            )
        self.release = self.publish_release()
        self.start_orchestrator()
        self._restarter = threading.Thread(target=self._serve_restarts, name="world-restarts", daemon=True)
        self._restarter.start()
        self._enroll_nodes(zones)

    def publish_release(self) -> BuiltRelease:
        """This checkout's agent, signed with the world's release key: the only release the channel serves.

        The key is made once per scratch folder (make dev keeps it, so its nodes keep trusting it).
        """
        private, public = self.release_keys
        if not private.exists():
            generate_keys(private, public)
        self.releases.mkdir(parents=True, exist_ok=True)
        for stale in self.releases.glob("flexplane-agent-*"):
            stale.unlink()
        built = build(__version__, load_private_key(private), self.releases)
        if self.registry is not None:  # the channel then names it there, and serves no bytes
            self.registry.publish(built)
        return built

    def _enroll_nodes(self, zones: dict[str, dict[str, str]]) -> None:
        """Every node joins in parallel, as an operator would enroll them: token, bootstrap, start."""
        admin = self.token("admin")
        nodes = [
            (zone, node, address) for zone, addresses in zones.items() for node, address in addresses.items()
        ]
        with ThreadPoolExecutor(max_workers=len(nodes) or 1, thread_name_prefix="enroll") as pool:
            list(pool.map(lambda n: self.bootstrap_node(*n, admin_token=admin), nodes))
        # Started from this thread: a child is signalled when the thread that started it ends.
        for zone, node, _ in nodes:
            self.start_agent(zone, node, wait=False)
        for agent in self.agents.values():
            assert agent.process is not None
            wait_for_line(agent.process, "flexplane-agent listening", 30)

    def enroll(self, zone: str, node: str, address: str, *, orchestrator_url: str | None = None) -> Agent:
        """Enroll a node of a fake zone and start its agent (see :meth:`bootstrap_node`)."""
        agent = self.bootstrap_node(zone, node, address, orchestrator_url=orchestrator_url)
        self.start_agent(zone, node)
        return agent

    def bootstrap_node(
        self,
        zone: str,
        node: str,
        address: str,
        *,
        admin_token: str | None = None,
        orchestrator_url: str | None = None,
    ) -> Agent:
        """A join token and ``flexplane-agent bootstrap`` for a node; its agent is ready to start.

        ``orchestrator_url`` is where the node enrolls and renews (default: this world's HTTPS URL).
        """
        url = orchestrator_url or self.https_url
        token = self.join_token(zone, node, admin_token=admin_token)
        root = self.cfg.scratch / "nodes" / f"{zone}-{node}"
        argv = self.bootstrap_argv(zone, node, address, token, root, orchestrator_url=url)
        if self.mesh is not None:  # the node reaches its Proxmox, the orchestrator and images locally
            fake = self.fakes[zone].url(node).removeprefix("https://")
            registry = [self.registry.address] if self.registry is not None else []
            self.mesh.relay(zone, node, [url.removeprefix("https://"), fake, self.images.netloc, *registry])
            argv = self.mesh.wrap(zone, node, [*argv, "--mesh-interface", self.mesh.interface(zone, node)])
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        log = self.cfg.scratch / "logs" / f"bootstrap-{zone}-{node}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"the bootstrap of {zone}/{node} failed:\n{done.stdout}{done.stderr}")
        return self.add_agent(zone, node, address, root)

    def add_agent(
        self, zone: str, node: str, address: str, root: Path, env: dict[str, str] | None = None
    ) -> Agent:
        """A bootstrapped node's agent (its unit under root), for the world to run; not started yet."""
        command = exec_start((root / UNIT_DIR / UNIT_NAME).read_text())
        if self.mesh is not None:
            command = self.mesh.wrap(zone, node, command)
        agent = Agent(zone, node, address, host_identity(zone, node), root, command, env=dict(env or {}))
        with self._agents_lock:
            self.agents[(zone, node)] = agent
        return agent

    def forget_agent(self, zone: str, node: str) -> None:
        """Stop a node's agent and run it no more (a node a test added leaves)."""
        with self._agents_lock:
            self.stop_agent(zone, node)
            del self.agents[(zone, node)]

    def join_token(self, zone: str, node: str, *, admin_token: str | None = None) -> str:
        """A join token for this host, from the GraphQL API as the devstack's admin."""
        response = requests.post(
            f"{self.url}/graphql",
            json={"query": JOIN_TOKEN_MUTATION, "variables": {"zone": zone, "host": node}},
            headers={"Authorization": f"Bearer {admin_token or self.token('admin')}"},
            timeout=30,
        )
        answer = response.json()["data"]["createHostJoinToken"]
        if answer["errors"]:
            raise RuntimeError(f"no join token for {zone}/{node}: {answer['errors']}")
        token: str = answer["joinToken"]["token"]
        return token

    def bootstrap_argv(
        self,
        zone: str,
        node: str,
        address: str,
        token: str,
        root: Path,
        *,
        orchestrator_url: str | None = None,
    ) -> list[str]:
        """``flexplane-agent bootstrap`` for a fake zone's node: its scratch root, the fake's API as root."""
        fake = self.fakes[zone]
        password = self.pki / "fakepve" / f"root-password-{zone}"
        if not password.exists():
            password.write_text(fake.pve.password)
            password.chmod(0o600)
        # Any node's API answers for the whole cluster: a node added to the fake uses the first's.
        proxmox_node = node if node in fake.node_addresses else next(iter(fake.node_addresses))
        assert self.ca is not None
        return [
            sys.executable,
            "-m",
            "agent",
            "bootstrap",
            "--orchestrator",
            orchestrator_url or self.https_url,
            "--token",
            token,
            "--root",
            str(root),
            "--no-start",
            "--address",
            f"{address}:{AGENT_PORT}",
            "--ca-file",
            str(self.ca.cert_path),
            "--proxmox-admin",
            "api",
            "--proxmox-url",
            fake.url(proxmox_node),
            "--proxmox-password-file",
            str(password),
            "--proxmox-ca",
            self.fakes.certfile,
            # Beside the configuration, where the suites look for a node's snippets.
            "--snippets-dir",
            str(root / "etc" / "flexplane" / "snippets"),
        ]

    def agent_env(self, agent: Agent) -> dict[str, str]:
        """The unit's environment in the devstack: self-update's settings for a world without systemd."""
        agent.restart_request.parent.mkdir(parents=True, exist_ok=True)
        return {
            # Restarting is asking the world (see _serve_restarts); list items are comma-separated.
            "FLEXPLANE_AGENT_SERVICE_RESTART_COMMAND": f"touch,{agent.restart_request}",
            # No systemd-run: the apply step is the agent's child, in a session of its own.
            "FLEXPLANE_AGENT_UPDATE_APPLY_LAUNCHER": "",
            "FLEXPLANE_AGENT_UPDATE_INTERVAL": str(self.cfg.agent_update_interval),
            # Each node keeps (and restores on start) its own edge gateways' specs.
            "FLEXPLANE_AGENT_GATEWAY_DIR": str(agent.root / "var" / "lib" / "flexplane" / "gateways"),
            **agent.env,
        }

    def start_agent(self, zone: str, node: str, *, wait: bool = True) -> None:
        """Run the agent as its systemd unit would (ExecStart), its output appended to its log file."""
        with self._agents_lock:
            agent = self.agents[(zone, node)]
            agent.process = spawn(
                f"agent {zone}/{node}",
                agent.command,
                self.cfg.scratch / "logs" / f"agent-{zone}-{node}.log",
                self.agent_env(agent),
                append=True,
            )
            self._processes.append(agent.process)
        if wait:
            wait_for_line(agent.process, "flexplane-agent listening", 30)

    def stop_agent(self, zone: str, node: str) -> None:
        with self._agents_lock:
            agent = self.agents[(zone, node)]
            if agent.process is not None:
                agent.process.stop()

    def _serve_restarts(self) -> None:
        """systemd's part in self-update: restart each agent whose service_restart_command asked.

        The request is taken (its file removed) before the agent stops, so that one asked for while
        it restarts is served too. Runs from the start to the stop of the world, in one thread: the
        agents it starts are signalled when the thread that started them ends.
        """
        while not self._stopping.wait(RESTART_POLL):
            with self._agents_lock:
                asked = [key for key, agent in self.agents.items() if agent.restart_request.exists()]
                for zone, node in asked:
                    self.agents[(zone, node)].restart_request.unlink(missing_ok=True)
                    try:
                        self.stop_agent(zone, node)
                        self.start_agent(zone, node, wait=False)
                    except OSError as exc:  # as systemd would, report it and keep serving the others
                        print(f"devstack: cannot restart the agent of {zone}/{node}: {exc}", file=sys.stderr)

    def _seed_catalog(self) -> None:
        """The platform namespace: its catalog (a ConfigMap each) and the platform CA (a TLS Secret)."""
        assert self.kubeconfig is not None
        assert self.ca is not None
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(self.kubeconfig)))
        with contextlib.suppress(client.ApiException):
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=seed.NAMESPACE)))
        for kind, ident, spec, labels in seed.catalog(self.cfg.zones, self.images):
            core.create_namespaced_config_map(seed.NAMESPACE, config_map(kind, ident, spec, labels))
        secret = secret_body(AGENT_CA_SECRET, self.ca.tls_secret_data(), type_name="kubernetes.io/tls")
        core.create_namespaced_secret(seed.NAMESPACE, secret)

    # ------------------------------------------------------------------ orchestrator

    @property
    def url(self) -> str:
        return f"http://{self.cfg.orchestrator_host}:{self.cfg.orchestrator_port}"

    @property
    def https_url(self) -> str:
        """The orchestrator's HTTPS endpoint (certificate of the dev CA), where nodes enroll and renew."""
        return f"https://{self.cfg.orchestrator_host}:{self.enrollment_port}"

    def orchestrator_env(self) -> dict[str, str]:
        assert self.ca is not None
        assert self.kubeconfig is not None
        client_dir = self.cfg.scratch / "pki" / "orchestrator"
        cert, key = self.ca.issue_client(ORCHESTRATOR_CLIENT_CN, client_dir, "orchestrator")
        return {
            "DJANGO_SETTINGS_MODULE": "flexplane.settings",
            "FLEXPLANE_ALLOWED_HOSTS": f"{self.cfg.orchestrator_host},localhost,127.0.0.1",
            "FLEXPLANE_SECRET_KEY": self.secret_key,
            "FLEXPLANE_KUBECONFIG": str(self.kubeconfig),
            "FLEXPLANE_NAMESPACE": seed.NAMESPACE,
            "FLEXPLANE_OIDC_ISSUER": self.identity.issuer,
            "FLEXPLANE_OIDC_AUDIENCE": seed.PROJECT_ID,
            "FLEXPLANE_OIDC_PROJECT_ID": seed.PROJECT_ID,
            # The dev issuer types its access tokens (devstack.identity.oauth.ACCESS_TOKEN_TYPE).
            "FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE": "at+jwt",
            # The portal's login: the confidential client the identity provider registered for it.
            "FLEXPLANE_OIDC_CLIENT_ID": self.identity.portal_client.client_id,
            "FLEXPLANE_OIDC_CLIENT_SECRET": self.identity.portal_client.client_secret,
            # Zitadel's management API (the identity provider's stand-in of it) and the service user's key.
            "FLEXPLANE_ZITADEL_URL": self.identity.api_url,
            "FLEXPLANE_ZITADEL_KEY_FILE": str(self.identity.zitadel_key_path),
            "FLEXPLANE_AGENT_CA": str(self.ca.cert_path),
            "FLEXPLANE_AGENT_CERT": str(cert),
            "FLEXPLANE_AGENT_KEY": str(key),
            # Where nodes enroll and renew: this orchestrator's HTTPS endpoint.
            "FLEXPLANE_ENROLLMENT_URL": self.https_url,
            # The release channel agents install from at enrollment and update from afterwards.
            "FLEXPLANE_AGENT_RELEASES_DIR": str(self.releases),
            "FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY": str(self.release_keys[1]),
            **(self.registry.orchestrator_env() if self.registry is not None else {}),
            "FLEXPLANE_IMAGE_ALLOW_HOSTS": self.images.netloc,
            **{f"FLEXPLANE_{name}": value for name, value in self.cfg.orchestrator_settings},
            **(self.mesh.env() if self.mesh is not None else {}),
        }

    def start_orchestrator(self, extra_env: dict[str, str] | None = None) -> None:
        self.orchestrator = self.spawn_orchestrator(
            "orchestrator", self.cfg.orchestrator_port, self.enrollment_port, extra_env
        )

    def spawn_orchestrator(
        self, name: str, port: int, https_port: int, extra_env: dict[str, str] | None = None
    ) -> Process:
        """An orchestrator process (HTTP on port, HTTPS on https_port), once it answers /healthz.

        The world runs one; a test may run another replica beside it, e.g. with other settings.
        """
        assert self.ca is not None
        host = self.cfg.orchestrator_host
        cert, key = self.ca.issue_server([host], self.pki / "orchestrator-https", "https")
        process = spawn(
            name,
            [
                sys.executable,
                "-m",
                "daphne",
                # No access log of daphne's: it prints query strings (flexplane.logs logs each request).
                "--verbosity",
                "0",
                "-b",
                host,
                "-p",
                str(port),
                "-e",
                f"ssl:port={https_port}:interface={host}:privateKey={key}:certKey={cert}",
                "flexplane.asgi:application",
            ],
            self.cfg.scratch / "logs" / f"{name}.log",
            env={**self.orchestrator_env(), **(extra_env or {})},
        )
        self._processes.append(process)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                break
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"http://{host}:{port}/healthz", timeout=1).status_code == 200:
                    return process
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not start:\n{process.output()[-4000:]}")

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
        self._stopping.set()
        if self._restarter is not None:
            self._restarter.join()
            self._restarter = None
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
        if self.registry is not None:
            self.registry.stop()
            self.registry = None
        if self.gateway_bridges is not None:
            self.gateway_bridges.stop()
            self.gateway_bridges = None
        if self.mesh is not None:
            self.mesh.stop()
            self.mesh = None

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
