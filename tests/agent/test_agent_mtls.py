"""Mutual TLS: who may call the agent, and whom the caller accepts as the agent.

A caller with no certificate, another CA's or an expired one, and an agent of another CA, with an
expired certificate or another host's, are rows of the security suite (tests/security/test_agent_channel.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentclient import AgentPool, AgentTarget, AgentTLSError, ClientNotAllowed, ClientTLS, ProxyRefused
from devstack.pki import generate_key, write_certificate, write_key


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
