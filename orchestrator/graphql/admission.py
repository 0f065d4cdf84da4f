"""How many GraphQL queries one orchestrator process runs at once.

Every query reads its neighbours under deadlines: the zones' fan-out, the management cluster. A process
that starts every query it receives shares its CPU (and its interpreter) among all of them, so under a
burst each one slows down until it misses those deadlines, and healthy zones are reported UNAVAILABLE.
Queries therefore wait their turn for one of ``FLEXPLANE_MAX_CONCURRENT_QUERIES`` slots, and their
deadlines start once they run; one that waits past ``FLEXPLANE_QUERY_QUEUE_TIMEOUT`` is answered 503,
with Retry-After, instead of late.

Mutations are not counted: they spend most of their time waiting on Proxmox's tasks and on their VDC's
lock, and must not hold a slot meanwhile. A document that does not parse is left to GraphQL's own error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from orchestrator import metrics


class Busy(Exception):
    """No query slot freed up within the queue timeout."""


_slots: threading.BoundedSemaphore | None = None
_lock = threading.Lock()


def _semaphore() -> threading.BoundedSemaphore:
    global _slots
    with _lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(settings.FLEXPLANE_MAX_CONCURRENT_QUERIES)
        return _slots


@contextmanager
def admitted(query: bool) -> Iterator[None]:
    """Run the block holding a query slot when it runs a ``query`` (a mutation, or a document in error,
    runs at once); ``Busy`` when no slot frees up in time."""
    if not query:
        yield
        return
    slots = _semaphore()
    wait = settings.FLEXPLANE_QUERY_QUEUE_TIMEOUT
    started = time.monotonic()
    metrics.QUERIES_QUEUED.inc()
    try:
        acquired = slots.acquire(timeout=wait)
    finally:
        metrics.QUERIES_QUEUED.dec()
        metrics.QUERY_QUEUE_WAIT.observe(time.monotonic() - started)
    if not acquired:
        metrics.QUERIES_REJECTED.inc()
        limit = settings.FLEXPLANE_MAX_CONCURRENT_QUERIES
        raise Busy(f"the orchestrator ran {limit} queries for the last {wait:g} s without a free slot: retry")
    metrics.QUERIES_RUNNING.inc()
    try:
        yield
    finally:
        metrics.QUERIES_RUNNING.dec()
        slots.release()
