"""The mesh for real: namespaces, veth pairs, a NAT router and userspace WireGuard (root only).

The hub runs in this process (``orchestrator.mesh.hub``, its interface in the hub's namespace) on
the session world's management cluster; three nodes enroll through the enrollment service (their
WireGuard keys made on the node's side, only the public key sent) and run the real agent in their
namespaces, serving on their mesh address only. This process is the orchestrator's side: it reaches
the mesh through the hub, and none of the nodes' own addresses (see :mod:`devstack.meshnet`). One
more namespace stands for an orchestrator's pod on Kubernetes: no route to the mesh at all, only the
hub's CONNECT proxy (:mod:`orchestrator.mesh.proxy`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from cryptography import x509
from django.test import override_settings

from agent.certs import key_pem, make_csr, new_key
from agent.mesh import config_beside, settings_values
from agentclient import AgentPool, AgentTarget, ClientTLS, host_identity
from agentclient.errors import AgentDeadlineExceeded, AgentError, AgentUnavailable
from agentclient.wireguard import Interface, Peer, new_private_key, public_key
from devstack.meshnet import Topology, connect_in, in_ns, on_node, relay, run, topology
from devstack.net import free_port
from devstack.processes import Process, spawn, wait_for_line
from devstack.sandbox import as_packaged
from devstack.world import World
from devstack.world.config import AGENT_PORT
from orchestrator.auth import ADMIN, Principal
from orchestrator.mesh.hub import MeshHub
from orchestrator.services import enrollment, mesh, platform_ca
from orchestrator.services.context import Context
from orchestrator.services.hosts import lifecycle
from orchestrator.sources.kube import KubeSource, kube
from tests import addresses
from tests.enrollkit import remove_host
from tests.portal.sessionkit import login

ZONE = "zone-b"
HUB_PORT = 51820
PROXY_PORT = 3128
KEEPALIVE = 1
CALL_TIMEOUT = 1.5
# The life of the certificate a node renews in the rotation test: renewed at two thirds of it, by then
# the agent restarted with it and the test counting its calls.
RENEW_LIFE = 9


@pytest.fixture(scope="module", autouse=True)
def _root_and_tools() -> None:
    if os.geteuid() != 0:
        pytest.fail("the mesh's namespace tests run as root (network namespaces, WireGuard)")
    missing = [tool for tool in ("ip", "nft", "wg", "wireguard-go") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: make install installs wireguard-tools and wireguard-go")


@dataclass
class MeshNode:
    n: int
    name: str
    ns: str
    directory: Path
    wg: str
    address: str = ""
    agent: Process | None = None

    @property
    def target(self) -> AgentTarget:
        return AgentTarget(host_identity(ZONE, self.name), f"{self.address}:{AGENT_PORT}")

    @property
    def key_file(self) -> Path:
        return self.directory / "mesh.key"

    @property
    def mesh_config(self) -> Path:
        return self.directory / "mesh.toml"


@dataclass
class Mesh:
    net: Topology
    hub: MeshHub
    nodes: dict[int, MeshNode]
    pool: AgentPool
    kube: KubeSource
    logs: Path

    @property
    def proxy(self) -> str:
        return f"http://{self.net.proxy_address}:{PROXY_PORT}"

    def env(self) -> dict[str, str]:
        """The mesh's settings, for an orchestrator's process."""
        return {
            "FLEXPLANE_MESH_RANGE": self.net.mesh_range,
            "FLEXPLANE_MESH_HUB_ENDPOINT": f"{self.net.hub_public}:{HUB_PORT}",
            "FLEXPLANE_MESH_HUB_SECRET": f"mesh-hub-{self.net.rid}",
            "FLEXPLANE_MESH_KEEPALIVE": str(KEEPALIVE),
        }

    def answers(self, node: MeshNode) -> bool:
        return self.pool.check_health(node.target, timeout=CALL_TIMEOUT)

    def eventually_answers(self, node: MeshNode, within: float = 15.0) -> None:
        deadline = time.monotonic() + within
        while True:
            try:
                if self.answers(node):
                    return
            except AgentError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def eventually_fails(self, node: MeshNode, within: float = 10.0) -> AgentError:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                self.answers(node)
            except (AgentUnavailable, AgentDeadlineExceeded) as exc:
                return exc
            time.sleep(0.2)
        raise AssertionError(f"{node.name} still answers {within:g} s later")


def admin() -> Context:
    return Context(principal=Principal("mesh-test", "mesh test", "", frozenset({ADMIN})))


def enroll(node: MeshNode, origin: str) -> None:
    """The node's side of a bootstrap: its keys made here, the join, its files written."""
    tls_key = new_key()
    wg_key = new_private_key()
    token = enrollment.create_join_token(admin(), ZONE, node.name, origin).token
    issued = enrollment.join(
        kube(),
        token,
        make_csr(tls_key, host_identity(ZONE, node.name)),
        f"10.{node.n}.0.2:{AGENT_PORT}",  # the node's own address: named in its certificate, never dialled
        origin,
        public_key(wg_key),
    )
    settings = issued.settings
    node.address = settings["listen"].rpartition(":")[0]
    node.directory.mkdir(parents=True, exist_ok=True)
    (node.directory / "agent.crt").write_text(issued.certificate)
    (node.directory / "agent.key").write_bytes(key_pem(tls_key))
    (node.directory / "platform-ca.crt").write_text(issued.ca)
    node.key_file.write_text(wg_key + "\n")
    node.key_file.chmod(0o600)
    values = settings_values(settings["mesh"], node.key_file, interface=node.wg)
    node.mesh_config.write_text("".join(f"{k} = {_toml(v)}\n" for k, v in values.items()))
    config = {
        "listen": settings["listen"],
        "zone": ZONE,
        "node": node.name,
        "tls_cert": str(node.directory / "agent.crt"),
        "tls_key": str(node.directory / "agent.key"),
        "ca": str(node.directory / "platform-ca.crt"),
        "proxmox_url": "https://127.0.0.1:8006",
        "proxmox_token_id": f"flexplane@pve!agent-{node.name}",
        "proxmox_token_secret": "not-used-by-these-tests",
        "log_level": "debug",
    }
    (node.directory / "agent.toml").write_text("".join(f"{k} = {_toml(v)}\n" for k, v in config.items()))
    assert config_beside(node.directory / "agent.toml") == node.mesh_config


