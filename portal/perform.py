"""Performing a portal action: its service call under the audit trail, and a refusal kept to say in place.

Errors that are pages of their own (:data:`portal.errors.PAGE_ERRORS`: 404, 403, the login) go on to
the view decorators (:mod:`portal.context`); any other domain error is returned, for the page to say
where the user can act on it (next to a field, on the confirmation, in a message).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from orchestrator.errors import FlexPlaneError
from orchestrator.services.context import Context
from portal.activity import trail as activity
from portal.errors import PAGE_ERRORS

T = TypeVar("T")


def perform(
    call: Callable[[], T], *, ctx: Context | None = None, operation: str | None = None, **targets: str
) -> T | FlexPlaneError:
    """``call()`` under the action's audit record (``ctx``, ``operation`` and ``targets`` as
    :func:`portal.activity.trail.action` takes them): what it returned, or the refusal to say in place."""
    try:
        with activity.action(ctx, operation, **targets):
            return call()
    except PAGE_ERRORS:
        raise
    except FlexPlaneError as exc:
        return exc


def attempt(
    call: Callable[[], object], *, ctx: Context | None = None, operation: str | None = None, **targets: str
) -> FlexPlaneError | None:
    """As :func:`perform`, for a call whose answer the page does not need: the refusal, or None."""
    outcome = perform(call, ctx=ctx, operation=operation, **targets)
    return outcome if isinstance(outcome, FlexPlaneError) else None
