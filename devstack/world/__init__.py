"""The devstack's world, brought up one way for ``make dev`` and for the tests.

On loopback only: a fake Proxmox cluster per zone (fakepve, one address per node), the
Kubernetes emulator seeded with the platform catalog (zones, profiles, images and VDCs: a
ConfigMap each) and the platform CA (a Secret), the dev identity provider in its own process,
the orchestrator under uvicorn (HTTP, and HTTPS for enrollment), and an agent process per node.

Every node joins as on a real platform: an admin's join token from the GraphQL API, then
``flexplane-agent bootstrap`` against a scratch root folder of its own (``nodes/<zone>-<node>``),
which sets up the node's Proxmox API token through the fake's API, gets the agent's certificate
from the orchestrator's enrollment endpoint, installs the release channel's agent release, writes
the agent's files and its systemd unit; the world then runs the unit's ExecStart, standing in for
systemd. Enrollment adds the hosts to the catalog, and the world is ready once each node has cached the
images the seeded VDCs offer in its zone (the orchestrator asks its agent as it joins). Only the
orchestrator's own client certificate is issued by hand, from the same CA.

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

The parts: :mod:`~devstack.world.config` (what a world is asked to be, and its fixed names),
:mod:`~devstack.world.parts` (what it holds: its running parts, agents, folders and URLs),
:mod:`~devstack.world.agents` (enrollment, and systemd's part: running and restarting agents),
:mod:`~devstack.world.orchestrator` (the orchestrator's environment and processes),
:mod:`~devstack.world.providers` (with ``providers=True``: the Cluster API providers and the stand-ins
of Cluster API core and the hosted control planes' runtime); :class:`World`
here brings them up in order and tears them down.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from pathlib import Path
from urllib.parse import urlsplit

from kubernetes import client
from kubernetes.config import new_client_from_config

from agent import __version__
from agent.release import BuiltRelease, build, generate_keys, load_private_key
from devstack import seed
from devstack.fakezones import FakeZones
from devstack.gatewaynet import GatewayBridges
from devstack.identity.process import IdentityProvider
from devstack.images import ImageServer
from devstack.kube import KubeServer
from devstack.lifecycle import Lifecycle
from devstack.meshnet import DevMesh
from devstack.net import free_port
from devstack.pki import CertificateAuthority
from devstack.processes import stop_all
from devstack.registry import Registry
from devstack.world.agents import WorldAgents
from devstack.world.config import AGENT_CA_SECRET, REGISTRY_PORT, WorldConfig
from devstack.world.parts import Agent
from devstack.world.providers import WorldProviders
from orchestrator.sources.kube_objects import config_map, secret_body

__all__ = ["Agent", "World", "WorldConfig"]


class World(WorldAgents, WorldProviders, Lifecycle):
    """Everything the orchestrator talks to, plus the orchestrator itself: brought up, and torn down."""

    # ------------------------------------------------------------------ bring up

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

        self.start_identity(cfg.identity_port)

        self._seed_catalog()
        if cfg.mesh:
            self.mesh = DevMesh(cfg.subnet, [(z, n) for z, nodes in zones.items() for n in nodes])
            self.mesh.start(self.orchestrator_env(), self.mesh_hub_log)
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
        if cfg.providers:
            self.start_cluster_api()

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

    def _seed_catalog(self) -> None:
        """The platform namespace: its catalog (a ConfigMap each) and the platform CA (a TLS Secret)."""
        assert self.kubeconfig is not None
        assert self.ca is not None
        core = client.CoreV1Api(new_client_from_config(config_file=str(self.kubeconfig)))
        with contextlib.suppress(client.ApiException):
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=seed.NAMESPACE)))
        for kind, ident, spec, labels in seed.catalog(
            self.cfg.zones, self.images, kubernetes=self.cfg.providers
        ):
            core.create_namespaced_config_map(seed.NAMESPACE, config_map(kind, ident, spec, labels))
        secret = secret_body(AGENT_CA_SECRET, self.ca.tls_secret_data(), type_name="kubernetes.io/tls")
        core.create_namespaced_secret(seed.NAMESPACE, secret)

    # ------------------------------------------------------------------ tear down

    def stop(self) -> None:
        self._stopping.set()
        if self._restarter is not None:
            self._restarter.join()
            self._restarter = None
        self.stop_cluster_api()
        stop_all(self._processes)
        self._processes.clear()
        self.remove_gateways()  # the nodes' bridges and namespaces go below
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

    def start_identity(self, port: int) -> None:
        """The identity provider on its address (port 0: a free one), over its data folder as it is: started
        again on a stopped one's port, its issuer is the one the orchestrator's settings name."""
        self._identity = IdentityProvider.start(
            data_dir=self.cfg.scratch / "identity",
            host=self.cfg.identity_host,
            port=port,
            users=seed.USERS,
            project_id=seed.PROJECT_ID,
            portal_redirect_uris=[f"{self.url}/oidc/callback/"],
        )

    @property
    def mesh_hub_log(self) -> Path:
        return self.cfg.scratch / "logs" / "mesh-hub.log"

    def start_mesh_hub(self) -> None:
        """The mesh's hub started again after ``mesh.stop_hub()``, as the chart's Deployment brings it up on
        a rebuilt management cluster: its key and peers are what that cluster holds then."""
        if self.mesh is None:
            raise RuntimeError("this world runs no mesh (WorldConfig.mesh)")
        self.mesh.start_hub(self.orchestrator_env(), self.mesh_hub_log, append=True)

    def replace_kube(self) -> None:
        """A new, empty Kubernetes emulator where this one served, so that the kubeconfig still reaches it:
        the management cluster lost and built anew (tests/recovery rehearses restoring it)."""
        port = urlsplit(self.kube.url).port
        self.stop_kube()
        self._kube = KubeServer.start(host=self.cfg.kube_host, port=port or 0)

    def stop_identity(self) -> None:
        if self._identity is not None:
            self._identity.stop()
            self._identity = None

    def stop_kube(self) -> None:
        if self._kube is not None:
            self._kube.stop()
            self._kube = None
