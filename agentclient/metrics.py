"""What the control plane's calls to the agents cost, as Prometheus metrics (the process's default registry).

Labelled by zone and node (read from the agent's identity, ``<node>.<zone>.agents.flexplane``): both are
bounded by the fleet, never by a request. The path of a Proxmox call is left out (it carries VM ids).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

from agentclient.errors import (
    AgentBusy,
    AgentConnectionLost,
    AgentDeadlineExceeded,
    AgentUnavailable,
    ProxmoxError,
    ProxmoxNoAnswer,
    ProxmoxUnreachable,
    ProxyRefused,
)
from agentclient.identity import AGENTS_DOMAIN

# From a local agent's few milliseconds to a slow cluster read near the deadlines (seconds).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

UPSTREAM_CALLS = Counter(
    "flexplane_upstream_calls",
    "Proxmox calls through the agents, by zone, node, HTTP method and outcome "
    "(ok, proxmox_4xx, proxmox_5xx, unreachable, no_answer, deadline, unavailable, busy, refused, error).",
    ["zone", "node", "method", "outcome"],
)
UPSTREAM_LATENCY = Histogram(
    "flexplane_upstream_call_duration_seconds",
    "How long a Proxmox call through an agent took, waiting for a slot included, by zone and node.",
    ["zone", "node"],
    buckets=LATENCY_BUCKETS,
)
IN_FLIGHT = Gauge(
    "flexplane_agent_calls_in_flight",
    "Calls holding one of an agent's in-flight slots (FLEXPLANE_AGENT_MAX_IN_FLIGHT), by zone and node.",
    ["zone", "node"],
)
SLOT_WAIT = Histogram(
    "flexplane_agent_slot_wait_seconds",
    "How long a call waited for one of an agent's in-flight slots, by zone and node.",
    ["zone", "node"],
    buckets=(0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
SLOT_TIMEOUTS = Counter(
    "flexplane_agent_busy",
    "Calls refused unsent because no in-flight slot of the agent freed up within their deadline.",
    ["zone", "node"],
)

CERTIFICATE_EXPIRY = Gauge(
    "flexplane_certificate_expiry_timestamp_seconds",
    "When the certificates this process presents to and trusts from the agents expire (Unix seconds), "
    "as last read from their files: client (ours, FLEXPLANE_AGENT_CERT), ca (the platform CA's, "
    "FLEXPLANE_AGENT_CA).",
    ["certificate"],
)
CERTIFICATE_RELOADS = Counter(
    "flexplane_certificate_reloads",
    "Changed client TLS files read again, by outcome (ok; failed: unreadable or a key not the "
    "certificate's, the previous material kept).",
    ["outcome"],
)


def zone_node(identity: str) -> tuple[str, str]:
    """(zone, node) of an agent identity; ("", identity) for a name that is not one."""
    suffix = "." + AGENTS_DOMAIN
    if identity.endswith(suffix):
        node, _, zone = identity[: -len(suffix)].partition(".")
        if node and zone and "." not in zone:
            return zone, node
    return "", identity


# The most specific first: ProxmoxNoAnswer is a ProxmoxUnreachable.
_OUTCOMES: tuple[tuple[type[Exception], str], ...] = (
    (ProxmoxNoAnswer, "no_answer"),
    (ProxmoxUnreachable, "unreachable"),
    (AgentBusy, "busy"),
    (AgentDeadlineExceeded, "deadline"),
    (AgentConnectionLost, "unavailable"),
    (AgentUnavailable, "unavailable"),
    (ProxyRefused, "refused"),
)


def outcome(exc: BaseException | None) -> str:
    """The outcome label of a call that raised exc (None: it succeeded)."""
    if exc is None:
        return "ok"
    if isinstance(exc, ProxmoxError):
        return "proxmox_5xx" if exc.status >= 500 else "proxmox_4xx"
    for kind, name in _OUTCOMES:
        if isinstance(exc, kind):
            return name
    return "error"


@contextmanager
def upstream_call(identity: str, method: str) -> Iterator[None]:
    """Count and time one Proxmox call through the agent of identity."""
    zone, node = zone_node(identity)
    started = time.monotonic()
    failure: BaseException | None = None
    try:
        yield
    except Exception as exc:
        failure = exc
        raise
    finally:
        UPSTREAM_LATENCY.labels(zone, node).observe(time.monotonic() - started)
        UPSTREAM_CALLS.labels(zone, node, method if method in _METHODS else "other", outcome(failure)).inc()


_METHODS = frozenset({"GET", "POST", "PUT", "DELETE"})


def slot_waited(identity: str, seconds: float, *, acquired: bool) -> None:
    """Record a wait for an in-flight slot (and a refusal when none freed up)."""
    zone, node = zone_node(identity)
    SLOT_WAIT.labels(zone, node).observe(seconds)
    if not acquired:
        SLOT_TIMEOUTS.labels(zone, node).inc()


def in_flight(identity: str) -> Gauge:
    """The in-flight gauge of one agent."""
    zone, node = zone_node(identity)
    return IN_FLIGHT.labels(zone, node)


def certificates_read(client: datetime.datetime, ca: datetime.datetime) -> None:
    """Record the expiry of the client certificate and the CA just read."""
    CERTIFICATE_EXPIRY.labels("client").set(client.timestamp())
    CERTIFICATE_EXPIRY.labels("ca").set(ca.timestamp())
