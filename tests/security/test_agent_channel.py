"""The agent channel and the Proxmox proxy: who may talk to an agent, whom a caller accepts as one, and
what the proxy forwards.

A real agent process (mTLS gRPC) serves a fake Proxmox over HTTPS (tests/agent/conftest.py). Every
refusal is checked in the fake's own request list: nothing reached Proxmox. The Proxmox API token's
secret appears in no answer and no line of the agent's log.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from agentclient import (
    AgentError,
    AgentPool,
    AgentTarget,
    AgentTLSError,
    ClientTLS,
    ProxmoxError,
    ProxyRefused,
)
from agentclient.pool import channel_options
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc
from devstack.pki import generate_key, write_certificate, write_key
from tests.agent.conftest import AGENT_HOST, IDENTITY, TOKEN_ID, TOKEN_SECRET, AgentProcess, Pki
from tests.promises import RecordFigure
from tests.security.conftest import refused_before_proxmox

pytestmark = pytest.mark.promise("agent-channel")

SUITE = "agent-channel"


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


def short_lived(
    pki: Pki, directory: Path, *, name: str, lifetime: datetime.timedelta, agent: bool
) -> tuple[Path, Path]:
    """A certificate of the platform CA living lifetime from now (negative: expired already)."""
    key = generate_key()
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if agent:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
    certificate = pki.ca.sign(
        key.public_key(),
        common_name=IDENTITY if agent else "flexplane-orchestrator",
        dns_names=[IDENTITY] if agent else [],
        ip_addresses=[AGENT_HOST] if agent else [],
        usages=usages,
        validity=lifetime,
    )
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    write_certificate(cert_path, certificate)
    write_key(key_path, key)
    return cert_path, key_path


refused = refused_before_proxmox(
    SUITE, "attempts refused before Proxmox was called", "requests those attempts made to Proxmox"
)


@pytest.fixture
def untouched(pve: Any, refused: list[str], request: pytest.FixtureRequest) -> Iterator[None]:
    """The test's attempt must not reach the fake Proxmox; counted as a refusal when it passes."""
    before = list(pve.requests)
    yield
    assert pve.requests == before, "the refused attempt reached Proxmox"
    refused.append(request.node.name)


# ------------------------------------------------------------------------------- mutual TLS


def test_a_caller_without_a_client_certificate_is_refused(
    pki: Pki, target: AgentTarget, untouched: None
) -> None:
    request = agent_pb2.ProxmoxRequest(method="GET", path="/version")

    with raw_channel(target, pki.ca.cert_path) as channel, pytest.raises(grpc.RpcError) as caught:
        agent_pb2_grpc.ProxmoxProxyStub(channel).Call(request, timeout=5)

    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_client_certificate_of_another_ca_is_refused(
    pki: Pki, target: AgentTarget, untouched: None
) -> None:
    cert, key = pki.other_ca_orchestrator

    with (
        AgentPool(ClientTLS.from_files(pki.ca.cert_path, cert, key)) as pool,
        pytest.raises(AgentTLSError, match="refused our client certificate"),
    ):
        pool.proxmox(target, "GET", "/version")


def test_an_expired_client_certificate_is_refused(
    pki: Pki, target: AgentTarget, tmp_path: Path, untouched: None
) -> None:
    cert, key = short_lived(
        pki, tmp_path, name="expired", lifetime=-datetime.timedelta(minutes=1), agent=False
    )

    with (
        AgentPool(ClientTLS.from_files(pki.ca.cert_path, cert, key)) as pool,
        pytest.raises(AgentTLSError, match="refused our client certificate"),
    ):
        pool.proxmox(target, "GET", "/version")


def test_the_caller_refuses_an_agent_presenting_another_hosts_certificate(
    pool: AgentPool, agent: AgentProcess, untouched: None
) -> None:
    """Dialling pve2, the caller meets the agent whose certificate names pve1."""
    impostor = agent.target(identity="pve2.zone1.agents.flexplane")

    with pytest.raises(AgentTLSError) as caught:
        pool.proxmox(impostor, "GET", "/version")

    assert str(caught.value) == (
        f"The TLS handshake with agent pve2.zone1.agents.flexplane at {agent.address} failed: "
        "its certificate does not name pve2.zone1.agents.flexplane."
    )


def test_the_caller_refuses_an_agent_of_another_ca(pki: Pki, target: AgentTarget, untouched: None) -> None:
    cert, key = pki.orchestrator

    with (
        AgentPool(ClientTLS.from_files(pki.other_ca.cert_path, cert, key)) as pool,
        pytest.raises(AgentTLSError, match="did not verify against the platform CA"),
    ):
        pool.check_health(target)


def test_the_caller_refuses_an_agent_whose_certificate_has_expired(
    pki: Pki, launch: Callable[..., AgentProcess], tmp_path: Path, untouched: None
) -> None:
    """The agent started with a certificate that was valid then; a caller dialling it later refuses it."""
    # Long enough for the agent to start on a busy machine (it refuses a certificate expired already).
    lifetime = datetime.timedelta(seconds=10)
    expires = time.monotonic() + lifetime.total_seconds()
    cert, key = short_lived(pki, tmp_path, name="agent-short", lifetime=lifetime, agent=True)
    expiring = launch(tls_cert=str(cert), tls_key=str(key))
    try:
        time.sleep(max(0.0, expires - time.monotonic()) + 1)
        with (
            AgentPool(pki.client_tls()) as pool,
            pytest.raises(AgentTLSError, match="did not verify against the platform CA"),
        ):
            pool.proxmox(expiring.target(), "GET", "/version")
    finally:
        expiring.stop()


