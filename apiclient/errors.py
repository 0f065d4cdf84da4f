"""The API's failures as exceptions, one class per code.

The API says what went wrong in two places: a mutation's expected failure is data, its payload's
``errors { field message code }``; who-may-do-what (``FORBIDDEN``), a bad token (``UNAUTHENTICATED``),
a query's missing object (``NOT_FOUND``) or a zone that does not answer (``UNAVAILABLE``) are top-level
GraphQL errors with ``extensions.code``. Both become the same exceptions here, so a script catches
``QuotaExceeded`` whichever way the API said it, and reads ``field`` to know which input was at fault.
The codes are those of orchestrator/errors.py and the schema's ``<Domain>ErrorCode`` enums.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One error as the API answered it: its code, its message, and the input at fault (camelCase)."""

    code: str
    message: str
    field: str | None = None


class ApiError(Exception):
    """A failure the API answered (or a task that failed); ``problems`` holds every error of the answer,
    the first of which gives ``code``, ``message`` and ``field``. ``data`` is what the answer carried
    beside them: a mutation's payload (e.g. its failed ``task``), a listing's zones that did answer."""

    code = "ERROR"

    def __init__(
        self, message: str, *, field: str | None = None, problems: Sequence[Problem] = (), data: Any = None
    ) -> None:
        super().__init__(f"{message} (field {field})" if field else message)
        self.message = message
        self.field = field
        self.problems = tuple(problems) or (Problem(self.code, message, field),)
        self.data = data


class InvalidInput(ApiError):
    code = "INVALID"


class NotFound(ApiError):
    code = "NOT_FOUND"


class Conflict(ApiError):
    code = "CONFLICT"


class QuotaExceeded(ApiError):
    code = "QUOTA_EXCEEDED"


class NoCapacity(ApiError):
    code = "NO_CAPACITY"


class Unavailable(ApiError):
    code = "UNAVAILABLE"


class UpstreamFailure(ApiError):
    code = "UPSTREAM_FAILURE"


class Forbidden(ApiError):
    code = "FORBIDDEN"


class Unauthenticated(ApiError):
    """The API refused the token (HTTP 401), or the identity provider refused to give one."""

    code = "UNAUTHENTICATED"


class InternalError(ApiError):
    code = "INTERNAL"


class ProtocolError(ApiError):
    """The answer was not one the API gives: not JSON, or neither data nor errors (a proxy's page, say)."""

    code = "PROTOCOL"


class TaskFailed(ApiError):
    """A followed task ended FAILED; ``task`` is its last state, ``message`` what Proxmox said."""

    code = "TASK_FAILED"

    def __init__(self, task: Any) -> None:
        reason = task.result or "no reason given"
        super().__init__(f"task {task.id} ({task.title}) failed: {reason}", data=task)
        self.task = task


class TaskTimedOut(ApiError):
    """A followed task was still running when the caller's deadline came; ``task`` is its last state."""

    code = "TASK_TIMED_OUT"

    def __init__(self, task: Any, timeout: float) -> None:
        super().__init__(f"task {task.id} ({task.title}) still running after {timeout:g} s", data=task)
        self.task = task


BY_CODE: dict[str, type[ApiError]] = {
    kind.code: kind
    for kind in (
        InvalidInput,
        NotFound,
        Conflict,
        QuotaExceeded,
        NoCapacity,
        Unavailable,
        UpstreamFailure,
        Forbidden,
        Unauthenticated,
        InternalError,
    )
}


def raised(problems: Sequence[Problem], data: Any = None) -> ApiError:
    """The exception for an answer's errors: the class of the first one's code (``ApiError`` for a code
    this client does not know, which a newer API may add)."""
    first = problems[0]
    kind = BY_CODE.get(first.code, ApiError)
    error = kind(first.message, field=first.field, problems=problems, data=data)
    if kind is ApiError:
        error.code = first.code
    return error


def from_payload(payload: Mapping[str, Any]) -> ApiError:
    """A mutation payload's ``errors { field message code }`` as an exception carrying the payload."""
    problems = [Problem(str(e["code"]), str(e["message"]), e.get("field")) for e in payload["errors"]]
    return raised(problems, data=payload)


def from_graphql(errors: Sequence[Mapping[str, Any]], data: Any = None) -> ApiError:
    """Top-level GraphQL errors (``extensions.code``, and ``extensions.field`` for INVALID)."""
    problems = []
    for error in errors:
        extensions = error.get("extensions") or {}
        code = str(extensions.get("code", "ERROR"))
        problems.append(Problem(code, str(error.get("message", "")), extensions.get("field")))
    return raised(problems, data=data)
