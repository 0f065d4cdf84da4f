"""The orchestrator's Prometheus metrics: the counters, gauges and histograms, at the bottom of the layers
(anything may count into them; they import nothing of the orchestrator). ``orchestrator.metrics_http``
serves them on ``/metrics`` and measures the requests.

What is measured, and where:

- every HTTP request, by GraphQL operation (``query vms``, ``mutation createVirtualMachine``: the
  operation's type and its first root field, a name the schema bounds) or by view (the portal's URL
  names): ``orchestrator.metrics_http.MetricsMiddleware``;
- the calls through the agents, per zone and node: latency, outcome, in-flight slots and the waits for
  them (``agentclient.metrics``, in ``agentclient.pool``); the expiry of the client certificate and the
  platform CA as last read, and the renewed certificates read again (``agentclient.credentials``,
  looked at on every call and every scrape);
- the waits for a VDC's lock (``orchestrator.services.locks``), the query admission queue and its 503s
  (``orchestrator.graphql.admission``), and the open consoles (``orchestrator.services.console``);
- whether the agents' staged rollout is halted, read from the management cluster at each scrape
  (:class:`RolloutHaltedCollector`, which ``orchestrator.metrics_http`` registers with its reader).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agentclient.metrics import LATENCY_BUCKETS

logger = logging.getLogger(__name__)

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


# What the rollout's metric needs of it: its version, whether it is halted, and the host whose health
# check halted it ("" when an admin did); None when no rollout was started.
RolloutState = tuple[str, bool, str] | None


class RolloutHaltedCollector(Collector):
    """``flexplane_agent_rollout_halted``, read from the management cluster at each scrape (``read``), so
    every replica tells the same: 1 with the version and the host that failed (empty when an admin halted
    it) while halted, 0 while a rollout goes on, nothing without a rollout. The reader is handed in: the
    rollout is the services' to read, and this module imports nothing of the orchestrator."""

    def __init__(self, read: Callable[[], RolloutState]) -> None:
        self._read = read

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The metric's name for the registry, without asking the cluster (as collect would)."""
        yield self._family()

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "flexplane_agent_rollout_halted",
            "Whether the agent rollout is halted, by its version and the host whose health check failed.",
            labels=["version", "host"],
        )

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        try:
            found = self._read()
        except Exception as exc:  # a scrape answers whatever the cluster does
            logger.debug("agent rollout metric: %s", exc)
            found = None
        if found is not None:
            version, halted, host = found
            family.add_metric([version, host], 1.0 if halted else 0.0)
        yield family
