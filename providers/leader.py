"""Leader election: of the providers' replicas, the one holding a coordination.k8s.io/v1 Lease reconciles.

The Lease is the orchestrator's lock (:func:`orchestrator.services.locks.lock`): written with optimistic
concurrency, renewed in the background every third of its duration, released on the way out. A replica
that does not hold it tries again every ``retry`` seconds (one read, and one write when it is free);
the holder that stops renewing (killed, paused, cut off) loses it after ``ttl`` seconds, and one that
finds it taken over (``held.lost``) must stop reconciling at once: :func:`lead` says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from orchestrator.errors import Conflict, FlexPlaneError
from orchestrator.services import locks
from orchestrator.sources.kube import KubeSource

logger = logging.getLogger(__name__)

LEASE_NAME = "flexplane-providers-leader"
DEFAULT_TTL = 15.0
DEFAULT_RETRY = 2.0


@contextmanager
def leadership(
    source: KubeSource,
    identity: str,
    stop: threading.Event,
    *,
    name: str = LEASE_NAME,
    ttl: float = DEFAULT_TTL,
    retry: float = DEFAULT_RETRY,
) -> Iterator[locks.HeldLock | None]:
    """Hold the Lease for the ``with`` block, once it is ours; None if ``stop`` was set while waiting."""
    waiting_logged = False
    while not stop.is_set():
        with ExitStack() as stack:
            try:
                held = stack.enter_context(
                    locks.lease(source, name, "the providers' leadership", identity, ttl=ttl, wait=0.0)
                )
            except Conflict as exc:
                if not waiting_logged:
                    logger.info("waiting for leadership: %s", exc.message)
                    waiting_logged = True
            except FlexPlaneError as exc:  # the cluster is away: try again
                logger.warning("leadership: %s", exc.message)
            else:
                logger.info("leading as %s (Lease %s/%s)", held.holder, source.namespace, name)
                yield held
                return
        stop.wait(retry)
    yield None


def watch(held: locks.HeldLock, stop: threading.Event, period: float = 0.5) -> threading.Thread:
    """A thread that sets ``stop`` once the Lease is lost (or ``stop`` is set otherwise)."""

    def run() -> None:
        while not stop.wait(period):
            if held.lost:
                logger.error("leadership lost (Lease %s taken over): stopping", held.name)
                stop.set()

    thread = threading.Thread(target=run, name="leadership-watch", daemon=True)
    thread.start()
    return thread
