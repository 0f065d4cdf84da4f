"""An agent restart leaves the node's edge gateways alone: same namespace, same rules, same counters,
and the connections through them carry on, whichever side speaks first.

The network is :class:`tests.gateway.topology.Net` (this module's own). Node 1's namespace is a
devstack node: a world (:class:`devstack.world.World`, not started) runs its agent from the systemd
unit the bootstrap writes, restarts it and stops it, with its own stand-in for systemd, as ``make dev``
runs its nodes' agents. The agent finds its gateway's spec kept on the node (as after an apply by the
orchestrator) and runs it; the tests then restart the agent and look at what changed. Node 2's
gateways are made by :class:`agent.gateways.GatewayManager` directly, and one by a world of its own that
is then stopped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.gateways import GatewayManager
from agent.gateways.net import hidden_mounts, namespace
from agent.service import DROPIN, dropin_text
from agentclient.gateways import GatewaySpec, PortForward, PublicIp
from devstack.sandbox import PACKAGED_BOUNDING_SET, confinement
from devstack.world import World, WorldConfig
from tests import addresses
from tests.agent.conftest import AGENT_HOST, NODE, ZONE, Pki, pki, write_config  # noqa: F401  # pki: fixture
from tests.gateway.topology import INTERNET, Net, ask, echo_server, rules_of, sh, socket_in, source_address

EXTERNAL = "203.0.113.2"  # the world's gateway on node 1
PUBLIC = "203.0.113.10"
EXTERNAL_M = "203.0.113.4"  # the manager's gateway on node 2
EXTERNAL_S = "203.0.113.3"  # the gateway of the world that is stopped, on node 2
FORWARD_PORT, VM_PORT, SNAT_PORT, PROBE_PORT = 8080, 80, 9100, 9101
TIMEOUT = 20.0
RECEIVE = 5.0  # how long a message through the gateway may take to arrive
RESTORED = "gateways restored:"  # what the agent logs once it went through its kept specs


class NodeWorld(World):
    """A world whose only node's network namespace is the test's: the world runs that node's agent."""

    def __init__(self, cfg: WorldConfig, netns: str) -> None:
        super().__init__(cfg)
        self.netns = netns

    def node_namespace(self, zone: str, node: str) -> str | None:
        return self.netns


@contextlib.contextmanager
def node_world(scratch: Path, pki: Pki, netns: str, kept: GatewaySpec) -> Iterator[NodeWorld]:  # noqa: F811
    """A world running the agent of a node in netns, enrolled as the bootstrap leaves it (a configuration,
    its systemd drop-in), with ``kept`` as the gateway the orchestrator last applied there; stopped after."""
    world = NodeWorld(WorldConfig(scratch=scratch, subnet=addresses.WORLD), netns)
    root = scratch / "nodes" / f"{ZONE}-{NODE}"
    config = write_config(root / "etc" / "flexplane", pki, listen=f"{AGENT_HOST}:0")
    dropin = root / DROPIN
    dropin.parent.mkdir(parents=True)
    dropin.write_text(dropin_text([sys.executable, "-m", "agent", "serve", "--config", str(config)]))
    agent = world.add_agent(ZONE, NODE, AGENT_HOST, root)
    agent.gateway_dir.mkdir(parents=True)
    (agent.gateway_dir / f"{kept.id}.json").write_text(json.dumps(kept.to_dict()))
    try:
        world.start_agent(ZONE, NODE)
        yield world
    finally:
        world.stop()


def output(world: World) -> str:
    """What the node's agent (its latest run) wrote."""
    agent = world.agents[ZONE, NODE]
    assert agent.process is not None
    return agent.process.output()


def restored(world: World) -> None:
    """Wait until the node's agent (its latest run) went through its kept specs."""
    deadline = time.monotonic() + TIMEOUT
    while RESTORED not in output(world):
        assert time.monotonic() < deadline, f"the agent did not restore its gateways:\n{output(world)}"
        time.sleep(0.05)


