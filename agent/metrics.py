"""The agent's Prometheus metrics, served on a loopback port (``metrics_listen``, off when unset).

The endpoint has no authentication, so it listens on a loopback address only (the configuration refuses
any other): the node's own Prometheus agent or node exporter scrapes it. What it tells:

- gRPC calls served, by method and status code, and how long they took (:class:`RpcMetrics`);
- the node's Proxmox API calls, by method and outcome, and their latency (``agent.proxmox``);
- templates asked for: found (a hit) or imported (a miss), and the bytes of downloads held in the
  image cache;
- the certificate's days left, the renewal's failures in a row, and the last self-update's result
  (read from ``AgentStatus`` at each scrape).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import grpc
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agent.interceptors import AroundInterceptor, Context
from agent.status import AgentStatus
from agentclient.proto.flexplane.agent.v1 import agent_pb2

log = logging.getLogger(__name__)

# The agent's own registry: nothing of the libraries' process-wide defaults, only what is declared here.
REGISTRY = CollectorRegistry(auto_describe=True)
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

RPC_CALLS = Counter(
    "flexplane_agent_rpc_calls",
    "gRPC calls served, by method and status code.",
    ["method", "code"],
    registry=REGISTRY,
)
RPC_LATENCY = Histogram(
    "flexplane_agent_rpc_duration_seconds",
    "How long a gRPC call took (a stream: until its end), by method.",
    ["method"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
PROXMOX_CALLS = Counter(
    "flexplane_agent_proxmox_calls",
    "Calls to the node's Proxmox API, by HTTP method and outcome (2xx, 3xx, 4xx, 5xx, timeout, unreachable, "
    "no_answer, bad_answer).",
    ["method", "outcome"],
    registry=REGISTRY,
)
PROXMOX_LATENCY = Histogram(
    "flexplane_agent_proxmox_call_duration_seconds",
    "How long a call to the node's Proxmox API took, by HTTP method.",
    ["method"],
    buckets=_BUCKETS,
    registry=REGISTRY,
)
TEMPLATE_REQUESTS = Counter(
    "flexplane_agent_template_requests",
    "Templates asked for (EnsureTemplate), by result: hit (the template was there) or miss (imported).",
    ["result"],
    registry=REGISTRY,
)
CONSOLES = Counter(
    "flexplane_agent_consoles",
    "Console streams served, by outcome (closed, refused, failed).",
    ["outcome"],
    registry=REGISTRY,
)

_UPDATE_RESULTS: dict[int, str] = {
    agent_pb2.UpdateStatus.RESULT_NONE: "none",
    agent_pb2.UpdateStatus.RESULT_UPDATED: "updated",
    agent_pb2.UpdateStatus.RESULT_REFUSED: "refused",
    agent_pb2.UpdateStatus.RESULT_ROLLED_BACK: "rolled-back",
    agent_pb2.UpdateStatus.RESULT_FAILED: "failed",
}


def proxmox_outcome(status: int | None, failure: BaseException | None) -> str:
    """The outcome label of one Proxmox call: its status class, or the kind of failure."""
    if status is not None:
        return f"{min(max(status // 100, 1), 5)}xx"
    name = type(failure).__name__ if failure is not None else ""
    return {
        "ProxmoxTimeout": "timeout",
        "ProxmoxNoAnswer": "no_answer",
        "ProxmoxUnreachableError": "unreachable",
    }.get(name, "bad_answer")


def observe_proxmox(method: str, started: float, status: int | None, failure: BaseException | None) -> None:
    method = method if method in ("GET", "POST", "PUT", "DELETE") else "other"
    PROXMOX_LATENCY.labels(method).observe(time.monotonic() - started)
    PROXMOX_CALLS.labels(method, proxmox_outcome(status, failure)).inc()


class StatusCollector(Collector):
    """What ``AgentStatus`` says at scrape time, and the image cache's size on disk."""

    def __init__(self, status: AgentStatus, image_cache: Path | None = None) -> None:
        self.status = status
        self.image_cache = image_cache

    def collect(self) -> Iterable[Metric]:
        status = self.status
        if status.certificate_not_after:
            left = GaugeMetricFamily(
                "flexplane_agent_certificate_days_left",
                "Days until the certificate the agent serves with expires.",
            )
            left.add_metric([], (status.certificate_not_after - time.time()) / 86400)
            yield left
        failures = GaugeMetricFamily(
            "flexplane_agent_certificate_renewal_failures",
            "Failed certificate renewals in a row (0: the last attempt succeeded).",
        )
        failures.add_metric([], status.renewal.failures)
        yield failures
        update = GaugeMetricFamily(
            "flexplane_agent_update_result",
            "The last self-update's result (1 for the result it had, 0 for the others).",
            labels=["result"],
        )
        current = _UPDATE_RESULTS.get(status.update.result, "none")
        for result in _UPDATE_RESULTS.values():
            update.add_metric([result], 1.0 if result == current else 0.0)
        yield update
        if self.image_cache is not None:
            cache = GaugeMetricFamily(
                "flexplane_agent_image_cache_bytes", "Bytes of image downloads held in the image cache."
            )
            cache.add_metric([], _folder_bytes(self.image_cache))
            yield cache


def _folder_bytes(folder: Path) -> float:
    try:
        return float(sum(entry.stat().st_size for entry in folder.iterdir() if entry.is_file()))
    except OSError:
        return 0.0


class RpcMetrics(AroundInterceptor):
    """Counts and times every gRPC call, by method and the status code it ended with."""

    @contextlib.asynccontextmanager
    async def around(self, method: str, context: Context) -> AsyncIterator[None]:
        started, failure = time.monotonic(), None
        try:
            yield
        except BaseException as exc:
            failure = exc
            raise
        finally:
            _ended(method.rsplit("/", 1)[-1], started, context, failure)


def _ended(method: str, started: float, context: Any, failure: BaseException | None) -> None:
    code = context.code() if hasattr(context, "code") else None
    if code is None:
        code = grpc.StatusCode.OK if failure is None else grpc.StatusCode.UNKNOWN
    if isinstance(failure, BaseException) and type(failure).__name__ == "CancelledError":
        code = grpc.StatusCode.CANCELLED
    name = code.name if isinstance(code, grpc.StatusCode) else str(code)
    RPC_CALLS.labels(method, name).inc()
    RPC_LATENCY.labels(method).observe(time.monotonic() - started)


async def serve_metrics(listen: str, status: AgentStatus, image_cache: Path | None) -> web.AppRunner:
    """Serve ``GET /metrics`` on listen (a loopback host:port; port 0: any free one). Returns the runner
    to clean up; the address it listens on is logged and printed."""
    from agent.config import split_listen

    REGISTRY.register(StatusCollector(status, image_cache))

    async def metrics(request: web.Request) -> web.Response:
        body = generate_latest(REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = split_listen(listen)
    site = web.TCPSite(runner, host, port)
    await site.start()
    address = runner.addresses[0]
    shown = f"[{address[0]}]:{address[1]}" if ":" in str(address[0]) else f"{address[0]}:{address[1]}"
    log.info("metrics on http://%s/metrics", shown)
    print(f"flexplane-agent metrics on {shown}", flush=True)
    return runner
