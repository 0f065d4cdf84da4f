"""``python -m providers``: both Cluster API providers, for as long as this replica leads.

Configures Django with the orchestrator's settings (as ``manage.py`` does), so that the orchestrator's
services (the VM create path, the catalog, the agents' channel) work here as in the orchestrator; the
settings it reads: ``FLEXPLANE_KUBECONFIG`` (else the in-cluster service account),
``FLEXPLANE_NAMESPACE`` (the platform namespace: the catalog, the VDCs' locks, and the providers'
leader Lease), ``FLEXPLANE_AGENT_CA``/``CERT``/``KEY`` (the ``flexplane-capi`` client certificate, read
again when its mounted Secret is renewed); ``FLEXPLANE_PROVIDERS_VDC_ROLE``, ``..._CONTROL_PLANE_ROLE`` and
``FLEXPLANE_SERVICE_ACCOUNT`` (the roles they bind themselves to for Secrets, ``providers.common.access``);
``FLEXPLANE_PROVIDERS`` (which providers this process runs: ``infrastructure``, ``control-plane``, or
both when unset, as the chart runs them; the clusterctl components run one per Deployment),
``FLEXPLANE_PROVIDERS_LEADER_LEASE`` (the leader Lease's name, ``flexplane-providers-leader``),
``FLEXPLANE_PROVIDERS_LEADER_TTL`` (seconds a leader that stopped renewing keeps the Lease, 15), the
providers' retry delays (``FLEXPLANE_PROVIDERS_RETRY_DELAY`` and the others their handlers name), and
``FLEXPLANE_PROBES_LISTEN`` (HOST:PORT: the kubelet's ``/healthz`` and ``/readyz``, :class:`Health`) and
``FLEXPLANE_METRICS_LISTEN`` (HOST:PORT: Prometheus' ``/metrics``, ``orchestrator.probes.Metrics``: the
client certificate's expiry and reloads, looked at again at each scrape, and the agent calls' metrics).
First it checks that Cluster API core speaks contract v1beta2 (:mod:`providers.compat`), and refuses to
start (exit status 1), naming the Cluster API version needed, when it does not. Then it takes the leader
Lease and runs the providers' kopf operators until SIGTERM (or SIGINT), and releases the Lease on the way
out so that another replica takes over at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes import client

    from providers.common.operator import Provider

logger = logging.getLogger("providers")


class KopfExtras(logging.Filter):
    """Drops what kopf attaches to its records for its own formatters (its settings, a skip flag): the
    orchestrator's JSON lines would try to serialise them."""

    def filter(self, record: logging.LogRecord) -> bool:
        for attribute in ("settings", "k8s_skip"):
            record.__dict__.pop(attribute, None)
        return True


# FLEXPLANE_PROVIDERS' names (clusterctl's provider types, less their suffix) and the providers they run.
SELECTIONS = {"infrastructure": ("infrastructure",), "control-plane": ("controlplane",)}


def selected(value: str) -> set[str]:
    """The providers' names (``Provider.name``) that FLEXPLANE_PROVIDERS selects; both when it is empty."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in SELECTIONS]
    if unknown:
        raise SystemExit(
            f"FLEXPLANE_PROVIDERS: unknown provider {', '.join(unknown)}: name {' or '.join(SELECTIONS)}"
        )
    return {provider for name in names or SELECTIONS for provider in SELECTIONS[name]}


class Health:
    """What the probes say (``orchestrator.probes``): ready once started (leading, or standing by for the
    Lease as a spare replica does), alive unless stopping or, while leading, the operators have stopped."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.operators: threading.Thread | None = None

    def live(self) -> str | None:
        if self.stop.is_set():
            return "stopping"
        if self.operators is not None and not self.operators.is_alive():
            return "the operators have stopped"
        return None

    def ready(self) -> str | None:
        return "stopping" if self.stop.is_set() else None


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexplane.settings")
    import django

    django.setup()
    from django.conf import settings

    for handler in logging.getLogger().handlers:
        handler.addFilter(KopfExtras())

    from kubernetes import client

    from orchestrator.probes import Metrics, Probes
    from orchestrator.services.context import look_at_client_certificate
    from orchestrator.sources.kube import load_configuration
    from providers import compat
    from providers.common import kube as kube_module
    from providers.controlplane.handlers import PROVIDER as CONTROL_PLANE
    from providers.infrastructure.handlers import PROVIDER as INFRASTRUCTURE

    stop = threading.Event()

    def on_signal(number: int, _frame: FrameType | None) -> None:
        logger.info("%s received: stopping", signal.Signals(number).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    configuration = load_configuration(settings.FLEXPLANE_KUBECONFIG or None)
    try:
        compat.check_core(client.ApiClient(configuration), float(settings.FLEXPLANE_KUBE_TIMEOUT))
    except compat.IncompatibleCore as refused:
        logger.error("not starting: %s", refused)
        return 1
    providers = [
        p
        for p in (INFRASTRUCTURE, CONTROL_PLANE)
        if p.name in selected(os.environ.get("FLEXPLANE_PROVIDERS", ""))
    ]
    kube_module.configure(kube_module.Kube.from_configuration(configuration))
    health = Health(stop)
    listen = os.environ.get("FLEXPLANE_PROBES_LISTEN", "")
    probes = Probes(listen, live=health.live, ready=health.ready).start() if listen else None
    scraped = os.environ.get("FLEXPLANE_METRICS_LISTEN", "")
    metrics = Metrics(scraped, before_scrape=look_at_client_certificate).start() if scraped else None
    try:
        return lead(providers, configuration, stop, health)
    finally:
        for server in (probes, metrics):
            if server is not None:
                server.stop()


def lead(
    providers: Sequence[Provider], configuration: client.Configuration, stop: threading.Event, health: Health
) -> int:
    """Run the providers for as long as this replica holds the leader Lease (0 at a stop, 1 on a failure)."""
    from orchestrator.sources.kube import kube as platform_kube
    from providers import leader
    from providers.common.operator import run

    identity = os.environ.get("POD_NAME") or socket.gethostname()
    ttl = float(os.environ.get("FLEXPLANE_PROVIDERS_LEADER_TTL") or leader.DEFAULT_TTL)
    lease = os.environ.get("FLEXPLANE_PROVIDERS_LEADER_LEASE") or leader.LEASE_NAME
    with leader.leadership(
        platform_kube(), identity, stop, name=lease, ttl=ttl, retry=min(leader.DEFAULT_RETRY, ttl / 3)
    ) as held:
        if held is None:
            return 0
        leader.watch(held, stop)
        failure: list[BaseException] = []

        def operate() -> None:
            try:
                asyncio.run(run(providers, configuration, stop))
            except BaseException as exc:  # reported by the main thread
                failure.append(exc)
                stop.set()

        thread = threading.Thread(target=operate, name="operators")
        health.operators = thread
        thread.start()
        while thread.is_alive():
            thread.join(0.5)  # the main thread stays free to take signals
    if failure:
        logger.error("the providers stopped on an error", exc_info=failure[0])
        return 1
    logger.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
