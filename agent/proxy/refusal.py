"""A refused request: the error, and the marker its log line carries.

Every refusal is logged at WARNING with :data:`REFUSED`, so that a refusal is found in an agent's
log by a plain substring search (the test suite fails a run in which any agent of its world refused
a call of the orchestrator: the orchestrator's calls and the declarations cannot drift apart).
"""

from __future__ import annotations

from collections.abc import Iterable

REFUSED = "flexplane-proxy-refused"


class NotAllowed(Exception):
    """The request is not forwarded; the message says why, for the caller (and ``parameter`` which
    parameter, when one is the reason)."""

    def __init__(self, message: str, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


def refusals(lines: Iterable[str]) -> list[str]:
    """The refusal lines among an agent's log lines."""
    return [line.rstrip("\n") for line in lines if REFUSED in line]
