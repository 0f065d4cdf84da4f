"""The hub's CONNECT proxy's rules, and the agent pool's choice of it (no namespaces: the forwarding
itself is proven in test_mesh_namespaces, from a namespace with no route to the mesh)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator

import pytest

from agentclient import AgentPool, AgentTarget, ClientTLS
from agentclient.pool import channel_options
from orchestrator.mesh.proxy import MeshProxy, ProxyRefused, check_request, parse_listen

NET = ipaddress.ip_network("10.99.0.0/24")
AGENTS = frozenset({("10.99.0.2", 7443), ("10.99.0.3", 7443)})


def head(target: str, method: str = "CONNECT") -> bytes:
    return f"{method} {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()


def refused(request: bytes, client: str = "10.244.1.7") -> ProxyRefused:
    with pytest.raises(ProxyRefused) as caught:
        check_request(request, client, NET, AGENTS)
    return caught.value


def test_a_connect_to_an_enrolled_agents_endpoint_is_forwarded() -> None:
    assert check_request(head("10.99.0.2:7443"), "10.244.1.7", NET, AGENTS) == ("10.99.0.2", 7443)


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("192.0.2.1:7443", "outside the mesh range 10.99.0.0/24"),
        ("10.99.1.2:7443", "outside the mesh range"),
        ("10.99.0.2:22", "not the endpoint of an agent"),
        ("10.99.0.1:7443", "not the endpoint of an agent"),  # the hub itself
        ("10.99.0.9:7443", "not the endpoint of an agent"),  # no host there
        ("agent.example:7443", "resolves no names"),
    ],
)
def test_a_connect_elsewhere_is_refused_saying_why(target: str, says: str) -> None:
    refusal = refused(head(target))
    assert refusal.status == 403
    assert says in refusal.reason


def test_a_client_on_the_mesh_is_refused_so_nodes_cannot_reach_each_other_through_it() -> None:
    refusal = refused(head("10.99.0.3:7443"), client="10.99.0.2")
    assert refusal.status == 403
    assert "not the nodes" in refusal.reason


def test_other_methods_and_malformed_requests_are_refused() -> None:
    assert refused(head("http://10.99.0.2:7443/", method="GET")).status == 405
    assert refused(b"CONNECT 10.99.0.2:7443\r\n\r\n").status == 400
    assert refused(head("10.99.0.2:99999")).status == 400
    assert refused(head("10.99.0.2")).status == 400


def test_the_listen_address_is_host_and_port() -> None:
    assert parse_listen("10.244.0.5:3128") == ("10.244.0.5", 3128)
    assert parse_listen("[fd00::5]:3128") == ("fd00::5", 3128)
    for bad in ("3128", ":3128", "10.0.0.1:", "10.0.0.1:http"):
        with pytest.raises(ValueError, match="is not host:port"):
            parse_listen(bad)


@pytest.fixture
def proxy() -> Iterator[MeshProxy]:
    running = MeshProxy("127.0.0.1:0", NET)
    running.start()
    running.allow(AGENTS)
    try:
        yield running
    finally:
        running.stop()


def ask(proxy: MeshProxy, request: bytes) -> str:
    assert proxy.address is not None
    with socket.create_connection(proxy.address, timeout=5) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
    return answer.decode()


def test_the_proxy_answers_a_refusal_in_http_and_closes(proxy: MeshProxy) -> None:
    answer = ask(proxy, head("192.0.2.1:7443"))
    assert answer.startswith("HTTP/1.1 403 Forbidden\r\n")
    assert answer.endswith("192.0.2.1 is outside the mesh range 10.99.0.0/24\n")
    assert ask(proxy, b"GET / HTTP/1.1\r\n\r\n").startswith("HTTP/1.1 405 ")
    assert proxy.opened == 0


def test_the_pool_tunnels_only_mesh_addresses_through_the_proxy() -> None:
    tls = ClientTLS(b"", b"", b"")
    with AgentPool(tls, proxy="http://10.244.0.5:3128", proxy_networks=["10.99.0.0/24"]) as pool:
        assert pool.proxy_for(AgentTarget("a", "10.99.0.2:7443")) == "http://10.244.0.5:3128"
        assert pool.proxy_for(AgentTarget("b", "192.0.2.5:7443")) == ""
        assert pool.proxy_for(AgentTarget("c", "pve.example:7443")) == ""
    with AgentPool(tls, proxy="", proxy_networks=["10.99.0.0/24"]) as pool:
        assert pool.proxy_for(AgentTarget("a", "10.99.0.2:7443")) == ""


def test_a_channel_through_the_proxy_still_checks_the_agents_identity() -> None:
    target = AgentTarget("pve1.zone-a.agents.flexplane", "10.99.0.2:7443")
    options = dict(channel_options(target, "http://10.244.0.5:3128"))
    assert options["grpc.http_proxy"] == "http://10.244.0.5:3128"
    assert options["grpc.ssl_target_name_override"] == target.identity
    assert "grpc.http_proxy" not in dict(channel_options(target))
