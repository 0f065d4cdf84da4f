"""Waking a reconcile when what it waits for changes, instead of waiting out its retry delay.

A handler that cannot go further (a Machine without bootstrap data yet, a Service without its
LoadBalancer address) raises kopf's temporary error and kopf calls it again after a delay; kopf cannot
be told to call it sooner. Controllers built on client-go map an event of a watched object to a reconcile
of its owner (controller-runtime's ``Watches``); here a kopf event handler on the watched kind does the
same through :class:`Wakeups`, keyed by the owner (namespace, name):

- :meth:`Wakeups.serial` runs one reconcile of an owner at a time (the kopf handler's and a wake's);
- :meth:`Wakeups.wake` (from the watched kind's event handler) answers True when no reconcile of that
  owner runs now, and the caller runs one at once (:func:`run_woken`); when one runs, it is marked woken
  instead, and that reconcile, should it end waiting, is retried at once (:meth:`Wakeups.woken`): an
  event that came while it was reading is not missed.

Nothing here polls: a reconcile runs for a kopf cause, or for an event of what it waits for. The retry
delays stay as the safety net (an event lost when a watch is re-opened).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

Key = tuple[str, str]
T = TypeVar("T")


class Wakeups:
    """Per owner: one reconcile at a time, and whether something it waits for changed meanwhile."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Key, threading.Lock] = {}
        self._users: dict[Key, int] = {}
        self._woken: set[Key] = set()

    @contextmanager
    def serial(self, key: Key) -> Iterator[None]:
        """Hold ``key``'s reconcile (waiting for one under way to end); its woken mark is cleared."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
            self._users[key] = self._users.get(key, 0) + 1
        try:
            with lock:
                with self._guard:
                    self._woken.discard(key)
                yield
        finally:
            with self._guard:
                self._users[key] -= 1
                if not self._users[key]:  # nobody holds or waits: forget the owner
                    del self._users[key], self._locks[key]

    def wake(self, key: Key) -> bool:
        """Something ``key`` may wait for changed: True when no reconcile of it runs (run one now), else
        it is marked woken for the one that runs."""
        with self._guard:
            if key in self._users:
                self._woken.add(key)
                return False
            return True

    def woken(self, key: Key) -> bool:
        """Whether ``key`` was woken since its reconcile began (call it while holding :meth:`serial`)."""
        with self._guard:
            return key in self._woken


def run_woken(wakeups: Wakeups, key: Key, reconcile: Callable[[], object]) -> bool:
    """A wake of ``key``: run ``reconcile`` now unless one runs already (then it is marked woken); True if
    it ran. ``reconcile`` reads the owner afresh (an event handler holds the watched object, not it)."""
    if not wakeups.wake(key):
        return False
    with wakeups.serial(key):
        reconcile()
    return True