def _toml(value: object) -> str:
    return str(value) if isinstance(value, int) else '"' + str(value).replace('"', '\\"') + '"'


def start_agent(node: MeshNode, logs: Path) -> None:
    agent = [sys.executable, "-m", "agent", "serve", "--config", str(node.directory / "agent.toml")]
    argv = on_node(node.ns, *as_packaged(agent))  # as systemd runs the unit on the node
    node.agent = spawn(f"agent {node.name}", argv, logs / f"agent-{node.name}.log")
    wait_for_line(node.agent, "flexplane-agent listening", 30)


def new_hub(net: Topology, source: KubeSource) -> MeshHub:
    """The hub in its namespace, its CONNECT proxy on its side of the pod's link."""
    return MeshHub(
        f"fpm{net.rid}hub",
        HUB_PORT,
        netns=net.hub,
        source=source,
        interval=0.3,
        proxy_listen=f"{net.proxy_address}:{PROXY_PORT}",
    )


@pytest.fixture(scope="module")
def meshed_world(world: World, wired: KubeSource, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    scratch = tmp_path_factory.mktemp("mesh")
    env = world.orchestrator_env()
    pool = AgentPool(
        ClientTLS.from_files(
            env["FLEXPLANE_AGENT_CA"], env["FLEXPLANE_AGENT_CERT"], env["FLEXPLANE_AGENT_KEY"]
        ),
        timeout=CALL_TIMEOUT,
    )
    with topology(addresses.WORLD, pod=True) as net:
        rid = net.rid
        nodes = {
            n: MeshNode(n, f"m{rid}n{n}", net.node(n), scratch / f"n{n}", f"fpm{rid}w{n}") for n in (1, 2, 3)
        }
        hub = new_hub(net, wired)
        with override_settings(
            FLEXPLANE_MESH_RANGE=net.mesh_range,
            FLEXPLANE_MESH_HUB_ENDPOINT=f"{net.hub_public}:{HUB_PORT}",
            FLEXPLANE_MESH_HUB_SECRET=f"mesh-hub-{rid}",
            FLEXPLANE_MESH_KEEPALIVE=KEEPALIVE,
        ):
            running: Mesh | None = None
            try:
                hub.start()
                net.masquerade_into(hub.interface.name)
                for node in nodes.values():
                    enroll(node, world.https_url)
                    start_agent(node, scratch)
                running = Mesh(net, hub, nodes, pool, wired, scratch)
                yield running
            finally:
                hub = running.hub if running is not None else hub  # a test may have restarted it
                for node in nodes.values():
                    if node.agent is not None:
                        node.agent.stop()
                    remove_host(world, ZONE, node.name)
                hub.stop(remove_interface=True)
                for peer in mesh.peers(wired):
                    if peer.node in {node.name for node in nodes.values()}:
                        mesh.drop(wired, peer)
                secret = wired.get_secret(f"mesh-hub-{rid}")
                if secret is not None:
                    wired.delete_secret(secret)
                (running.pool if running is not None else pool).close()


@dataclass
class Replica:
    """An orchestrator process beside the world's, with the mesh's settings."""

    process: Process
    host: str
    port: int
    https_port: int

    @property
    def https_url(self) -> str:
        return f"https://{self.host}:{self.https_port}"


@pytest.fixture(scope="module")
def replica(meshed_world: Mesh, world: World) -> Iterator[Replica]:
    host = world.cfg.orchestrator_host
    port, https_port = free_port(host), free_port(host)
    process = world.spawn_orchestrator(
        f"orchestrator-mesh-{meshed_world.net.rid}", port, https_port, meshed_world.env()
    )
    try:
        yield Replica(process, host, port, https_port)
    finally:
        process.stop()


def test_the_orchestrator_reaches_every_node_over_the_mesh_and_none_directly(meshed_world: Mesh) -> None:
    net = meshed_world.net
    # Every node, the one behind NAT too (it dialled out, nothing dialled in), at its mesh address.
    for node in meshed_world.nodes.values():
        meshed_world.eventually_answers(node)
        assert ipaddress.ip_address(node.address) in ipaddress.ip_network(net.mesh_range)
    # The nodes' own addresses: unreachable from here, from the hub (n3's), and not served on.
    for n in (1, 2, 3):
        assert "connected" not in net.connect(None, net.node_direct(n), AGENT_PORT)
    assert "connected" not in net.connect(net.hub, net.node_direct(3), AGENT_PORT)
    assert "ConnectionRefused" in net.connect(net.node(1), net.node_direct(1), AGENT_PORT)
    # The node's own view: `flexplane-agent mesh status`.
    n3 = meshed_world.nodes[3]
    status = run(
        in_ns(n3.ns, sys.executable, "-m", "agent", "mesh", "status", "--mesh-config", str(n3.mesh_config))
    )
    assert f"{n3.address}/24 via {net.hub_public}:{HUB_PORT}, last handshake" in status.stdout
    assert "never" not in status.stdout


def test_the_hosts_query_and_the_admin_hosts_page_show_each_nodes_mesh_address_and_last_handshake(
    meshed_world: Mesh, world: World, replica: Replica
) -> None:
    for node in meshed_world.nodes.values():
        meshed_world.eventually_answers(node)
    deadline = time.monotonic() + 10
    while not all(
        p.last_handshake for p in mesh.peers(kube()) if p.node.startswith(f"m{meshed_world.net.rid}")
    ):
        assert time.monotonic() < deadline, "the hub did not record the nodes' handshakes"
        time.sleep(0.2)
    # A replica of the orchestrator with the mesh's settings, beside the world's.
    query = "query ($zone: String) { hosts(zone: $zone) { id meshAddress meshLastHandshake } }"
    for token, sees in ((world.token("admin"), True), (world.token("alice"), False)):
        answer = requests.post(
            f"http://{replica.host}:{replica.port}/graphql",
            json={"query": query, "variables": {"zone": ZONE}},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        ).json()
        rows = {h["id"]: h for h in answer["data"]["hosts"]}
        for node in meshed_world.nodes.values():
            row = rows[f"{ZONE}/{node.name}"]
            if sees:
                assert row["meshAddress"] == node.address
                assert row["meshLastHandshake"] is not None
            else:
                assert row["meshAddress"] is None
                assert row["meshLastHandshake"] is None
    # The admin hosts page of the same replica (the portal's session cookie is the host's, any port).
    admin, _ = login(world, "admin", "/admin/")
    page = admin.get(f"http://{replica.host}:{replica.port}/admin/hosts/", timeout=60)
    assert page.status_code == 200
    for node in meshed_world.nodes.values():
        assert f"data-mesh>mesh {node.address}, handshake " in page.text
        assert f"data-mesh>mesh {node.address}, handshake never" not in page.text


def test_a_cut_node_fails_fast_naming_itself_while_the_others_answer_and_comes_back_without_restart(
    meshed_world: Mesh,
) -> None:
    n1, n2, n3 = (meshed_world.nodes[n] for n in (1, 2, 3))
    for node in (n1, n2, n3):
        meshed_world.eventually_answers(node)
    agent_pid = n2.agent.popen.pid if n2.agent else None
    meshed_world.net.cut(2)
    try:
        # A fresh channel: the cut is met at connect time, as after a keepalive found the path gone.
        meshed_world.pool.close()
        meshed_world.pool = AgentPool(meshed_world.pool.tls, timeout=CALL_TIMEOUT)
        started = time.monotonic()
        with pytest.raises((AgentUnavailable, AgentDeadlineExceeded)) as failed:
            meshed_world.answers(n2)
        assert time.monotonic() - started < CALL_TIMEOUT + 1.0
        assert host_identity(ZONE, n2.name) in str(failed.value)
        assert meshed_world.answers(n1)
        assert meshed_world.answers(n3)
    finally:
        meshed_world.net.restore()
    meshed_world.eventually_answers(n2)
    assert n2.agent is not None
    assert n2.agent.popen.pid == agent_pid
    assert n2.agent.popen.poll() is None


def short_lived_certificate(node: MeshNode, lifetime: int) -> None:
    """The node's certificate replaced by one of the platform CA living ``lifetime`` seconds."""
    identity = host_identity(ZONE, node.name)
    key = new_key()
    csr = platform_ca.check_csr(make_csr(key, identity), identity)
    with override_settings(FLEXPLANE_AGENT_CERT_LIFETIME=float(lifetime)):
        pem = platform_ca.sign(
            platform_ca.platform_ca(kube()), csr, identity, [ipaddress.ip_address(node.address)]
        )
    (node.directory / "agent.crt").write_text(pem)
    (node.directory / "agent.key").write_bytes(key_pem(key))


def renewing_at(node: MeshNode, url: str, ca: Path) -> None:
    """The node's agent configured to renew at ``url`` (trusting ``ca``), as its bootstrap writes it."""
    config = node.directory / "agent.toml"
    lines = [line for line in config.read_text().splitlines() if not line.startswith("orchestrator_")]
    lines += [f"orchestrator_url = {_toml(url)}", f"orchestrator_ca = {_toml(str(ca))}"]
    config.write_text("\n".join(lines) + "\n")


def test_a_node_rotates_its_key_with_its_certificate_renewal_and_loses_at_most_one_call(
    meshed_world: Mesh, world: World, replica: Replica
) -> None:
    n3 = meshed_world.nodes[3]  # behind NAT: the hub cannot dial it, the node's renewal brings it back
    meshed_world.eventually_answers(n3)
    old = n3.key_file.read_text().strip()
    assert mesh.peer_of(ZONE, n3.name, mesh.peers(kube())).public_key == public_key(old)  # type: ignore[union-attr]
    assert world.ca is not None
    # The agent renews at the orchestrator's HTTPS endpoint, relayed into its namespace (its way out).
    relayed = relay(n3.ns, replica.host, replica.https_port)
    try:
        short_lived_certificate(n3, RENEW_LIFE)
        renewing_at(n3, replica.https_url, world.ca.cert_path)
        assert n3.agent is not None
        n3.agent.stop()
        start_agent(n3, meshed_world.logs)
        meshed_world.eventually_answers(n3)
        assert n3.key_file.read_text().strip() == old, "the renewal came before the calls were counted"
        # Calls one after another while the agent renews: its new key made on the node, sent with
        # the renewal, taken by the hub; the calls go on.
        failed: list[str] = []
        after = 0
        deadline = time.monotonic() + RENEW_LIFE + 10
        while after < 5:
            assert time.monotonic() < deadline, f"no renewal:\n{n3.agent.output()[-2000:]}"
            try:
                assert meshed_world.answers(n3)
                if n3.key_file.read_text().strip() != old:
                    after += 1
            except (AgentUnavailable, AgentDeadlineExceeded) as exc:
                failed.append(str(exc))
            time.sleep(0.05)
        assert len(failed) <= 1, failed
    finally:
        relayed.close()
    new = n3.key_file.read_text().strip()
    peer = mesh.peer_of(ZONE, n3.name, mesh.peers(kube()))
    assert peer is not None
    assert (peer.public_key, peer.address) == (public_key(new), n3.address)
    wait_for_line(n3.agent, "renewed the certificate", 10)  # logged once the new key is in use
    # Made on the node, it never left it: the orchestrator saw and recorded the public key only.
    assert new not in replica.process.output()
    assert new not in json.dumps(peer.to_spec())
    renewed = x509.load_pem_x509_certificate((n3.directory / "agent.crt").read_bytes())
    life = renewed.not_valid_after_utc - renewed.not_valid_before_utc
    assert life.total_seconds() > RENEW_LIFE * 2
    # The hub holds the new key only; the node presenting its old key again gets nothing.
    configured = meshed_world.hub.interface.peers()
    assert public_key(new) in configured
    assert public_key(old) not in configured
    wg = Interface(n3.wg, n3.ns)
    try:
        wg.configure(old)
        meshed_world.eventually_fails(n3)
    finally:
        wg.configure(new)
    meshed_world.eventually_answers(n3)


def ask_proxy(net: Topology, request: bytes) -> str:
    """What the hub's proxy answers a request made from the orchestrator's pod: its head, or all of it."""
    with connect_in(net.pod_ns, net.proxy_address, PROXY_PORT) as conn:
        conn.settimeout(5)
        conn.sendall(request)
        answer = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in answer or not answer.startswith(b"HTTP/1.1 200"):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                answer += chunk
        return answer.decode("utf-8", "replace")


def connect_to(target: str) -> bytes:
    return f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()


def test_an_orchestrator_pod_with_no_route_to_the_mesh_reaches_every_agent_through_the_hubs_proxy(
    meshed_world: Mesh, world: World
) -> None:
    net = meshed_world.net
    nodes = list(meshed_world.nodes.values())
    for node in nodes:
        meshed_world.eventually_answers(node)
    # The pod has no route to the mesh (the NAT'd node's address too), nor to the nodes themselves.
    for node in nodes:
        assert "unreachable" in net.connect(net.pod_ns, node.address, AGENT_PORT)
        assert "unreachable" in net.connect(net.pod_ns, net.node_direct(node.n), AGENT_PORT)
    assert meshed_world.hub.proxy is not None
    opened = meshed_world.hub.proxy.opened
    # The orchestrator's own pool, built from its settings, in the pod: every agent answers; and
    # the TLS inside the tunnel is still checked end to end (n1's name at n2's address: refused).
    impostor = AgentTarget(nodes[0].target.identity, nodes[1].target.address)
    argv = in_ns(
        net.pod_ns,
        sys.executable,
        "-m",
        "tests.mesh.pod_client",
        *(f"{t.identity}={t.address}" for t in [*(n.target for n in nodes), impostor]),
    )
    env = {
        **os.environ,
        **world.orchestrator_env(),
        **meshed_world.env(),
        "FLEXPLANE_MESH_PROXY": meshed_world.proxy,
    }
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    *rows, refused = map(json.loads, done.stdout.splitlines())
    results = {row["identity"]: row for row in rows}
    assert "serving" not in refused, refused
    assert refused["proxy"] == meshed_world.proxy
    for node in nodes:
        assert results[node.target.identity] == {
            "identity": node.target.identity,
            "proxy": meshed_world.proxy,
            "serving": True,
        }
    assert meshed_world.hub.proxy.opened >= opened + len(nodes)


def test_the_hubs_proxy_forwards_only_to_agents_and_only_on_the_clusters_side(meshed_world: Mesh) -> None:
    net = meshed_world.net
    n1 = meshed_world.nodes[1]
    meshed_world.eventually_answers(n1)
    hub_mesh = mesh.hub(kube()).address
    unused = str(ipaddress.ip_network(net.mesh_range).network_address + 200)
    assert ask_proxy(net, connect_to(f"{n1.address}:{AGENT_PORT}")).startswith("HTTP/1.1 200")
    for target, says in (
        (f"{net.hub_public}:{AGENT_PORT}", f"outside the mesh range {net.mesh_range}"),
        (f"{net.node_direct(1)}:{AGENT_PORT}", f"outside the mesh range {net.mesh_range}"),
        (f"{n1.address}:22", "not the endpoint of an agent"),
        (f"{n1.address}:{HUB_PORT}", "not the endpoint of an agent"),
        (f"{hub_mesh}:{AGENT_PORT}", "not the endpoint of an agent"),
        (f"{unused}:{AGENT_PORT}", "not the endpoint of an agent"),
        (f"agent.example:{AGENT_PORT}", "resolves no names"),
    ):
        answer = ask_proxy(net, connect_to(target))
        assert answer.startswith("HTTP/1.1 403 Forbidden"), (target, answer)
        assert says in answer, (target, answer)
    answer = ask_proxy(net, f"GET http://{n1.address}:{AGENT_PORT}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert answer.startswith("HTTP/1.1 405")
    # The nodes' side has no proxy: the hub's mesh address does not serve it.
    assert "ConnectionRefused" in net.connect(n1.ns, hub_mesh, PROXY_PORT)


def test_a_key_recorded_for_no_host_gets_nothing(meshed_world: Mesh) -> None:
    net = meshed_world.net
    stranger = Interface(f"fpm{net.rid}x", net.node(1))
    stranger.create()
    try:
        key = new_private_key()
        stranger.configure(key)
        hub_key = mesh.hub(kube()).public_key
        stranger.set_peer(Peer(hub_key, (net.mesh_range,), f"{net.hub_public}:{HUB_PORT}", 1))
        stranger.set_address(f"{net.mesh_range.rsplit('.', 1)[0]}.250/24")
        time.sleep(3)
        assert stranger.peers()[hub_key].latest_handshake == 0
        assert public_key(key) not in meshed_world.hub.interface.peers()
        assert "connected" not in net.connect(net.node(1), mesh.hub(kube()).address, AGENT_PORT, timeout=1.0)
    finally:
        stranger.delete()


def test_a_restarted_hub_is_found_again_and_calls_meanwhile_fail_within_their_deadline(
    meshed_world: Mesh, wired: KubeSource
) -> None:
    n3 = meshed_world.nodes[3]
    meshed_world.eventually_answers(n3)
    hub = meshed_world.hub
    hub.stop(remove_interface=True)
    started = time.monotonic()
    with pytest.raises((AgentUnavailable, AgentDeadlineExceeded)):
        meshed_world.answers(n3)
    assert time.monotonic() - started < CALL_TIMEOUT + 1.0
    meshed_world.hub = new_hub(meshed_world.net, wired)
    meshed_world.hub.start()
    # The node behind NAT is found again within its keepalive: the hub dials it back at the endpoint
    # it recorded, through the mapping the node's keepalives kept open.
    back = time.monotonic()
    key = mesh.peer_of(ZONE, n3.name, mesh.peers(kube())).public_key  # type: ignore[union-attr]
    while not (state := meshed_world.hub.interface.peers().get(key)) or not state.latest_handshake:
        assert time.monotonic() - back < KEEPALIVE + 1.5, "no handshake with the restarted hub"
        time.sleep(0.1)
    # The orchestrator's channel reconnects on its own backoff (at most 10 s), no restart.
    meshed_world.eventually_answers(n3, within=KEEPALIVE + 10)


def test_remove_host_makes_its_traffic_fail_within_seconds(meshed_world: Mesh) -> None:
    n2 = meshed_world.nodes[2]
    meshed_world.eventually_answers(n2)
    key = mesh.peer_of(ZONE, n2.name, mesh.peers(kube())).public_key  # type: ignore[union-attr]
    lifecycle.remove_host(admin(), ZONE, n2.name, force=True)
    assert mesh.peer_of(ZONE, n2.name, mesh.peers(kube())) is None
    started = time.monotonic()
    meshed_world.eventually_fails(n2, within=5)
    assert time.monotonic() - started < 5
    assert key not in meshed_world.hub.interface.peers()
