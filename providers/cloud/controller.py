"""The loop: a full pass every interval, and sooner when a watch sees a Node or a Service change.

A pass reads everything it decides on (the tenant cluster's Nodes and Services, the VDC's VMs and
gateways) and makes the difference (``nodes``, ``balancers``): it keeps nothing from one pass to the
next, so a restart, a missed watch event or a second replica during a rollout costs nothing but a
repeated read. The watches only wake the loop early; they carry no data it relies on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import watch

from providers.cloud.balancers import Balancers
from providers.cloud.nodes import reconcile_nodes
from providers.cloud.tenant import TenantCluster
from providers.cloud.vdc import Vdc

log = logging.getLogger(__name__)

WATCH_SECONDS = 300  # a watch is opened again after this
RETRY_SECONDS = 2.0  # after a watch that failed
SETTLE_SECONDS = 0.2  # events arriving together make one pass


class CloudController:
    """One tenant cluster's cloud controller: ``reconcile`` makes one pass, ``run`` loops until ``stop``."""

    def __init__(self, tenant: TenantCluster, vdc: Vdc, cluster: str, *, interval: float = 30.0) -> None:
        self.tenant = tenant
        self.vdc = vdc
        self.cluster = cluster
        self.interval = interval
        self.balancers = Balancers(tenant, vdc, cluster)
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.passes = 0
        self.last_error: str | None = None
        self.last_success: float | None = None
        self._loop: threading.Thread | None = None
        self._watches: list[watch.Watch] = []

    def reconcile(self) -> None:
        """One full pass: Nodes first (the load balancers forward to the nodes they leave ready)."""
        machines = self.vdc.machines()
        reconcile_nodes(self.tenant, self.vdc, self.tenant.nodes(), machines)
        self.balancers.reconcile(self.tenant.services(), self.tenant.nodes(), machines)

    def run(self) -> None:
        """Pass after pass until ``stop``; a pass that fails is logged and made again at the next."""
        while not self.stop.is_set():
            self.wake.clear()
            try:
                self.reconcile()
            except Exception as exc:  # any failure: the next pass starts from what is there
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("pass failed: %s", self.last_error)
            else:
                self.last_error = None
                self.last_success = time.monotonic()
            self.passes += 1
            if self.wake.wait(self.interval):
                self.stop.wait(SETTLE_SECONDS)

    def start(self) -> CloudController:
        """The loop and the two watches, each on a thread of its own."""
        for name, lister in (
            ("nodes", self.tenant.core.list_node),
            ("services", self.tenant.core.list_service_for_all_namespaces),
        ):
            threading.Thread(
                target=self._follow, args=(lister,), name=f"cloud-watch-{name}", daemon=True
            ).start()
        self._loop = threading.Thread(target=self.run, name="cloud-controller", daemon=True)
        self._loop.start()
        return self

    def shutdown(self) -> None:
        self.stop.set()
        self.wake.set()
        for opened in list(self._watches):
            opened.stop()
        if self._loop is not None:
            self._loop.join(self.interval + 30)

    def alive(self) -> bool:
        return self._loop is not None and self._loop.is_alive()

    def _follow(self, lister: Callable[..., Any]) -> None:
        while not self.stop.is_set():
            opened = watch.Watch()
            self._watches.append(opened)
            try:
                for _event in opened.stream(
                    lister,
                    timeout_seconds=WATCH_SECONDS,
                    _request_timeout=(self.tenant.timeout, WATCH_SECONDS + self.tenant.timeout),
                ):
                    self.wake.set()
                    if self.stop.is_set():
                        return
            except Exception as exc:  # the passes go on without it; it is opened again
                if self.stop.is_set():
                    return
                log.debug("watch ended: %s", exc)
                self.stop.wait(RETRY_SECONDS)
            finally:
                self._watches.remove(opened)
