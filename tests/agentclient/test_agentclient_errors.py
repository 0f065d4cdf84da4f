"""The typed errors: one clear sentence each, naming the host and the cause."""

from __future__ import annotations

import pickle
from typing import cast

import grpc
import pytest

from agentclient import (
    AgentDeadlineExceeded,
    AgentError,
    AgentTarget,
    AgentTLSError,
    AgentUnavailable,
    ChecksumMismatch,
    ClientNotAllowed,
    ImageDownloadFailed,
    ImageError,
    ImageImportFailed,
    ImageRefused,
    ProxmoxError,
    ProxmoxUnreachable,
    ProxyRefused,
)
from agentclient.errors import ERROR_METADATA_KEY, translate_error

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


@pytest.mark.parametrize(
    ("error", "sentence"),
    [
        (
            ImageRefused(TARGET, "10.0.0.1 is a private address", "debian-12"),
            f"The {HOST} refused to fetch image debian-12: 10.0.0.1 is a private address.",
        ),
        (
            ChecksumMismatch(TARGET, "the sha256 of http://m/x is 00, not the ff given", "debian-12"),
            f"The {HOST} downloaded image debian-12, but its checksum does not match: "
            "the sha256 of http://m/x is 00, not the ff given.",
        ),
        (
            ImageDownloadFailed(TARGET, "http://m/x answered 404 Not Found", "debian-12"),
            f"The {HOST} could not download image debian-12: http://m/x answered 404 Not Found.",
        ),
        (
            ImageImportFailed(TARGET, "creating VM 100 failed: storage full.", "debian-12"),
            f"The {HOST} could not import image debian-12 into Proxmox: "
            "creating VM 100 failed: storage full.",
        ),
        (
            ImageRefused(TARGET, "file:///x uses file://"),
            f"The {HOST} refused to fetch the image: file:///x uses file://.",
        ),
    ],
)
def test_each_image_error_reads_as_one_sentence_naming_the_host_and_image(
    error: AgentError, sentence: str
) -> None:
    assert str(error) == sentence


@pytest.mark.parametrize("kind", [ImageRefused, ChecksumMismatch, ImageDownloadFailed, ImageImportFailed])
def test_image_errors_are_agent_errors_that_keep_their_image(kind: type[ImageError]) -> None:
    error = kind(TARGET, "detail", "debian-12")

    assert isinstance(error, AgentError)
    assert (error.image, error.target) == ("debian-12", TARGET)


def test_an_image_error_survives_pickling() -> None:
    error = ChecksumMismatch(TARGET, "digest differs", "debian-12")

    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own object, round-tripped

    assert (type(copy), str(copy), copy.image) == (ChecksumMismatch, str(error), "debian-12")


class FailedCall:
    """What a failed gRPC call tells: a status code, details and trailing metadata."""

    def __init__(self, code: grpc.StatusCode, details: str, kind: str | None = None) -> None:
        self._code, self._details = code, details
        self._metadata = ((ERROR_METADATA_KEY, kind),) if kind else ()

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


@pytest.mark.parametrize(
    ("code", "kind", "expected"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, "image-refused", ImageRefused),
        (grpc.StatusCode.FAILED_PRECONDITION, "checksum-mismatch", ChecksumMismatch),
        (grpc.StatusCode.UNAVAILABLE, "image-download-failed", ImageDownloadFailed),
        (grpc.StatusCode.FAILED_PRECONDITION, "image-import-failed", ImageImportFailed),
        (grpc.StatusCode.UNAVAILABLE, "proxmox-unreachable", ProxmoxUnreachable),
        (grpc.StatusCode.INVALID_ARGUMENT, None, AgentError),
    ],
)
def test_an_image_failure_of_the_agent_becomes_its_typed_error(
    code: grpc.StatusCode, kind: str | None, expected: type[AgentError]
) -> None:
    error = translate_error(cast(grpc.Call, FailedCall(code, "why", kind)), TARGET, 5.0, image="debian-12")

    assert type(error) is expected
    assert "why" in str(error)
