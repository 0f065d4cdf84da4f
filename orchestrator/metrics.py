"""The orchestrator's Prometheus metrics, and ``/metrics`` that serves them.

What is measured, and where:

- every HTTP request, by GraphQL operation (``query vms``, ``mutation createVirtualMachine``: the
  operation's type and its first root field, a name the schema bounds) or by view (the portal's URL
  names): :class:`MetricsMiddleware`;
- the calls through the agents, per zone and node: latency, outcome, in-flight slots and the waits for
  them (``agentclient.metrics``, in ``agentclient.pool``);
- the waits for a VDC's lock (``orchestrator.services.locks``), the query admission queue and its 503s
  (``orchestrator.graphql.admission``), and the open consoles (``orchestrator.services.console``).

``/metrics`` is meant for the cluster's Prometheus, not for the public: with ``FLEXPLANE_METRICS_PORT``
set (the chart sets it and gives daphne that second port, which neither the Service's http port nor
the ingress routes to), it answers only on that port, and that port answers nothing else. Unset (the
devstack, on loopback), it answers on the app's own port.
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
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest

from agentclient.metrics import LATENCY_BUCKETS
from orchestrator.graphql import documents

METRICS_PATH = "/metrics"
# Longer documents are not parsed again just to name them (the API refuses most of them anyway).
_MAX_NAMED_DOCUMENT = 16 * 1024

HTTP_REQUESTS = Counter(
    "flexplane_http_requests",
    "HTTP requests outside /graphql, by view (the URL's name) and status.",
    ["view", "status"],
)
HTTP_LATENCY = Histogram(
    "flexplane_http_request_duration_seconds",
    "How long an HTTP request outside /graphql took, by view.",
    ["view"],
    buckets=LATENCY_BUCKETS,
)
GRAPHQL_REQUESTS = Counter(
    "flexplane_graphql_requests",
    "GraphQL requests, by operation (its type and first root field) and HTTP status.",
    ["operation", "status"],
)
GRAPHQL_LATENCY = Histogram(
    "flexplane_graphql_request_duration_seconds",
    "How long a GraphQL request took, by operation.",
    ["operation"],
    buckets=LATENCY_BUCKETS,
)
LOCK_WAIT = Histogram(
    "flexplane_lock_wait_seconds",
    "How long a request waited for a lock (vdc: a VDC's, sdn: a zone's networks'), by outcome "
    "(acquired, busy).",
    ["lock", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
LOCKS_LOST = Counter("flexplane_locks_lost", "VDC locks found taken over while still held.")
QUERIES_QUEUED = Gauge("flexplane_queries_queued", "GraphQL queries waiting for a query slot.")
QUERIES_RUNNING = Gauge("flexplane_queries_running", "GraphQL queries holding a query slot.")
QUERY_QUEUE_WAIT = Histogram(
    "flexplane_query_queue_wait_seconds",
    "How long a GraphQL query waited for a slot (FLEXPLANE_MAX_CONCURRENT_QUERIES).",
    buckets=(0.001, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0),
)
QUERIES_REJECTED = Counter(
    "flexplane_queries_rejected",
    "GraphQL queries answered 503 because no slot freed up within FLEXPLANE_QUERY_QUEUE_TIMEOUT.",
)
CONSOLES_OPEN = Gauge("flexplane_consoles_open", "Browser consoles open through this replica.")
CONSOLES_REFUSED = Counter(
    "flexplane_consoles_refused",
    "Console connections refused, by reason (unauthenticated, not_found, limit, unavailable).",
    ["reason"],
)
CONSOLE_BYTES = Counter(
    "flexplane_console_bytes",
    "Bytes relayed by consoles, by direction (to_vm, to_browser).",
    ["direction"],
)


def _on_metrics_port(request: HttpRequest) -> bool:
    port = settings.FLEXPLANE_METRICS_PORT
    return port is not None and str(request.META.get("SERVER_PORT", "")) == str(port)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus text exposition of this process's metrics."""
    if settings.FLEXPLANE_METRICS_PORT is not None and not _on_metrics_port(request):
        return HttpResponseNotFound()
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


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
