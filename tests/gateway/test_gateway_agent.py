"""The Gateways service end to end: a real agent process (root) over mTLS, its gateway on this
namespace's bridges, packets through it; killed, restarted, and refusing bad specs.

The network is :class:`tests.gateway.topology.RootNet`: an external bridge with the internet and a
VNet bridge with one VM, made here, where the agent runs.
"""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import grpc
import pytest

from agentclient import AgentPool, AgentTarget, ClientNotAllowed
from agentclient.errors import ERROR_METADATA_KEY
from agentclient.gateways import (
    FIELD_METADATA_KEY,
    GATEWAY_REFUSED,
    GatewayFailed,
    GatewayRefused,
    GatewaySpec,
    Leg,
    PortForward,
    PublicIp,
    Uplink,
    spec_to_proto,
)
from agentclient.proto.flexplane.agent.v1 import agent_pb2_grpc
from devstack.sandbox import PACKAGED_BOUNDING_SET, confinement
from tests.agent.conftest import (  # noqa: F401  # fixtures, imported to be found here too
    AgentProcess,
    Pki,
    agent_config,
    launch,
    pki,
    pool,
    proxmox,
)
from tests.gateway.topology import (
    INTERNET,
    RootNet,
    addresses_of,
    ask,
    echo_server,
    rules_of,
    sh,
    socket_in,
    source_address,
)

TIMEOUT = 20.0
EXTERNAL = "203.0.113.2"
PUBLIC = "203.0.113.10"


@pytest.fixture(scope="module")
def rootnet() -> Iterator[RootNet]:
    network = RootNet().build()
    try:
        yield network
    finally:
        network.destroy()


@pytest.fixture(scope="module")
def gateway_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("node") / "gateways"


@pytest.fixture(scope="module")
def start(launch: Callable[..., AgentProcess], gateway_dir: Path) -> Callable[[], AgentProcess]:  # noqa: F811
    return lambda: launch(gateway_dir=str(gateway_dir))


@pytest.fixture(scope="module")
def node(start: Callable[[], AgentProcess]) -> Iterator[list[AgentProcess]]:
    """The node's agent (a list: a test restarts it); stopped afterwards."""
    running = [start()]
    yield running
    running[-1].stop()


def spec(rootnet: RootNet, generation: int = 1, **changes: object) -> GatewaySpec:
    values: dict[str, object] = {
        "id": rootnet.gateway_id("g"),
        "generation": generation,
        "uplink": Uplink(rootnet.ext, None, f"{EXTERNAL}/24", INTERNET),
        "legs": (Leg(rootnet.vnet, "10.20.0.1/24"),),
        "public_ips": (PublicIp(PUBLIC),),
        "forwards": (PortForward(PUBLIC, "tcp", 8080, "10.20.0.5", 80),),
    }
    values.update(changes)
    return GatewaySpec(**values)  # type: ignore[arg-type]


def target_of(node: list[AgentProcess]) -> AgentTarget:
    return node[-1].target()


def test_the_agent_runs_under_its_units_sandbox(node: list[AgentProcess]) -> None:
    """As systemd would run it on a node (devstack.sandbox): what passes here works under the unit."""
    assert confinement(node[-1].process.pid) == (PACKAGED_BOUNDING_SET, True, 2)


def test_a_gateway_applied_through_the_agent_forwards_and_is_reported(
    rootnet: RootNet,
    node: list[AgentProcess],
    pool: AgentPool,  # noqa: F811
    gateway_dir: Path,
) -> None:
    wanted = spec(rootnet)
    state = pool.apply_gateway(target_of(node), wanted, timeout=TIMEOUT)
    assert (state.id, state.generation, state.node, state.healthy) == (wanted.id, 1, "pve1", True)
    assert (gateway_dir / f"{wanted.id}.json").is_file()
    with echo_server(rootnet.internet, 9000), echo_server(rootnet.vm, 80):
        assert source_address(ask(rootnet.vm, INTERNET, 9000)) == EXTERNAL
        assert source_address(ask(rootnet.internet, PUBLIC, 8080)) == INTERNET
    reported = pool.gateway_state(target_of(node), wanted.id, timeout=TIMEOUT)
    assert reported is not None
    assert reported.healthy
    assert reported.counters["egress_packets"] > 0
    assert reported.counters["ingress_packets"] > 0
    assert pool.gateway_state(target_of(node), rootnet.gateway_id("none"), timeout=TIMEOUT) is None


