"""The enrollment suites' kit: join tokens, CSRs good and bad, the enrollment endpoint over HTTPS,
TLS handshakes with an agent, and nodes added to a fake zone that clean up after themselves (their
agents run by the world, which restarts them when self-update asks, as systemd would).

Shared by tests/orchestrator/test_enrollment.py, tests/agent/test_bootstrap.py and
tests/agent/test_renewal.py.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID
from kubernetes import client, config

from agentclient import AgentPool, AgentTarget, ClientTLS, host_identity
from agentclient.enrollment import JOIN_PATH
from devstack import seed
from devstack.processes import Process
from devstack.world import World
from devstack.world.config import AGENT_PORT
from tests.apikit import GraphQL

CREATE_TOKEN = """mutation($zone: String!, $host: String!) {
  createHostJoinToken(zone: $zone, host: $host) {
    joinToken { token zone host expiresAt command }
    errors { field message code } } }"""

AnyKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey


def join_token(api: GraphQL, zone: str, host: str) -> str:
    answer = api(CREATE_TOKEN, user="admin", variables={"zone": zone, "host": host})
    payload = answer.data["createHostJoinToken"]
    assert payload["errors"] == [], payload["errors"]
    token: str = payload["joinToken"]["token"]
    return token


def csr(identity: str, key: AnyKey | None = None, *, dns: list[str] | None = None) -> str:
    """A CSR for CN=identity with these DNS names (default: the identity), signed by key."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    builder = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, identity)])
    )
    names = [identity] if dns is None else dns
    if names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
        )
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(key, algorithm).public_bytes(serialization.Encoding.PEM).decode()


def post(world: World, path: str, body: dict[str, Any], *, base: str | None = None) -> requests.Response:
    """POST JSON to the orchestrator's HTTPS endpoint, trusting the dev CA."""
    assert world.ca is not None
    return requests.post(
        (base or world.https_url) + path, json=body, verify=str(world.ca.cert_path), timeout=30
    )


def join(world: World, token: str, request_csr: str, endpoint: str) -> requests.Response:
    return post(world, JOIN_PATH, {"token": token, "csr": request_csr, "endpoint": endpoint})


def client_tls(world: World) -> ClientTLS:
    """The orchestrator's own client certificate, as the world issued it."""
    assert world.ca is not None
    folder = world.pki / "orchestrator"
    return ClientTLS.from_files(world.ca.cert_path, folder / "orchestrator.crt", folder / "orchestrator.key")


def peer_certificate(world: World, endpoint: str) -> x509.Certificate:
    """The certificate an agent presents in a TLS handshake right now (as the orchestrator's client).

    Read, not judged: it is what the agent serves even once expired; tests check it themselves.
    """
    folder = world.pki / "orchestrator"
    return served_certificate(endpoint, folder / "orchestrator.crt", folder / "orchestrator.key")


def served_certificate(endpoint: str, client_cert: Path, client_key: Path) -> x509.Certificate:
    """The certificate a TLS server presents to this client certificate at endpoint (host:port)."""
    host, _, port = endpoint.rpartition(":")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(client_cert, client_key)
    context.set_alpn_protocols(["h2"])
    with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def info(world: World, zone: str, node: str, endpoint: str) -> Any:
    """GetInfo from an agent over mTLS, as the orchestrator asks it."""
    with AgentPool(client_tls(world), timeout=10) as pool:
        return pool.info(AgentTarget(identity=host_identity(zone, node), address=endpoint))


def core(world: World) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(world.kubeconfig)))


def host_spec(world: World, zone: str, node: str) -> dict[str, Any] | None:
    """The host's catalog spec as stored in the management cluster, or None."""
    try:
        item = core(world).read_namespaced_config_map(f"host-{zone}.{node}", seed.NAMESPACE)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    spec: dict[str, Any] = json.loads((item.data or {})["spec"])
    return spec


def remove_host(world: World, zone: str, node: str) -> None:
    """Take a host out of the catalog (straight from the management cluster: test clean-up)."""
    with contextlib.suppress(client.ApiException):
        core(world).delete_namespaced_config_map(f"host-{zone}.{node}", seed.NAMESPACE)


@dataclass
class Node:
    """A Proxmox node added to a fake zone for one test: its address, scratch root and agent process."""

    world: World
    zone: str
    name: str
    address: str

    @property
    def agent(self) -> Process | None:
        """The agent process running now (a restart replaces it)."""
        running = self.world.agents.get((self.zone, self.name))
        return running.process if running is not None else None

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{AGENT_PORT}"

    @property
    def identity(self) -> str:
        return host_identity(self.zone, self.name)

    @property
    def root(self) -> Path:
        return self.world.cfg.scratch / "nodes" / f"{self.zone}-{self.name}"

    def bootstrap(
        self, api: GraphQL, *, token: str | None = None, orchestrator_url: str | None = None
    ) -> Any:
        """Run ``flexplane-agent bootstrap`` for this node as an operator would; the finished process."""
        argv = self.world.bootstrap_argv(
            self.zone,
            self.name,
            self.address,
            token or join_token(api, self.zone, self.name),
            self.root,
            orchestrator_url=orchestrator_url,
        )
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)

    def start_agent(self, env: dict[str, str] | None = None) -> Process:
        """Start the agent as systemd would: the unit's ExecStart as written now, with env's overrides."""
        self.world.add_agent(self.zone, self.name, self.address, self.root, env)
        self.world.start_agent(self.zone, self.name)
        assert self.agent is not None
        return self.agent

    def stop_agent(self) -> None:
        if (self.zone, self.name) in self.world.agents:
            self.world.forget_agent(self.zone, self.name)


def _drop_guests_of(pve: Any, node: str) -> None:
    pve.vms[:] = [vm for vm in pve.vms if vm.node != node]


@contextlib.contextmanager
def added_node(world: World, zone: str, name: str, address: str) -> Iterator[Node]:
    """A node joins the fake zone for the test, and leaves everything as it was afterwards."""
    pve = world.fakes[zone].pve
    world.fakes.on_loop(pve.add_node, name)
    node = Node(world, zone, name, address)
    try:
        yield node
    finally:
        node.stop_agent()
        remove_host(world, zone, name)
        # What its agent made there (the offered images' templates, cached as it joined) goes with it.
        world.fakes.on_loop(_drop_guests_of, pve, name)
        world.fakes.on_loop(pve.nodes.pop, name, None)
        world.fakes.on_loop(pve.apitokens.pop, f"flexplane@pve!agent-{name}", None)
