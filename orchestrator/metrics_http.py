"""``/metrics``, which serves this process's Prometheus metrics (``orchestrator.metrics``), and the
middleware that measures every request, by GraphQL operation or by view. The metrics read afresh at each
scrape from what the services know (the agent rollout's halt) are registered here, with their readers:
this module stands above the services, ``orchestrator.metrics`` below them.

``/metrics`` is meant for the cluster's Prometheus, not for the public: with ``FLEXPLANE_METRICS_PORT``
set (the chart sets it and gives the server that second port, flexplane.serve's --metrics-port, which
neither the Service's http port nor the ingress routes to), it answers only on that port, and that port
answers nothing else. Unset (the devstack, on loopback), it answers on the app's own port.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound
from django.views.decorators.http import require_GET
from graphql import OperationDefinitionNode
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from orchestrator.graphql import documents
from orchestrator.metrics import (
    GRAPHQL_LATENCY,
    GRAPHQL_REQUESTS,
    HTTP_LATENCY,
    HTTP_REQUESTS,
    RolloutHaltedCollector,
    RolloutState,
)

METRICS_PATH = "/metrics"
# Longer documents are not parsed again just to name them (the API refuses most of them anyway).
_MAX_NAMED_DOCUMENT = 16 * 1024


def _on_metrics_port(request: HttpRequest) -> bool:
    port = settings.FLEXPLANE_METRICS_PORT
    return port is not None and str(request.META.get("SERVER_PORT", "")) == str(port)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus text exposition of this process's metrics."""
    if settings.FLEXPLANE_METRICS_PORT is not None and not _on_metrics_port(request):
        return HttpResponseNotFound()
    from orchestrator.services.context import look_at_client_certificate  # the services load with the URLs

    look_at_client_certificate()
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


def _agent_rollout() -> RolloutState:
    """The agent rollout as the process's management cluster has it now, for its metric."""
    from orchestrator.services.context import process_kube  # the services load with the URLs, not here
    from orchestrator.services.rollouts import current

    found = current(process_kube())
    if found is None:
        return None
    return found.version, found.halt is not None, found.halt.host if found.halt is not None else ""


ROLLOUT_HALTED = RolloutHaltedCollector(_agent_rollout)
REGISTRY.register(ROLLOUT_HALTED)


def _root_fields() -> dict[str, frozenset[str]]:
    from orchestrator.graphql.schema import schema  # the schema imports every domain: only when asked

    graphql_schema = schema.graphql_schema
    found: dict[str, frozenset[str]] = {}
    for kind, root in (
        ("query", graphql_schema.query_type),
        ("mutation", graphql_schema.mutation_type),
        ("subscription", graphql_schema.subscription_type),
    ):
        found[kind] = frozenset(root.fields) if root is not None else frozenset()
    return found


_ROOT_FIELDS: dict[str, frozenset[str]] = {}


def operation_name(document: Any, operation: Any) -> str:
    """``<type> <first root field>`` of the operation a request runs; the field must be the schema's
    (a name a client makes up is ``<type> unknown``); ``invalid`` when the document does not parse."""
    if not isinstance(document, str) or not document or len(document) > _MAX_NAMED_DOCUMENT:
        return "invalid"
    node = documents.parsed(document).operation(operation if isinstance(operation, str) else None)
    if not isinstance(node, OperationDefinitionNode):
        return "invalid"
    kind = node.operation.value
    if not _ROOT_FIELDS:
        _ROOT_FIELDS.update(_root_fields())
    for selection in node.selection_set.selections:
        name = getattr(getattr(selection, "name", None), "value", None)
        if name is not None and name in _ROOT_FIELDS.get(kind, ()):
            return f"{kind} {name}"
        if name == "__schema":
            return f"{kind} __schema"
    return f"{kind} unknown"


def _graphql_operation(request: HttpRequest) -> str:
    if request.method == "GET":
        return operation_name(request.GET.get("query"), request.GET.get("operationName"))
    content_type = request.content_type or ""
    try:
        if content_type == "application/graphql":
            return operation_name(request.body.decode("utf-8"), None)
        data = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):  # the view refuses such a body in words
        return "invalid"
    if not isinstance(data, dict):
        return "invalid"
    return operation_name(data.get("query"), data.get("operationName"))


class MetricsMiddleware:
    """Counts and times every request, by GraphQL operation or by view. First in MIDDLEWARE, so that the
    time spent in the others counts too. Sync only, as the rest of the chain (see portal.oidc)."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.FLEXPLANE_METRICS_PORT is not None and _on_metrics_port(request):
            # The metrics port serves the metrics only.
            return metrics(request) if request.path == METRICS_PATH else HttpResponseNotFound()
        started = time.monotonic()
        response = self.get_response(request)
        elapsed = time.monotonic() - started
        match = request.resolver_match
        view = match.view_name if match is not None else "unmatched"
        if view == "graphql":
            operation = _graphql_operation(request)
            GRAPHQL_REQUESTS.labels(operation, str(response.status_code)).inc()
            GRAPHQL_LATENCY.labels(operation).observe(elapsed)
        else:
            HTTP_REQUESTS.labels(view, str(response.status_code)).inc()
            HTTP_LATENCY.labels(view).observe(elapsed)
        return response
