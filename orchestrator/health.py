"""``/healthz`` (the process is alive) and ``/readyz`` (its neighbours are reachable)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from orchestrator.services.context import process_kube
from orchestrator.services.health import readiness


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks = readiness(process_kube())
    ready = all(c.ok for c in checks)
    body = {
        "status": "ready" if ready else "not ready",
        "checks": {c.name: {"ok": c.ok, "detail": c.detail} for c in checks},
    }
    return JsonResponse(body, status=200 if ready else 503)
