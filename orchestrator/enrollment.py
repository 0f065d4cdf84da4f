"""``/enroll/v1/join`` and ``/enroll/v1/renew``: where nodes enroll and agents renew their certificates.

JSON in, JSON out (the contract is ``agentclient.enrollment``). No bearer token: a join is
authenticated by its join token, a renewal by the agent's certificate and a signature made with
its key. Both refuse plain HTTP: ``request.is_secure()`` holds on the server's HTTPS endpoint
(flexplane.serve --https-port), and behind an ingress that terminates TLS where production settings
trust its X-Forwarded-Proto.
The use-cases, and every check, are in ``orchestrator.services.enrollment``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    ValidationFailed,
)
from orchestrator.services import enrollment
from orchestrator.services.context import process_kube

logger = logging.getLogger(__name__)

_STATUS: tuple[tuple[type[FlexPlaneError], int], ...] = (
    (ValidationFailed, 400),
    (Unauthenticated, 401),
    (PermissionDenied, 403),
    (NotFound, 404),
    (Conflict, 409),
    (Unavailable, 503),
)


def _error(exc: FlexPlaneError) -> JsonResponse:
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 502)
    field = exc.field if isinstance(exc, ValidationFailed) else None
    return JsonResponse({"error": {"code": exc.code, "message": exc.message, "field": field}}, status=status)


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed("body", "the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise ValidationFailed("body", "the request body must be a JSON object")
    return body


def _origin(request: HttpRequest) -> str:
    return request.build_absolute_uri("/").rstrip("/")


def _answer(
    request: HttpRequest, what: str, call: Callable[[dict[str, Any]], enrollment.Issued]
) -> JsonResponse:
    peer = request.META.get("REMOTE_ADDR", "?")
    try:
        if not request.is_secure():
            raise PermissionDenied(
                f"{what} needs HTTPS: a join token or a key's proof must not travel in clear"
            )
        issued = call(_body(request))
    except FlexPlaneError as exc:
        logger.warning("%s from %s refused: %s", what, peer, exc.message)
        return _error(exc)
    logger.info(
        "%s from %s: issued a certificate for %s/%s",
        what,
        peer,
        issued.settings["zone"],
        issued.settings["node"],
    )
    return JsonResponse(issued.to_json())


@csrf_exempt  # no cookies: the token or the key's signature authenticates the request
@require_POST
def join(request: HttpRequest) -> JsonResponse:
    """Enroll a node: ``{token, csr, endpoint[, mesh_public_key]}`` -> ``{certificate, ca, settings}``."""
    origin = _origin(request)
    return _answer(
        request,
        "join",
        lambda body: enrollment.join(
            process_kube(),
            body.get("token"),
            body.get("csr"),
            body.get("endpoint"),
            origin,
            body.get("mesh_public_key"),
        ),
    )


@csrf_exempt
@require_POST
def renew(request: HttpRequest) -> JsonResponse:
    """Renew an agent's certificate: ``{csr, certificate, timestamp, signature}`` -> the same as a join."""
    origin = _origin(request)
    return _answer(
        request,
        "renewal",
        lambda body: enrollment.renew(
            process_kube(),
            body.get("csr"),
            body.get("certificate"),
            body.get("timestamp"),
            body.get("signature"),
            origin,
            body.get("mesh_public_key"),
        ),
    )
