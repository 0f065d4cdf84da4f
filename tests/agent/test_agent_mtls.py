"""Mutual TLS: who may call the agent, and whom the caller accepts as the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentclient import AgentPool, AgentTarget, AgentTLSError, ClientNotAllowed, ClientTLS, ProxyRefused
from agentclient.pool import channel_options
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc
from devstack.pki import generate_key, write_certificate, write_key


def raw_channel(
    target: AgentTarget, ca: Path, cert: Path | None = None, key: Path | None = None
) -> grpc.Channel:
    """A channel built by hand, so that it may present no client certificate at all."""
    credentials = grpc.ssl_channel_credentials(
        root_certificates=ca.read_bytes(),
        private_key=key.read_bytes() if key else None,
        certificate_chain=cert.read_bytes() if cert else None,
    )
    return grpc.secure_channel(target.address, credentials, options=channel_options(target))


def test_it_refuses_a_caller_without_a_client_certificate(pki: Any, target: AgentTarget) -> None:
    with raw_channel(target, pki.ca.cert_path) as channel, pytest.raises(grpc.RpcError) as caught:
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)

    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_caller_without_a_client_certificate_reaches_no_proxmox(
    pki: Any, target: AgentTarget, pve: Any
) -> None:
    before = list(pve.requests)
    request = agent_pb2.ProxmoxRequest(method="GET", path="/version")

    with raw_channel(target, pki.ca.cert_path) as channel, pytest.raises(grpc.RpcError):
        agent_pb2_grpc.ProxmoxProxyStub(channel).Call(request, timeout=5)

    assert pve.requests == before


def test_it_refuses_a_client_certificate_of_another_ca(pki: Any, target: AgentTarget, pve: Any) -> None:
    before = list(pve.requests)
    cert, key = pki.other_ca_orchestrator

    with (
        AgentPool(ClientTLS.from_files(pki.ca.cert_path, cert, key)) as pool,
        pytest.raises(AgentTLSError) as caught,
    ):
        pool.proxmox(target, "GET", "/version")

    assert "refused our client certificate" in str(caught.value)
    assert pve.requests == before


def test_it_refuses_a_client_whose_common_name_is_not_allowed(
    pki: Any, target: AgentTarget, pve: Any
) -> None:
    before = list(pve.requests)

    with AgentPool(pki.client_tls(pki.stranger)) as pool, pytest.raises(ClientNotAllowed) as caught:
        pool.proxmox(target, "GET", "/version")

    assert "'flexplane-portal' is not in this agent's allowed_clients" in str(caught.value)
    assert pve.requests == before


def test_a_refused_client_is_a_proxy_refusal_too(pki: Any, target: AgentTarget) -> None:
    with AgentPool(pki.client_tls(pki.stranger)) as pool, pytest.raises(ProxyRefused):
        pool.check_health(target)


def test_it_refuses_a_client_certificate_meant_for_servers_only(
    pki: Any, tmp_path: Path, target: AgentTarget
) -> None:
    key = generate_key()
    server_only = pki.ca.sign(
        key.public_key(), common_name="flexplane-orchestrator", usages=[ExtendedKeyUsageOID.SERVER_AUTH]
    )
    write_certificate(tmp_path / "server-only.crt", server_only)
    write_key(tmp_path / "server-only.key", key)
    tls = ClientTLS.from_files(pki.ca.cert_path, tmp_path / "server-only.crt", tmp_path / "server-only.key")

    # gRPC's TLS stack checks the extended key usage: the handshake itself fails.
    with AgentPool(tls) as pool, pytest.raises(AgentTLSError, match="refused our client certificate"):
        pool.check_health(target)


def test_the_caller_refuses_an_agent_whose_certificate_names_another_host(
    pool: AgentPool, agent: Any, pve: Any
) -> None:
    before = list(pve.requests)
    impostor = agent.target(identity="pve2.zone1.agents.flexplane")

    with pytest.raises(AgentTLSError) as caught:
        pool.proxmox(impostor, "GET", "/version")

    assert str(caught.value) == (
        f"The TLS handshake with agent pve2.zone1.agents.flexplane at {agent.address} failed: "
        "its certificate does not name pve2.zone1.agents.flexplane."
    )
    assert pve.requests == before


def test_the_caller_refuses_an_agent_of_another_ca(pki: Any, target: AgentTarget) -> None:
    cert, key = pki.orchestrator
    tls = ClientTLS.from_files(pki.other_ca.cert_path, cert, key)

    with AgentPool(tls) as pool, pytest.raises(AgentTLSError, match="did not verify against the platform CA"):
        pool.check_health(target)


def test_it_streams_health_to_an_allowed_client(pool: AgentPool, target: AgentTarget) -> None:
    watch = health_pb2_grpc.HealthStub(pool.channel(target)).Watch(health_pb2.HealthCheckRequest(), timeout=5)

    first = next(iter(watch))
    watch.cancel()

    assert first.status == health_pb2.HealthCheckResponse.SERVING


def test_it_refuses_a_health_stream_to_a_client_whose_common_name_is_not_allowed(
    pki: Any, target: AgentTarget
) -> None:
    with AgentPool(pki.client_tls(pki.stranger)) as pool, pytest.raises(grpc.RpcError) as caught:
        next(
            iter(
                health_pb2_grpc.HealthStub(pool.channel(target)).Watch(
                    health_pb2.HealthCheckRequest(), timeout=5
                )
            )
        )

    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