# ------------------------------------------------------------------------------------ proxy

BYPASS_ATTEMPTS: list[tuple[str, str]] = [
    # the access API itself (users, ACLs, tickets, tokens)
    ("GET", "/access/users"),
    ("POST", "/access/ticket"),
    ("PUT", "/access/acl"),
    ("GET", "/access"),
    # dot segments
    ("GET", "/cluster/../access/ticket"),
    ("GET", "/cluster/resources/../../access/users"),
    ("GET", "/pools/fp-demo/../../access/users"),
    ("POST", "/nodes/pve1/qemu/100/status/start/../../../../../access/users"),
    ("PUT", "/nodes/pve1/qemu/100/config/../../../../../access/acl"),
    ("GET", "/cluster/./resources"),
    # encoded dots and slashes
    ("GET", "/cluster/%2e%2e/access/ticket"),
    ("GET", "/%2e%2e/access/users"),
    ("GET", "/cluster%2Fresources"),
    ("GET", "/cluster/..%2faccess"),
    ("DELETE", "/pools/fp-demo%2F..%2F..%2Faccess"),
    ("DELETE", "/nodes/pve1/qemu/100%2F"),
    ("POST", "/nodes/pve1/qemu/100/status/%73tart"),
    # double encoding, overlong UTF-8, look-alike characters
    ("GET", "/cluster/%252e%252e/access/users"),
    ("GET", "/cluster%252Fresources"),
    ("GET", "/cluster/%c0%ae%c0%ae/access/users"),
    ("GET", "/cluster\uff0fresources"),
    ("GET", "/cluster\\..\\access\\users"),
    # the method field as an override, or spelt otherwise
    ("X-HTTP-Method-Override", "/cluster/resources"),
    ("GET\r\nX-HTTP-Method-Override: DELETE", "/cluster/resources"),
    ("delete", "/nodes/pve1/qemu/100"),
]


@pytest.mark.parametrize(("method", "path"), BYPASS_ATTEMPTS)
def test_an_allowlist_bypass_attempt_is_refused_before_proxmox_is_called(
    pool: AgentPool, target: AgentTarget, untouched: None, method: str, path: str
) -> None:
    with pytest.raises(ProxyRefused):
        pool.proxmox(target, method, path)


@pytest.mark.parametrize(
    "override", ["X-HTTP-Method-Override", "x-http-method", "X-Method-Override", "_method"]
)
def test_a_method_override_parameter_is_refused_before_proxmox_is_called(
    pool: AgentPool, target: AgentTarget, untouched: None, override: str
) -> None:
    with pytest.raises(ProxyRefused):
        pool.proxmox(target, "GET", "/pools/fp-demo", {override: "DELETE"})


def proxy_call(pool: AgentPool, target: AgentTarget, method: str, path: str, override: str) -> Any:
    """A raw proxy call carrying X-HTTP-Method-Override as gRPC metadata (a header of the HTTP/2 call)."""
    stub = agent_pb2_grpc.ProxmoxProxyStub(pool.channel(target))
    request = agent_pb2.ProxmoxRequest(method=method, path=path)
    return stub.Call(request, metadata=(("x-http-method-override", override),), timeout=5)


def test_a_method_override_header_does_not_turn_a_refused_request_into_an_allowed_one(
    pool: AgentPool, target: AgentTarget, untouched: None
) -> None:
    """GET is not allowed on a VM itself (DELETE is): the header asking for DELETE changes nothing."""
    with pytest.raises(grpc.RpcError) as caught:
        proxy_call(pool, target, "GET", "/nodes/pve1/qemu/100", "DELETE")

    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_a_method_override_header_is_not_honoured(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    before = len(pve.requests)

    answer = proxy_call(pool, target, "GET", "/cluster/resources", "DELETE")

    assert answer.status == 200
    assert [(method, path) for method, path, _ in pve.requests[before:]] == [
        ("GET", "/api2/json/cluster/resources")
    ]


# ------------------------------------------------------------------------------ credentials


def test_the_proxmox_token_is_in_no_answer_and_no_log_line(
    pool: AgentPool, target: AgentTarget, agent: AgentProcess, pve: Any, record_figure: RecordFigure
) -> None:
    """After answers of every kind (forwarded, refused, Proxmox refusing the token), the secret and the
    Authorization value built from it are nowhere in what callers got or what the agent logged."""
    answers: list[str] = [str(pool.proxmox(target, "GET", "/version"))]
    for method, path in [("GET", "/access/users"), ("GET", "/cluster/status")]:
        try:
            answers.append(str(pool.proxmox(target, method, path)))
        except AgentError as exc:
            answers.append(str(exc))
    pve.apitokens[TOKEN_ID] = "another-secret"  # Proxmox now refuses the agent's token (undone by pve)
    with pytest.raises(ProxmoxError) as caught:
        pool.proxmox(target, "GET", "/cluster/resources")
    answers.append(f"{caught.value} {caught.value.message} {caught.value.errors}")
    health = health_pb2_grpc.HealthStub(pool.channel(target)).Check(
        health_pb2.HealthCheckRequest(), timeout=5
    )
    answers.append(str(health))

    log = agent.output()
    secrets = (TOKEN_SECRET, f"{TOKEN_ID}={TOKEN_SECRET}")
    assert not [answer for answer in answers if any(secret in answer for secret in secrets)]
    assert not [line for line in log.splitlines() if any(secret in line for secret in secrets)]
    assert caught.value.status == 401
    record_figure(SUITE, "agent log lines searched for the Proxmox token", len(log.splitlines()))
    record_figure(SUITE, "log lines and answers holding it", 0)