def until(check: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------ connections


def receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


class Connection:
    """One TCP connection through the gateway: its ``client`` end and the ``server``'s accepted end."""

    def __init__(
        self, client_ns: str, server_ns: str, listen: tuple[str, int], dial: tuple[str, int]
    ) -> None:
        self._listener = socket_in(server_ns, lambda: socket.create_server(listen))
        self._listener.settimeout(RECEIVE)
        self.client = socket_in(client_ns, lambda: socket.create_connection(dial, timeout=RECEIVE))
        self.server, self.peer = self._listener.accept()
        for end in (self.client, self.server):
            end.settimeout(RECEIVE)

    def server_first(self, text: str) -> tuple[bytes, bytes]:
        """The server speaks, then the client answers: what each end received."""
        self.server.sendall(text.encode())
        heard = receive(self.client, len(text))
        self.client.sendall(heard.upper())
        return heard, receive(self.server, len(text))

    def close(self) -> None:
        for sock in (self.client, self.server, self._listener):
            sock.close()


@contextlib.contextmanager
def connections(net: Net) -> Iterator[tuple[Connection, Connection]]:
    """A connection in through the port forward (internet to VM a1) and one out through SNAT (a1 to the
    internet), each having carried data both ways; closed afterwards."""
    a1 = net.vms["a1"].ns
    made: list[Connection] = []
    try:
        made.append(Connection(net.internet, a1, ("10.20.0.5", VM_PORT), (PUBLIC, FORWARD_PORT)))
        assert made[0].peer[0] == INTERNET  # forwarded, not SNAT-ed
        made.append(Connection(a1, net.internet, (INTERNET, SNAT_PORT), (INTERNET, SNAT_PORT)))
        assert made[1].peer[0] == EXTERNAL  # SNAT-ed to the gateway's external address
        for conn in made:
            assert conn.server_first("before") == (b"before", b"BEFORE")
        yield made[0], made[1]
    finally:
        for conn in made:
            conn.close()


# ------------------------------------------------------------------------------------------ what a node has


def gateway_spec(net: Net) -> GatewaySpec:
    """The world's gateway on node 1: SNAT for VDC A's network, and a port forward to VM a1."""
    return GatewaySpec(
        id=net.gateway_id("r"),
        generation=1,
        uplink=net.uplink(EXTERNAL),
        legs=(net.leg("vnet-a"),),
        public_ips=(PublicIp(PUBLIC),),
        forwards=(PortForward(PUBLIC, "tcp", FORWARD_PORT, "10.20.0.5", VM_PORT),),
    )


def inode_of(gateway_id: str) -> int:
    """The inode of the gateway's network namespace (the same namespace keeps it; a new one gets another)."""
    return Path("/run/netns", namespace(gateway_id)).stat().st_ino


def snapshot(gateway_id: str, node_ns: str) -> dict[str, Any]:
    """What a restart must not change: the namespace (its inode), the links on both sides (their
    indexes: a link made again gets a new one), the ruleset's objects and rules (their handles: rules
    loaded again get new ones); and the counters' values, which only grow (see :func:`unchanged`)."""
    ns = namespace(gateway_id)
    inside = json.loads(sh("ip", "-n", ns, "-j", "link", "show").stdout)
    host = json.loads(sh("ip", "-n", node_ns, "-j", "link", "show").stdout)
    table = json.loads(
        sh("ip", "netns", "exec", ns, "nft", "-a", "-j", "list", "table", "inet", "flexplane").stdout
    )
    items = [(kind, body) for item in table["nftables"] for kind, body in item.items() if kind != "metainfo"]
    return {
        "inode": inode_of(gateway_id),
        "inside": sorted((link["ifname"], link["ifindex"]) for link in inside),
        "host ends": sorted(
            (link["ifname"], link["ifindex"]) for link in host if link["ifname"][:3] in ("fgu", "fgl")
        ),
        "handles": sorted(
            (kind, str(body.get("chain", body.get("name"))), body["handle"]) for kind, body in items
        ),
        "counters": {body["name"]: body["packets"] for kind, body in items if kind == "counter"},
    }


def unchanged(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Nothing made again, and the counters went on counting (the legs' IPv6 chatter may add a drop)."""
    assert {**after, "counters": None} == {**before, "counters": None}
    assert after["counters"].keys() == before["counters"].keys()
    assert all(after["counters"][name] >= count for name, count in before["counters"].items())


@pytest.fixture(scope="module")
def world(net: Net, pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeWorld]:  # noqa: F811
    """Node 1's world: its agent running, with the gateway kept on the node, which it runs on start."""
    with node_world(tmp_path_factory.mktemp("restart-world"), pki, net.node(1), gateway_spec(net)) as running:
        restored(running)
        yield running


# ------------------------------------------------------------------------------------------ the tests


def test_server_first_connections_through_a_forward_and_snat_survive_an_agent_restart(
    net: Net, world: NodeWorld
) -> None:
    spec = gateway_spec(net)
    inode = inode_of(spec.id)
    with connections(net) as (forwarded, snatted):
        world.restart_agent(ZONE, NODE)
        # The node forwards new connections (at once: nothing was taken down)...
        with echo_server(net.internet, PROBE_PORT):
            until(lambda: source_address(ask(net.vms["a1"].ns, INTERNET, PROBE_PORT)) == EXTERNAL, "no SNAT")
        # ...and the ones made before carry on, the server (the far side for SNAT, the VM for the forward)
        # speaking first after the restart, then the client.
        assert forwarded.server_first("after a restart") == (b"after a restart", b"AFTER A RESTART")
        assert snatted.server_first("after a restart") == (b"after a restart", b"AFTER A RESTART")
        restored(world)
        assert forwarded.server_first("and its restore") == (b"and its restore", b"AND ITS RESTORE")
        assert snatted.server_first("and its restore") == (b"and its restore", b"AND ITS RESTORE")
    assert inode_of(spec.id) == inode


def test_the_world_runs_the_agent_under_its_units_sandbox(world: NodeWorld) -> None:
    agent = world.agents[ZONE, NODE]
    assert agent.process is not None
    assert confinement(agent.process.popen.pid) == (PACKAGED_BOUNDING_SET, True, 2)


def test_a_restarted_agent_adopts_its_gateway_as_it_finds_it_and_changes_nothing(
    net: Net, world: NodeWorld
) -> None:
    spec = gateway_spec(net)
    # The gateway's namespace is the host's: a shell here enters it.
    assert sh("ip", "netns", "exec", namespace(spec.id), "true", check=False).returncode == 0
    with echo_server(net.internet, PROBE_PORT):
        assert source_address(ask(net.vms["a1"].ns, INTERNET, PROBE_PORT)) == EXTERNAL
    before = snapshot(spec.id, net.node(1))
    assert before["counters"]["egress"] > 0

    world.restart_agent(ZONE, NODE)
    restored(world)

    unchanged(before, snapshot(spec.id, net.node(1)))
    assert f"gateway {spec.id} generation 1 runs as kept: adopted" in output(world)


def test_a_restore_adopts_a_gateway_that_runs_as_kept_and_changes_nothing(
    net: Net, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = GatewaySpec(
        id=net.gateway_id("m"), generation=3, uplink=net.uplink(EXTERNAL_M), legs=(net.leg("vnet-b"),)
    )
    GatewayManager("n2", tmp_path, host=net.node(2)).apply(spec)
    with echo_server(net.internet, PROBE_PORT):
        assert source_address(ask(net.vms["b1"].ns, INTERNET, PROBE_PORT)) == EXTERNAL_M
    before = snapshot(spec.id, net.node(2))

    with caplog.at_level(logging.INFO, logger="agent.gateways"):
        assert GatewayManager("n2", tmp_path, host=net.node(2)).restore() == 1

    unchanged(before, snapshot(spec.id, net.node(2)))
    assert f"gateway {spec.id} generation 3 runs as kept: adopted" in caplog.text


def test_a_restore_applies_again_a_gateway_that_differs_from_its_kept_spec(net: Net, tmp_path: Path) -> None:
    spec = GatewaySpec(
        id=net.gateway_id("m"), generation=4, uplink=net.uplink(EXTERNAL_M), legs=(net.leg("vnet-b"),)
    )
    GatewayManager("n2", tmp_path, host=net.node(2)).apply(spec)
    ns = namespace(spec.id)
    rules, inode = rules_of(spec.id), inode_of(spec.id)
    # Someone changed it by hand: an address more, a chain emptied.
    sh("ip", "-n", ns, "address", "add", "198.51.100.7/32", "dev", "uplink")
    sh("ip", "netns", "exec", ns, "nft", "flush", "chain", "inet", "flexplane", "outbound")

    assert GatewayManager("n2", tmp_path, host=net.node(2)).restore() == 1

    assert "198.51.100.7" not in sh("ip", "-n", ns, "address", "show", "dev", "uplink").stdout
    assert rules_of(spec.id) == rules
    assert inode_of(spec.id) == inode  # repaired in place, not made again
    with echo_server(net.internet, PROBE_PORT):
        assert source_address(ask(net.vms["b1"].ns, INTERNET, PROBE_PORT)) == EXTERNAL_M


def test_stopping_the_world_leaves_none_of_its_nodes_gateways_behind(
    net: Net,
    pki: Pki,  # noqa: F811
    tmp_path: Path,
) -> None:
    spec = GatewaySpec(id=net.gateway_id("s"), generation=1, uplink=net.uplink(EXTERNAL_S))
    ns = namespace(spec.id)
    with node_world(tmp_path, pki, net.node(2), spec) as world:
        restored(world)
        agent = world.agents[ZONE, NODE]
        assert agent.process is not None
        assert ns in sh("ip", "netns", "list").stdout
    assert agent.process.popen.poll() is not None
    assert ns not in sh("ip", "netns", "list").stdout
    assert not Path("/run/netns", ns).exists()


# ---------------------------------------------------------------------------------- the agent's own check

HOST_MOUNTS = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
25 22 0:22 / /run rw,nosuid,nodev shared:5 - tmpfs tmpfs rw
300 25 0:22 /netns /run/netns rw,nosuid,nodev shared:150 - tmpfs tmpfs rw
"""
# systemd's PrivateTmp=: every mount a slave of the host's, shared again among the service's own.
SERVICE_MOUNTS = """\
500 480 8:1 / / rw,relatime shared:301 master:1 - ext4 /dev/sda1 rw
501 500 0:22 / /run rw,nosuid,nodev shared:302 master:5 - tmpfs tmpfs rw
502 500 8:1 /tmp/systemd-private-x/tmp /tmp rw,relatime shared:303 master:1 - ext4 /dev/sda1 rw
"""
# ip netns add in a slave namespace where /run/netns was no mount yet: a new shared mount, its parent a slave.
NEW_MOUNT_IN_A_SLAVE = """\
600 580 8:1 / / rw,relatime master:1 - ext4 /dev/sda1 rw
601 600 8:1 /run/netns /run/netns rw,relatime shared:400 - ext4 /dev/sda1 rw
"""


@pytest.mark.parametrize(
    ("mounts", "hidden"),
    [(HOST_MOUNTS, False), (SERVICE_MOUNTS, True), (NEW_MOUNT_IN_A_SLAVE, True)],
    ids=["the-hosts", "a-private-tmp-service", "a-new-mount-in-a-slave"],
)
def test_the_agent_knows_when_the_namespaces_it_pins_would_not_reach_the_host(
    mounts: str, hidden: bool, tmp_path: Path
) -> None:
    (tmp_path / "mountinfo").write_text(mounts)
    assert (hidden_mounts(tmp_path / "mountinfo", tmp_path / "no-init") is not None) == hidden


@pytest.mark.parametrize(
    ("prefix", "hidden"),
    [((), False), (("unshare", "--mount", "--propagation", "slave", "--"), True)],
    ids=["here", "in-a-slave-mount-namespace"],
)
def test_an_agent_started_in_a_mount_namespace_of_its_own_says_so(
    prefix: tuple[str, ...], hidden: bool
) -> None:
    code = "from agent.gateways.net import hidden_mounts; print(hidden_mounts() or '')"
    said = sh(*prefix, sys.executable, "-c", code).stdout.strip()
    assert bool(said) == hidden, said
