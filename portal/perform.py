"""Performing a portal action: its service call under the audit trail, and a refusal kept to say in place.

Errors that are pages of their own (:data:`portal.errors.PAGE_ERRORS`: 404, 403, the login) go on to
the view decorators (:mod:`portal.context`); any other domain error is returned, for the page to say
where the user can act on it (next to a field, on the confirmation, in a message).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError
from orchestrator.services.context import Context
from portal.actions import Action
from portal.activity import trail as activity
from portal.errors import PAGE_ERRORS, failure_status
from portal.forms import confirmed

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


def confirmation(
    request: HttpRequest,
    ctx: Context,
    action: Action,
    call: Callable[[], T],
    *,
    page: str,
    context: dict[str, Any],
    said: str | Callable[[T], str],
    then: str,
    **targets: str,
) -> HttpResponse:
    """An action asked for on a confirmation page (a delete, a release, a detach): GET shows ``page``
    (``context``, and ``failure``: None); a confirmed POST performs ``call`` as ``action`` (its audit
    record names ``targets``), then goes to ``then`` saying ``said`` (or what it makes of the answer);
    a refusal is said on the same page."""
    failure: FlexPlaneError | None = None
    if confirmed(request):
        outcome = perform(call, ctx=ctx, operation=action.mutation, **targets)
        if not isinstance(outcome, FlexPlaneError):
            messages.success(request, said(outcome) if callable(said) else said)
            return HttpResponseRedirect(then, status=303)
        failure = outcome
    return render(request, page, {**context, "failure": failure}, status=failure_status(failure))


def back_to(
    request: HttpRequest, failure: FlexPlaneError | None, success: str, page: str, **args: str
) -> HttpResponse:
    """An action posted from a list or an object's page goes back to it (``page``, a URL's name, with
    its ``args``), saying ``success`` in a message, or else the refusal."""
    if failure is None:
        messages.success(request, success)
    else:
        messages.error(request, failure.message)
    return HttpResponseRedirect(reverse(page, kwargs=args))
