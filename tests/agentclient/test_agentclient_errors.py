"""The typed errors: one clear sentence each, naming the host and the cause."""

from __future__ import annotations

import pickle

import pytest

from agentclient import (
    AgentDeadlineExceeded,
    AgentError,
    AgentTarget,
    AgentTLSError,
    AgentUnavailable,
    ClientNotAllowed,
    ProxmoxError,
    ProxmoxUnreachable,
    ProxyRefused,
)

TARGET = AgentTarget(identity="pve1.zone1.agents.flexplane", address="10.0.0.11:7443")
HOST = "agent pve1.zone1.agents.flexplane at 10.0.0.11:7443"


@pytest.mark.parametrize(
    ("error", "sentence"),
    [
        (AgentUnavailable(TARGET, "Connection refused"), f"The {HOST} is unavailable: Connection refused."),
        (
            AgentTLSError(TARGET, "its certificate does not name pve1.zone1.agents.flexplane"),
            f"The TLS handshake with {HOST} failed: "
            "its certificate does not name pve1.zone1.agents.flexplane.",
        ),
        (AgentDeadlineExceeded(TARGET, 2.5), f"The {HOST} did not answer within 2.5 s."),
        (
            ProxmoxUnreachable(
                TARGET, "cannot connect to Proxmox at https://127.0.0.1:8006: Connection refused"
            ),
            f"The {HOST} could not reach its Proxmox API: "
            "cannot connect to Proxmox at https://127.0.0.1:8006: Connection refused.",
        ),
        (
            ProxyRefused(TARGET, "GET /access/users is not on the proxy's allowlist"),
            f"The {HOST} refused the request: GET /access/users is not on the proxy's allowlist.",
        ),
        (
            ClientNotAllowed(
                TARGET, "client certificate common name 'x' is not in this agent's allowed_clients"
            ),
            f"The {HOST} refused our client certificate: "
            "client certificate common name 'x' is not in this agent's allowed_clients.",
        ),
        (
            ProxmoxError(TARGET, 500, "VM 100 is locked (backup)"),
            f"Proxmox behind the {HOST} answered 500: VM 100 is locked (backup).",
        ),
        (
            ProxmoxError(
                TARGET, 400, "Parameter verification failed.", {"memory": "value must be at least 16"}
            ),
            f"Proxmox behind the {HOST} answered 400: Parameter verification failed "
            "(memory: value must be at least 16).",
        ),
        (
            AgentError(TARGET, "UNIMPLEMENTED: Method not found!"),
            f"The call to {HOST} failed: UNIMPLEMENTED: Method not found!.",
        ),
    ],
)
def test_each_error_reads_as_one_sentence_naming_the_host(error: AgentError, sentence: str) -> None:
    assert str(error) == sentence


def test_every_error_carries_its_target() -> None:
    assert ProxmoxError(TARGET, 404, "no such VM").target is TARGET


def test_a_tls_error_is_a_kind_of_unavailability() -> None:
    assert isinstance(AgentTLSError(TARGET, "x"), AgentUnavailable)


def test_a_refused_client_is_a_kind_of_proxy_refusal() -> None:
    assert isinstance(ClientNotAllowed(TARGET, "x"), ProxyRefused)


def test_a_proxmox_error_keeps_status_message_and_field_errors() -> None:
    error = ProxmoxError(TARGET, 400, "Parameter verification failed.", {"cores": "must be >= 1"})

    assert (error.status, error.message, error.errors) == (
        400,
        "Parameter verification failed.",
        {"cores": "must be >= 1"},
    )


@pytest.mark.parametrize(
    "error",
    [
        AgentUnavailable(TARGET, "down"),
        AgentDeadlineExceeded(TARGET, 1.0),
        ProxmoxError(TARGET, 500, "boom", {"a": "b"}),
    ],
)
def test_errors_survive_pickling(error: AgentError) -> None:
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own object, round-tripped

    assert (type(copy), str(copy), copy.target) == (type(error), str(error), error.target)
