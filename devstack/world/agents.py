"""The nodes' side of a world: each node enrolls as on a real platform, and the world runs its agent.

Enrollment is an admin's join token from the GraphQL API, then ``flexplane-agent bootstrap`` against
the node's scratch root (``nodes/<zone>-<node>``), which leaves the agent's files and its systemd
drop-in; the world then runs the package's unit (packaging/deb) with that drop-in, its ExecStart
(:meth:`WorldAgents.start_agent`), standing in for systemd, and restarts an agent whose
service_restart_command asked for it (self-update).

It runs it as systemd would (:func:`unit_command`): under the unit's sandbox (devstack.sandbox), on
the node (in a mesh world, the node's network namespace) and in the host's mount namespace, or in a mount
namespace of its own whose mounts never reach the host when the unit has a setting that makes systemd
give it one (PrivateTmp= and the like). So the edge gateways an agent makes are where a node's would be:
the host's, and a restart finds them. Stopping the world removes them
(:meth:`WorldAgents.remove_gateways`), as a node's power-off would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from agent.gateways import ApplyFailed, GatewayManager
from agent.service import DROPIN, exec_start, mount_namespacing
from agentclient import host_identity
from devstack import seed
from devstack.meshnet import on_node
from devstack.processes import spawn, wait_for_line
from devstack.sandbox import PACKAGED_UNIT, sandboxed
from devstack.world.config import AGENT_PORT, ROOT
from devstack.world.parts import Agent, WorldParts

# How often the world looks for an agent's restart request (its service_restart_command's file).
RESTART_POLL = 0.2
# How long a stopped agent is given to finish its calls in flight and exit before it is killed. systemd
# gives the unit 90 s (its default TimeoutStopSec); the agent itself stops within its shutdown grace and
# cleanup, a few seconds. Killing it at its own grace (as after the default 5 s) cut calls it was finishing.
AGENT_STOP_TIMEOUT = 30.0
# How long the nodes get to cache the offered images once they have joined (downloads from loopback).
IMAGE_CACHE_WAIT = 120.0
JOIN_TOKEN_MUTATION = """
mutation ($zone: String!, $host: String!) {
  createHostJoinToken(zone: $zone, host: $host) {
    joinToken { token expiresAt command }
    errors { field message code }
  }
}
"""


def unit_command(unit: str, netns: str | None = None) -> list[str]:
    """What systemd runs for a unit: its ExecStart under the unit's sandbox (devstack.sandbox), in the
    node's network namespace (``netns``; None: this one), and in a mount namespace of its own, a slave of
    the host's (``unshare``), when the unit asks for file system namespacing
    (agent.service.MOUNT_NAMESPACING): what the service mounts then stays there, as with systemd."""
    command = sandboxed(unit, exec_start(unit))
    if mount_namespacing(unit):
        command = ["unshare", "--mount", "--propagation", "slave", "--", *command]
    return on_node(netns, *command) if netns is not None else command


class WorldAgents(WorldParts):
    """Enrolling nodes (join token, bootstrap) and running their agents as systemd would."""

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
        self.await_images_cached(zones)

    def await_images_cached(
        self, zones: dict[str, dict[str, str]], timeout: float = IMAGE_CACHE_WAIT
    ) -> None:
        """Wait until every node holds the templates of the images the seeded VDCs offer in its zone, as
        the orchestrator has each node's agent cache them when the node joins: the world is ready when a
        platform's nodes would be, and no create of the tests finds a download under way."""
        offered = {
            (zone, image)
            for vdc in seed.VDCS
            for zone in vdc["zones"]
            if zone in zones
            for image in vdc["images"]
        }
        wanted = {(zone, node, f"fp-tpl-{image}") for zone, image in offered for node in zones[zone]}

        def templates(pve: Any) -> list[tuple[str, str]]:
            return [(vm.node, vm.name) for vm in pve.vms if vm.template and vm.name.startswith("fp-tpl-")]

        def ready() -> set[tuple[str, str, str]]:
            return {
                (zone, node, name)
                for zone in zones
                for node, name in self.fakes.on_loop(templates, self.fakes[zone].pve)
            }

        deadline = time.monotonic() + timeout
        while missing := wanted - ready():
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the nodes did not cache the offered images within {timeout:g} s of joining: missing "
                    + ", ".join(f"{z}/{n} {t}" for z, n, t in sorted(missing))
                )
            time.sleep(0.1)

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
        """A bootstrapped node's agent (its drop-in under root), for the world to run; not started yet."""
        unit = PACKAGED_UNIT.read_text(encoding="utf-8") + (root / DROPIN).read_text(encoding="utf-8")
        command = unit_command(unit, self.node_namespace(zone, node))
        agent = Agent(zone, node, address, host_identity(zone, node), root, command, env=dict(env or {}))
        with self._agents_lock:
            self.agents[(zone, node)] = agent
        return agent

    def node_namespace(self, zone: str, node: str) -> str | None:
        """The network namespace of the node (its bridges, its agent): the mesh's; None: this one."""
        return self.mesh.namespace(zone, node) if self.mesh is not None else None

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
            "FLEXPLANE_AGENT_GATEWAY_DIR": str(agent.gateway_dir),
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
                agent.process.stop(AGENT_STOP_TIMEOUT)

    @contextlib.contextmanager
    def agent_hung(self, zone: str, node: str) -> Iterator[None]:
        """The agent of ``zone``/``node`` stopped (SIGSTOP: hung, not gone) for the block, then let go on.
        No restart (a self-update's) replaces it meanwhile: that would answer in its stead."""
        with self._agents_lock:
            agent = self.agents[(zone, node)]
            assert agent.process is not None, f"the agent of {zone}/{node} is not running"
            pid = agent.process.popen.pid
            os.kill(pid, signal.SIGSTOP)
            try:
                yield
            finally:
                os.kill(pid, signal.SIGCONT)

    def restart_agent(self, zone: str, node: str, *, wait: bool = True) -> None:
        """``systemctl restart``: the agent stops (its calls in flight finished), then starts again."""
        with self._agents_lock:
            self.stop_agent(zone, node)
            self.start_agent(zone, node, wait=wait)

    def remove_gateways(self) -> None:
        """Remove the edge gateways the nodes' agents made (their namespaces, links and kept specs): run as
        a node runs them, they outlive their agents. The world stops its agents first, then calls this."""
        for (zone, node), agent in list(self.agents.items()):
            manager = GatewayManager(node, agent.gateway_dir, host=self.node_namespace(zone, node))
            for gateway_id in manager.kept_ids():
                try:
                    manager.remove(gateway_id)
                except (ApplyFailed, ValueError) as exc:
                    print(
                        f"devstack: the gateway {gateway_id} of {zone}/{node} stays: {exc}", file=sys.stderr
                    )

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
                        self.restart_agent(zone, node, wait=False)
                    except OSError as exc:  # as systemd would, report it and keep serving the others
                        print(f"devstack: cannot restart the agent of {zone}/{node}: {exc}", file=sys.stderr)
