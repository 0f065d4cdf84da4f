"""Liveness and readiness over HTTP for the long-running processes that serve nothing else: the gateway
reconciler (``manage.py reconcile_gateways --every``) and the Cluster API providers (``python -m
providers``). The orchestrator answers ``/healthz`` and ``/readyz`` on its own port (``orchestrator.health``).

``GET /healthz`` asks the process's liveness check and ``GET /readyz`` its readiness check: each answers
``None`` when all is well (200 ``{"status": "ok"}``) or says what is wrong (503 ``{"status": "failing",
"detail": …}``). The kubelet's probes read them (the charts' ``livenessProbe``/``readinessProbe``); nothing
else is served, and no request is logged.

:class:`Metrics` serves the process's Prometheus metrics (the default registry: the certificate's expiry and
reloads of ``agentclient.metrics``, the agent calls' counters) as ``GET /metrics`` on a port of its own,
for the cluster's Prometheus; the providers run it (``FLEXPLANE_METRICS_LISTEN``), as the orchestrator
answers ``/metrics`` on its own metrics port (``orchestrator.metrics_http``). Before each scrape it runs
its ``before_scrape`` (the providers': :func:`orchestrator.services.context.look_at_client_certificate`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

logger = logging.getLogger(__name__)

# What a check answers: None when all is well, else what is wrong.
Check = Callable[[], str | None]


class ProbeAddressError(ValueError):
    """A probes address that is not HOST:PORT."""


def listen_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::]:8081`` for IPv6) as a bindable address; ProbeAddressError naming the value."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ProbeAddressError(f"the probes address {value!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)  # noqa: S104 (in a pod the kubelet dials its IP)


class _Served:
    """An HTTP server of one process, on a thread of its own until :meth:`stop`."""

    def __init__(self, address: str, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._server = ThreadingHTTPServer(listen_address(address), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


class Probes(_Served):
    """The two probes of one process, served by a thread of their own until :meth:`stop`."""

    def __init__(self, address: str, *, live: Check, ready: Check) -> None:
        self.checks: dict[str, Check] = {"/healthz": live, "/readyz": ready}
        super().__init__(address, _handler(self.checks), "probes")


class Metrics(_Served):
    """``GET /metrics`` of one process (its default Prometheus registry), and nothing else, served by a
    thread of its own until :meth:`stop`. ``before_scrape`` runs first at each scrape; what it raises is
    logged, and the scrape still answers what the registry holds."""

    def __init__(self, address: str, *, before_scrape: Callable[[], None] = lambda: None) -> None:
        super().__init__(address, _metrics_handler(before_scrape), "metrics")


class _Quiet(BaseHTTPRequestHandler):
    def _send(self, status: HTTPStatus, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: a probe or a scrape every few seconds is not news."""


def _metrics_handler(before_scrape: Callable[[], None]) -> type[BaseHTTPRequestHandler]:
    class Handler(_Quiet):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n")
                return
            try:
                before_scrape()
            except Exception:  # logged: the metrics are still worth answering
                logger.warning("looking before a scrape failed", exc_info=True)
            self._send(HTTPStatus.OK, CONTENT_TYPE_LATEST, generate_latest(REGISTRY))

    return Handler


def _handler(checks: dict[str, Check]) -> type[BaseHTTPRequestHandler]:
    class Handler(_Quiet):
        def do_GET(self) -> None:
            check = checks.get(self.path.split("?", 1)[0])
            if check is None:
                self._answer(HTTPStatus.NOT_FOUND, {"status": "not found"})
                return
            try:
                wrong = check()
            except Exception as exc:  # a check that fails says so, as a failing probe
                wrong = f"the check failed: {exc}"
            if wrong is None:
                self._answer(HTTPStatus.OK, {"status": "ok"})
            else:
                self._answer(HTTPStatus.SERVICE_UNAVAILABLE, {"status": "failing", "detail": wrong})

        def _answer(self, status: HTTPStatus, body: dict[str, Any]) -> None:
            self._send(status, "application/json", json.dumps(body).encode())

    return Handler
