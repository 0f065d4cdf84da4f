"""Typed errors of calls to agents.

Every error is an :class:`AgentError` carrying the :class:`~agentclient.identity.AgentTarget`
that was called, and its ``str()`` is one sentence naming the host and the cause, fit
for an operator's log or an API error message.

The agent signals the errors that a status code alone cannot tell apart with the
trailing metadata key :data:`ERROR_METADATA_KEY`; its values are the constants below.
:func:`translate_error` turns a failed call's status and metadata into the typed error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import grpc

if TYPE_CHECKING:
    from agentclient.identity import AgentTarget

# Trailing metadata the agent sets on its error statuses.
ERROR_METADATA_KEY = "flexplane-error"
# UNAVAILABLE: the agent answered, but the Proxmox API behind it did not: the request never reached it.
PROXMOX_UNREACHABLE = "proxmox-unreachable"
# UNAVAILABLE: the agent sent the request to Proxmox, but its answer never came (the connection broke,
# or Proxmox's time ran out): Proxmox may have carried it out.
PROXMOX_NO_ANSWER = "proxmox-no-answer"
# PERMISSION_DENIED: the method and path are not on the proxy's allowlist.
NOT_ALLOWLISTED = "not-allowlisted"
# PERMISSION_DENIED: the caller's certificate common name is not in the agent's allowed_clients.
CLIENT_NOT_ALLOWED = "client-not-allowed"
# INVALID_ARGUMENT: EnsureTemplate refused the image's URL or size before downloading it.
IMAGE_REFUSED = "image-refused"
# FAILED_PRECONDITION: the downloaded image does not have the checksum given.
CHECKSUM_MISMATCH = "checksum-mismatch"
# UNAVAILABLE: the image could not be downloaded.
IMAGE_DOWNLOAD_FAILED = "image-download-failed"
# FAILED_PRECONDITION: Proxmox refused or failed a step of importing the image.
IMAGE_IMPORT_FAILED = "image-import-failed"
# INVALID_ARGUMENT: Snippets refused the snippet's name or size.
SNIPPET_REFUSED = "snippet-refused"
# FAILED_PRECONDITION: the agent could not write or remove the snippet file.
SNIPPET_FAILED = "snippet-failed"


class AgentError(Exception):
    """A call to an agent failed; ``target`` is the agent, ``detail`` what went wrong."""

    def __init__(self, target: AgentTarget, detail: str = "") -> None:
        super().__init__(target, detail)
        self.target = target
        self.detail = detail

    @property
    def host(self) -> str:
        """The agent as a reader knows it: its identity and the address dialled."""
        return f"agent {self.target.identity} at {self.target.address}"

    def __str__(self) -> str:
        return f"The call to {self.host} failed: {self.detail or 'no detail given'}."


class AgentUnavailable(AgentError):
    """The agent could not be reached: connection refused, no route, or the handshake failed."""

    def __str__(self) -> str:
        return f"The {self.host} is unavailable: {self.detail}."


class AgentConnectionLost(AgentUnavailable):
    """The connection to the agent broke during the call: the agent may have carried it out.

    Unlike its parent (the agent could not be reached, so the call surely never ran), a write that
    ends so must not be sent again elsewhere.
    """

    def __str__(self) -> str:
        return f"The connection to {self.host} broke during the call: {self.detail}."


class AgentBusy(AgentUnavailable):
    """As many calls as the pool allows in flight to the agent were under way for the whole deadline.

    The call was never sent: another agent of the zone may take it.
    """

    def __init__(self, target: AgentTarget, limit: int, waited: float) -> None:
        super().__init__(target, f"{limit} calls to it were in flight for {waited:g} s")
        self.args = (target, limit, waited)
        self.limit = limit
        self.waited = waited

    def __str__(self) -> str:
        return f"The {self.host} is busy: {self.detail}, and this call was not sent."


class AgentTLSError(AgentUnavailable):
    """The TLS handshake with the agent failed.

    Either the agent's certificate does not name the host dialled or is not signed by
    the platform CA, or the agent refused our client certificate.
    """

    def __str__(self) -> str:
        return f"The TLS handshake with {self.host} failed: {self.detail}."


class AgentDeadlineExceeded(AgentError):
    """The agent did not answer within the call's deadline."""

    def __init__(self, target: AgentTarget, timeout: float) -> None:
        super().__init__(target, f"no answer within {timeout:g} s")
        self.args = (target, timeout)
        self.timeout = timeout

    def __str__(self) -> str:
        return f"The {self.host} did not answer within {self.timeout:g} s."


