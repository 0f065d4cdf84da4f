"""``python -m providers.sni``: the SNI router, until SIGTERM (or SIGINT).

Settings, from the environment: ``FLEXPLANE_SNI_LISTEN`` (HOST:PORT the router takes connections on,
``0.0.0.0:8443``; the Service in front of it publishes the port the control plane provider's
``FLEXPLANE_PROVIDERS_SNI_PORT`` names), ``FLEXPLANE_KUBECONFIG`` (else the in-cluster service account,
which needs ``list`` and ``watch`` of Services in every namespace), ``FLEXPLANE_SNI_HELLO_TIMEOUT``
(seconds for a client's ClientHello, 10), ``FLEXPLANE_SNI_CONNECT_TIMEOUT`` (seconds for a backend to
accept, 5) and ``FLEXPLANE_PROBES_LISTEN`` (HOST:PORT of ``/healthz`` and ``/readyz``: ready once the
control planes' Services are listed, alive while the router serves and follows them).

Several replicas route alike (each follows the Services itself): no leader is needed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from kubernetes import client
from kubernetes.config import ConfigException

from orchestrator.probes import Probes, listen_address
from orchestrator.sources.kube import load_configuration
from providers.common.settings import seconds_of
from providers.sni.router import Router, Timeouts
from providers.sni.routes import ServiceWatch

log = logging.getLogger("providers.sni")

DEFAULT_LISTEN = "0.0.0.0:8443"  # in a pod: the Service's targetPort


def seconds(variable: str, default: float) -> float:
    """``variable`` in seconds; the process exits naming it when it is not a number above 0."""
    try:
        return seconds_of(variable, default)
    except ValueError as error:
        raise SystemExit(str(error)) from None


class Health:
    """Ready once the routes are listed; alive while the server serves and the watch's thread runs."""

    def __init__(self, routes: ServiceWatch) -> None:
        self.routes = routes
        self.server: asyncio.Server | None = None

    def live(self) -> str | None:
        if self.server is not None and not self.server.is_serving():
            return "the router does not serve"
        if not self.routes.alive() and not self.routes.stopping.is_set():
            return "the routes are not followed"
        return None

    def ready(self) -> str | None:
        if self.routes.stopping.is_set():
            return "stopping"
        if not self.routes.listed.is_set():
            return "the control planes' Services are not listed yet"
        return self.live()


async def serve(router: Router, host: str, port: int, health: Health) -> None:
    """Serve until SIGTERM or SIGINT, then stop taking connections (those open end with their peers)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    server = await router.serve(host, port)
    health.server = server
    log.info("routing on %s:%s", host, port)
    async with server:
        await stop.wait()
    log.info("stopped")


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        host, port = listen_address(os.environ.get("FLEXPLANE_SNI_LISTEN") or DEFAULT_LISTEN)
    except ValueError as error:
        log.error("not starting: FLEXPLANE_SNI_LISTEN: %s", error)
        return 1
    timeouts = Timeouts(
        hello=seconds("FLEXPLANE_SNI_HELLO_TIMEOUT", Timeouts.hello),
        connect=seconds("FLEXPLANE_SNI_CONNECT_TIMEOUT", Timeouts.connect),
    )
    try:
        configuration = load_configuration(os.environ.get("FLEXPLANE_KUBECONFIG") or None)
    except ConfigException as error:
        log.error("not starting: no configuration for the management cluster: %s", error)
        return 1
    routes = ServiceWatch(client.ApiClient(configuration)).start()
    health = Health(routes)
    listen = os.environ.get("FLEXPLANE_PROBES_LISTEN", "")
    probes = Probes(listen, live=health.live, ready=health.ready).start() if listen else None
    try:
        asyncio.run(serve(Router(routes.lookup, timeouts), host, port, health))
    finally:
        routes.stop()
        if probes is not None:
            probes.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
