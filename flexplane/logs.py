"""Logs as JSON lines, each carrying the id of the request it was written for.

Every HTTP request gets an id (:class:`RequestIdMiddleware`, first in ``MIDDLEWARE``): the log lines
written while it is served carry it as ``request_id`` (:class:`RequestIdFilter`), its answer carries it
in ``X-Request-ID``, and an INTERNAL error answered to it names it (``orchestrator.errors``), so that
an operator finds the traceback, the audit record and the answer under one id.

Each request is logged once when it is answered (logger ``flexplane.access``: method, path without its
query string, status, duration, client), so the server's own access log, which prints query strings, is
turned off (``flexplane.serve`` runs uvicorn without it).

``FLEXPLANE_LOG_FORMAT`` picks ``json`` (the default: one object per line, for the log pipeline) or
``plain`` (for a terminal). Lines of no request carry ``request_id: null``.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from pythonjsonlogger.json import JsonEncoder, JsonFormatter

# One line per request, in place of the server's own access log (which prints query strings: off).
access = logging.getLogger("flexplane.access")
_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("flexplane_request_id", default=None)

HEADER = "X-Request-ID"
# The fields of every JSON line, besides what a call adds with ``extra=``.
JSON_FIELDS = ("asctime", "levelname", "name", "message", "request_id")


def current_request_id() -> str | None:
    """The id of the request being served in this context, if any."""
    return _request_id.get()


def bind_request_id(request_id: str | None) -> contextvars.Token[str | None]:
    """Serve what follows under ``request_id`` (a new id when None); undo with :func:`unbind`."""
    return _request_id.set(request_id or secrets.token_hex(8))


def unbind(token: contextvars.Token[str | None]) -> None:
    _request_id.reset(token)


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to every record (None outside a request), and names a request a record
    carries (Django's ``django.request`` lines) by its method and path only: a query string may hold
    what must never be logged (a client that put its token in the URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id()
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest):
            record.request = f"{request.method} {request.path}"
        return True


class LenientEncoder(JsonEncoder):
    """pythonjsonlogger's encoder, except that an extra it cannot encode is written as its type's name.

    Its own fallbacks can raise: a dataclass is encoded through ``dataclasses.asdict``, a deep copy that
    fails on one holding a queue or a lock (kopf's ``OperatorSettings`` on its records: "cannot pickle
    '_queue.SimpleQueue'"), and the whole line would be lost ("--- Logging error ---").
    """

    def default(self, o: Any) -> Any:
        try:
            return super().default(o)
        except Exception:
            return f"<{type(o).__qualname__}>"


def json_formatter(**kwargs: Any) -> logging.Formatter:
    """The JSON lines formatter (``LOGGING``'s ``()`` factory): ISO times, the fields above."""
    kwargs.setdefault("json_encoder", LenientEncoder)
    return JsonFormatter(
        " ".join(f"%({name})s" for name in JSON_FIELDS),
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        datefmt="%Y-%m-%dT%H:%M:%S%z",
        json_ensure_ascii=False,
        **kwargs,
    )


class RequestIdMiddleware:
    """Gives each request its id (``request.request_id``) for its log lines, errors and audit record."""

    sync_capable = True
    async_capable = False  # like the rest of the chain: under ASGI it all runs in one thread

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        token = bind_request_id(None)
        request.request_id = current_request_id()  # type: ignore[attr-defined]  # ours, read by the audit
        started = time.monotonic()
        status = 500
        try:
            response = self.get_response(request)
            status = response.status_code
        finally:
            access.info(
                "%s %s %s",
                request.method,
                request.path,
                status,
                extra={
                    "method": request.method,
                    "path": request.path,  # never the query string: it may hold a token sent by mistake
                    "status": status,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1),
                    "client": request.META.get("REMOTE_ADDR"),
                },
            )
            unbind(token)
        response[HEADER] = request.request_id  # type: ignore[attr-defined]  # set above
        return response
