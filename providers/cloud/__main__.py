"""``python -m providers.cloud``: one tenant cluster's cloud controller, until SIGTERM (or SIGINT).

It runs beside the cluster's hosted control plane on the management cluster (never on the workers) and
holds no Proxmox credential: it reaches the tenant cluster's API server with a kubeconfig, and flex.plane
with a service account of the cluster's VDC (USER there, nowhere else). Settings, each an option or its
variable:

- ``--kubeconfig`` / ``FLEXPLANE_CLOUD_KUBECONFIG``: the tenant cluster's kubeconfig (its API server);
- flex.plane's API as the cluster's service account (``providers.common.account``: ``--url``, ``--key`` /
  ``FLEXPLANE_CLOUD_KEY``, ``--identity-url``, ``--project``, ``--token-file`` /
  ``FLEXPLANE_CLOUD_TOKEN_FILE``, ``--ca``, ``--vdc`` / ``FLEXPLANE_CLOUD_VDC``);
- ``--cluster`` / ``FLEXPLANE_CLOUD_CLUSTER``: whose it is;
- ``--interval`` / ``FLEXPLANE_CLOUD_INTERVAL``: seconds between full passes (30);
- ``FLEXPLANE_PROBES_LISTEN``: HOST:PORT of ``/healthz`` (alive while the loop runs) and ``/readyz``
  (ready once a pass succeeded and while the last one did).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from types import FrameType

from kubernetes import client

from orchestrator.probes import Probes
from orchestrator.sources.kube import load_configuration
from providers.cloud.controller import CloudController
from providers.cloud.tenant import TenantCluster
from providers.cloud.vdc import Vdc
from providers.common import account

log = logging.getLogger("providers.cloud")


class Health:
    """Alive while the loop runs; ready once a pass succeeded, and not while the last one failed."""

    def __init__(self, controller: CloudController) -> None:
        self.controller = controller

    def live(self) -> str | None:
        if self.controller.stop.is_set():
            return "stopping"
        return None if self.controller.alive() else "the controller's loop has stopped"

    def ready(self) -> str | None:
        wrong = self.live()
        if wrong is not None:
            return wrong
        if self.controller.last_error is not None:
            return f"the last pass failed: {self.controller.last_error}"
        if self.controller.last_success is None:
            return "no pass has completed yet"
        return None


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(prog="python -m providers.cloud", description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", default=env("FLEXPLANE_CLOUD_KUBECONFIG"))
    account.add_arguments(parser, "FLEXPLANE_CLOUD")
    parser.add_argument("--cluster", default=env("FLEXPLANE_CLOUD_CLUSTER"))
    parser.add_argument("--interval", type=float, default=float(env("FLEXPLANE_CLOUD_INTERVAL") or 30))
    parsed = parser.parse_args(argv)
    missing = [name for name in ("kubeconfig", "cluster") if not getattr(parsed, name)] + account.missing(
        parsed
    )
    if missing:
        parser.error(f"missing {', '.join(missing)}")
    if parsed.interval <= 0:
        parser.error(f"--interval must be more than 0 seconds, not {parsed.interval}")
    return parsed


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = arguments(argv)
    tenant = TenantCluster(client.ApiClient(load_configuration(settings.kubeconfig)))
    controller = CloudController(
        tenant, Vdc(account.flexplane(settings)), settings.cluster, interval=settings.interval
    )
    stopped = threading.Event()

    def on_signal(_number: int, _frame: FrameType | None) -> None:
        stopped.set()

    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, on_signal)
    listen = os.environ.get("FLEXPLANE_PROBES_LISTEN", "")
    health = Health(controller)
    probes = Probes(listen, live=health.live, ready=health.ready).start() if listen else None
    controller.start()
    log.info("cloud controller of cluster %s in VDC %s started", settings.cluster, settings.vdc)
    try:
        while not stopped.wait(1.0):
            if not controller.alive():
                log.error("the controller's loop stopped")
                return 1
    finally:
        controller.shutdown()
        if probes is not None:
            probes.stop()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