def test_only_the_orchestrators_certificate_may_call_gateways(
    rootnet: RootNet,
    node: list[AgentProcess],
    pki: Pki,  # noqa: F811
) -> None:
    with AgentPool(pki.client_tls(pki.stranger)) as stranger, pytest.raises(ClientNotAllowed):
        stranger.apply_gateway(target_of(node), spec(rootnet), timeout=TIMEOUT)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m.forwards[0].__setattr__("port", 70000), "forwards[0].port"),
        (
            lambda m: m.forwards.add(
                public_ip=PUBLIC, protocol="tcp", port=8080, to_address="10.20.0.6", to_port=81
            ),
            "forwards[1].port",
        ),
        (lambda m: m.forwards[0].__setattr__("to_address", "10.99.0.5"), "forwards[0].to_address"),
    ],
    ids=["a-port-outside-1-65535", "a-port-forwarded-twice", "an-address-not-on-the-legs"],
)
def test_a_bad_spec_is_refused_with_the_field_named_and_nothing_half_applied(
    rootnet: RootNet,
    node: list[AgentProcess],
    pool: AgentPool,  # noqa: F811
    change: Callable[[object], None],
    field: str,
) -> None:
    running = spec(rootnet)
    pool.apply_gateway(target_of(node), running, timeout=TIMEOUT)
    before = (rules_of(running.id), addresses_of(running.id))
    message = spec_to_proto(spec(rootnet, 2, public_ips=(PublicIp(PUBLIC), PublicIp("203.0.113.11"))))
    change(message)
    stub = agent_pb2_grpc.GatewaysStub(pool.channel(target_of(node)))
    with pytest.raises(grpc.RpcError) as refused:
        stub.Apply(message, timeout=TIMEOUT)
    error = cast(grpc.Call, refused.value)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    metadata = tuple(error.trailing_metadata() or ())
    assert (ERROR_METADATA_KEY, GATEWAY_REFUSED) in metadata
    assert (FIELD_METADATA_KEY, field) in metadata
    assert field in (error.details() or "")
    assert (rules_of(running.id), addresses_of(running.id)) == before
    state = pool.gateway_state(target_of(node), running.id, timeout=TIMEOUT)
    assert state is not None
    assert state.generation == 1


def test_a_refusal_reaches_the_pools_caller_typed_with_its_field(
    rootnet: RootNet,
    node: list[AgentProcess],
    pool: AgentPool,  # noqa: F811
) -> None:
    wanted = spec(rootnet)
    object.__setattr__(wanted.forwards[0], "port", 0)  # past the client's own checks
    with pytest.raises(GatewayRefused) as refused:
        pool.apply_gateway(target_of(node), wanted, timeout=TIMEOUT)
    assert refused.value.field == "forwards[0].port"
    assert refused.value.gateway == wanted.id


def test_a_spec_the_node_cannot_carry_out_fails_typed_and_the_previous_state_runs(
    rootnet: RootNet,
    node: list[AgentProcess],
    pool: AgentPool,  # noqa: F811
) -> None:
    running = spec(rootnet)
    pool.apply_gateway(target_of(node), running, timeout=TIMEOUT)
    before = rules_of(running.id)
    with pytest.raises(GatewayFailed, match="no bridge fgnone"):
        pool.apply_gateway(
            target_of(node),
            spec(rootnet, 2, uplink=Uplink("fgnone", None, f"{EXTERNAL}/24", INTERNET)),
            timeout=TIMEOUT,
        )
    assert rules_of(running.id) == before


def test_killing_the_agent_leaves_traffic_flowing_and_its_restart_restores_a_lost_gateway(
    rootnet: RootNet,
    node: list[AgentProcess],
    pool: AgentPool,  # noqa: F811
    start: Callable[[], AgentProcess],
) -> None:
    wanted = spec(rootnet)
    pool.apply_gateway(target_of(node), wanted, timeout=TIMEOUT)
    with echo_server(rootnet.internet, 9001):
        conn = socket_in(rootnet.vm, lambda: socket.create_connection((INTERNET, 9001), timeout=2))
        with conn:
            reader = conn.makefile()
            assert source_address(reader.readline().strip()) == EXTERNAL
            node[-1].stop(signal.SIGKILL)
            # Without its agent the node goes on forwarding: the open connection and new ones.
            conn.sendall(b"agent gone\n")
            assert reader.readline().strip() == "agent gone"
            assert source_address(ask(rootnet.vm, INTERNET, 9001)) == EXTERNAL
        # A reboot loses the namespace; the agent, started again, restores it without a call.
        sh("ip", "netns", "delete", f"fpgw-{wanted.id}")
        node.append(start())
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                assert source_address(ask(rootnet.vm, INTERNET, 9001, timeout=0.3)) == EXTERNAL
                break
            except OSError:
                assert time.monotonic() < deadline, "the restarted agent did not restore the gateway"
                time.sleep(0.05)
    state = pool.gateway_state(target_of(node), wanted.id, timeout=TIMEOUT)
    assert state is not None
    assert state.healthy


def test_removing_a_gateway_is_idempotent(
    rootnet: RootNet,
    node: list[AgentProcess],
    pool: AgentPool,  # noqa: F811
    gateway_dir: Path,
) -> None:
    wanted = spec(rootnet)
    pool.apply_gateway(target_of(node), wanted, timeout=TIMEOUT)
    pool.remove_gateway(target_of(node), wanted.id, timeout=TIMEOUT)
    pool.remove_gateway(target_of(node), wanted.id, timeout=TIMEOUT)
    assert pool.gateway_state(target_of(node), wanted.id, timeout=TIMEOUT) is None
    assert f"fpgw-{wanted.id}" not in sh("ip", "netns", "list").stdout
    assert not (gateway_dir / f"{wanted.id}.json").exists()
