"""Domain errors: what can go wrong, in the product's own terms.

Services raise these; the GraphQL layer and the portal turn them into answers. Nothing above
``orchestrator.sources`` sees a gRPC, HTTP or Kubernetes exception.
"""

from __future__ import annotations

import logging
import secrets

from flexplane.logs import current_request_id

logger = logging.getLogger("flexplane.errors")


class FlexPlaneError(Exception):
    """Base of every domain error. ``code`` is the stable, machine-readable name."""

    code = "ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unauthenticated(FlexPlaneError):
    """No credentials, or credentials that cannot be trusted."""

    code = "UNAUTHENTICATED"


class PermissionDenied(FlexPlaneError):
    """The principal is known but may not do this."""

    code = "FORBIDDEN"


class NotFound(FlexPlaneError):
    """No such object, or one in a VDC the principal cannot see (reported identically)."""

    code = "NOT_FOUND"

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} {ident!r} does not exist")
        self.kind = kind
        self.ident = ident


class ValidationFailed(FlexPlaneError):
    """A value the caller sent is wrong; ``field`` names it."""

    code = "INVALID"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class QuotaExceeded(FlexPlaneError):
    """A quota would be exceeded; ``fields`` names the quotas over (``quota.vcpus``) where the caller knows
    them, so that a form can say it next to each."""

    code = "QUOTA_EXCEEDED"

    def __init__(self, message: str, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.fields = fields


class Conflict(FlexPlaneError):
    code = "CONFLICT"


class Unavailable(FlexPlaneError):
    """A zone or host could not be reached within its deadline; ``where`` names it."""

    code = "UNAVAILABLE"

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where


class ImagePreparing(Unavailable):
    """The image's template is not on the host yet: its agent is downloading or importing it, and goes on
    whether anyone waits or not. Nothing was made: ask again once it is ready (``retry_after`` seconds,
    an estimate from the download's rate; None when it cannot tell)."""

    def __init__(self, where: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(where, message)
        self.retry_after = retry_after


class UpstreamFailure(FlexPlaneError):
    """Proxmox or the management cluster refused; the message is theirs."""

    code = "UPSTREAM_FAILURE"

    def __init__(
        self, where: str, message: str, *, status: int | None = None, errors: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.where = where
        self.status = status
        self.errors = errors or {}


class Internal(FlexPlaneError):
    """Nothing expected it: the answer says only that, with a request id; the log has the traceback."""

    code = "INTERNAL"

    def __init__(self, request_id: str) -> None:
        super().__init__(f"an internal error occurred; it was logged under request id {request_id}")
        self.request_id = request_id


def new_request_id() -> str:
    """The id of the request being served (``flexplane.logs``), or a new one outside any request."""
    return current_request_id() or secrets.token_hex(8)


def internal_error(exc: BaseException, where: str, request_id: str | None = None) -> Internal:
    """The error boundary: log ``exc``'s traceback once, under a request id, and say only that id.

    ``request_id`` groups the exceptions of one request under one id (a new one otherwise).
    """
    rid = request_id or new_request_id()
    logger.error(
        "internal error, request id %s (%s)", rid, where, exc_info=(type(exc), exc, exc.__traceback__)
    )
    return Internal(rid)