class ProxmoxUnreachable(AgentError):
    """The agent answered, but the Proxmox API on its node did not."""

    def __str__(self) -> str:
        return f"The {self.host} could not reach its Proxmox API: {self.detail}."


class ProxmoxNoAnswer(ProxmoxUnreachable):
    """The agent sent the request to its Proxmox API, but the answer never came: it may have run."""

    def __str__(self) -> str:
        return f"The {self.host} got no answer from its Proxmox API: {self.detail}."


class ProxyRefused(AgentError):
    """The agent refused the request (PERMISSION_DENIED): it is not on the proxy's allowlist."""

    def __str__(self) -> str:
        return f"The {self.host} refused the request: {self.detail}."


class ClientNotAllowed(ProxyRefused):
    """The agent refused the caller: its certificate's common name is not in allowed_clients."""

    def __str__(self) -> str:
        return f"The {self.host} refused our client certificate: {self.detail}."


class ProxmoxError(AgentError):
    """Proxmox answered with an HTTP status of 400 or more.

    ``message`` is Proxmox's own text and ``errors`` its per-parameter messages (with a 400).
    """

    def __init__(
        self, target: AgentTarget, status: int, message: str, errors: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(target, message)
        self.args = (target, status, message, errors)
        self.status = status
        self.message = message
        self.errors: dict[str, str] = dict(errors or {})

    def __str__(self) -> str:
        text = f"Proxmox behind the {self.host} answered {self.status}: {self.message.rstrip('.')}"
        if self.errors:
            text += " (" + "; ".join(f"{name}: {error}" for name, error in sorted(self.errors.items())) + ")"
        return text + "."


class ImageError(AgentError):
    """EnsureTemplate failed for a reason of the image itself or of its import; ``image`` names it."""

    def __init__(self, target: AgentTarget, detail: str = "", image: str = "") -> None:
        super().__init__(target, detail)
        self.args = (target, detail, image)
        self.image = image

    @property
    def subject(self) -> str:
        return f"image {self.image}" if self.image else "the image"


class ImageRefused(ImageError):
    """The agent refused the image before downloading it: its URL (or a redirect) or its size.

    Nothing was downloaded. The detail says which rule refused it, e.g. a private address
    that an admin has not allowlisted.
    """

    def __str__(self) -> str:
        return f"The {self.host} refused to fetch {self.subject}: {self.detail.rstrip('.')}."


class ChecksumMismatch(ImageError):
    """The image was downloaded, but its digest is not the checksum given; it was thrown away."""

    def __str__(self) -> str:
        return (
            f"The {self.host} downloaded {self.subject}, but its checksum does not match: "
            f"{self.detail.rstrip('.')}."
        )


class ImageDownloadFailed(ImageError):
    """The agent could not download the image: unreachable, an HTTP error, cut short, too many redirects."""

    def __str__(self) -> str:
        return f"The {self.host} could not download {self.subject}: {self.detail.rstrip('.')}."


class ImageImportFailed(ImageError):
    """Proxmox refused or failed a step of importing the image; the detail carries Proxmox's message."""

    def __str__(self) -> str:
        return f"The {self.host} could not import {self.subject} into Proxmox: {self.detail.rstrip('.')}."


class SnippetError(AgentError):
    """WriteSnippet or DeleteSnippet failed on the agent's side; ``name`` is the snippet's."""

    def __init__(self, target: AgentTarget, detail: str = "", name: str = "") -> None:
        super().__init__(target, detail)
        self.args = (target, detail, name)
        self.name = name


class SnippetRefused(SnippetError):
    """The agent refused the snippet's name or size; nothing was written."""

    def __str__(self) -> str:
        return f"The {self.host} refused snippet {self.name}: {self.detail.rstrip('.')}."


class SnippetFailed(SnippetError):
    """The agent could not write or remove the snippet file (a full disk, a missing permission)."""

    def __str__(self) -> str:
        return f"The {self.host} could not write or remove snippet {self.name}: {self.detail.rstrip('.')}."


# ------------------------------------------------------------- from a gRPC status to an error


# gRPC reports connection failures as
# "failed to connect to all addresses; last error: CODE: ipv4:1.2.3.4:5: ..."
_CONNECT_PREFIX = re.compile(
    r"^failed to connect to all addresses; last error: (?:[A-Z_]+: )?(?:(?:ipv4|ipv6|unix):\S+?: )?",
    re.IGNORECASE,
)
_VERIFY_FAILED = re.compile(r"CERTIFICATE_VERIFY_FAILED:\s*([^:]+)")
_TLS_MARKERS = ("handshake", "ssl", "tls", "certificate", "verification")


def _never_connected(details: str) -> bool:
    """Whether gRPC's UNAVAILABLE says the call found no connection at all (so it was never sent)."""
    return _CONNECT_PREFIX.match(details) is not None or details.lower().startswith("dns resolution failed")


def _tls_failure(target: AgentTarget, details: str) -> str | None:
    """Why the TLS handshake failed, as a reader needs it, or None if details show no TLS failure."""
    lowered = details.lower()
    connecting = _CONNECT_PREFIX.match(details) is not None
    if "hostname verification" in lowered or "peer name" in lowered:
        return f"its certificate does not name {target.identity}"
    if verify := _VERIFY_FAILED.search(details):
        return f"its certificate did not verify against the platform CA ({verify.group(1).strip()})"
    if connecting and "socket closed" in lowered:
        # With TLS 1.3 a server checks the client's certificate after the client thinks the
        # handshake is over, and then just closes the connection.
        return (
            "it closed the connection during the handshake, so it most likely refused our client "
            "certificate (none, another CA's, or expired)"
        )
    if any(marker in lowered for marker in _TLS_MARKERS):
        return _CONNECT_PREFIX.sub("", details)
    return None


# (status code, "flexplane-error" value) -> the image error it stands for.
_IMAGE_ERRORS: Mapping[tuple[grpc.StatusCode, str], type[ImageError]] = {
    (grpc.StatusCode.INVALID_ARGUMENT, IMAGE_REFUSED): ImageRefused,
    (grpc.StatusCode.FAILED_PRECONDITION, CHECKSUM_MISMATCH): ChecksumMismatch,
    (grpc.StatusCode.UNAVAILABLE, IMAGE_DOWNLOAD_FAILED): ImageDownloadFailed,
    (grpc.StatusCode.FAILED_PRECONDITION, IMAGE_IMPORT_FAILED): ImageImportFailed,
}


# (status code, "flexplane-error" value) -> the snippet error it stands for.
_SNIPPET_ERRORS: Mapping[tuple[grpc.StatusCode, str], type[SnippetRefused | SnippetFailed]] = {
    (grpc.StatusCode.INVALID_ARGUMENT, SNIPPET_REFUSED): SnippetRefused,
    (grpc.StatusCode.FAILED_PRECONDITION, SNIPPET_FAILED): SnippetFailed,
}


def translate_error(
    error: grpc.Call, target: AgentTarget, timeout: float, *, image: str = "", snippet: str = ""
) -> AgentError:
    """The typed AgentError for a failed gRPC call to target (image names the image of EnsureTemplate,
    snippet the snippet of WriteSnippet or DeleteSnippet)."""
    code = error.code()
    details = error.details() or ""
    metadata = {key: value for key, value in (error.trailing_metadata() or ())}
    kind = metadata.get(ERROR_METADATA_KEY)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return AgentDeadlineExceeded(target, timeout)
    if isinstance(kind, str) and (image_error := _IMAGE_ERRORS.get((code, kind))) is not None:
        return image_error(target, details, image)
    if isinstance(kind, str) and (snippet_error := _SNIPPET_ERRORS.get((code, kind))) is not None:
        return snippet_error(target, details, snippet)
    if code == grpc.StatusCode.UNAVAILABLE:
        if kind == PROXMOX_NO_ANSWER:
            return ProxmoxNoAnswer(target, details)
        if kind == PROXMOX_UNREACHABLE:
            return ProxmoxUnreachable(target, details)
        if (tls := _tls_failure(target, details)) is not None:
            return AgentTLSError(target, tls)
        if not _never_connected(details):
            # The call had a connection and lost it (the agent died, a reset): it may have run.
            return AgentConnectionLost(target, details or "no detail given")
        return AgentUnavailable(target, _CONNECT_PREFIX.sub("", details) or "no detail given")
    if code == grpc.StatusCode.PERMISSION_DENIED:
        if kind == CLIENT_NOT_ALLOWED:
            return ClientNotAllowed(target, details)
        return ProxyRefused(target, details)
    return AgentError(target, f"{code.name}: {details}" if details else code.name)
