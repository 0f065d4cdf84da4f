"""A small level-triggered controller loop for the devstack's stand-ins (Cluster API core, the hosted control
plane's runtime): watches mark keys dirty, one worker thread reconciles them, a resync revisits all of them.

Test and devstack only. One watch thread per watched resource (cluster-wide, resumed after its last
resourceVersion, relisted when the server says 410 Gone) calls ``key_of(event_object)``; the worker takes
the dirty keys in order and calls ``reconcile(key)``. A reconcile that raises is retried after
``retry_delay``; every ``resync`` seconds every key seen so far is reconciled again, as controller-runtime's
resync does. A single worker: reconciles never race each other.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch

log = logging.getLogger(__name__)

Body = dict[str, Any]


@dataclass(frozen=True)
class Watched:
    """A resource to watch cluster-wide: ``group`` "" for the core group."""

    group: str
    version: str
    plural: str

    def call(self, api: client.ApiClient) -> Callable[..., Any]:
        """The list call of this resource, answering raw JSON (a watch's events then carry plain dicts)."""
        if (self.group, self.plural) not in BUILTIN_LISTS:
            custom = client.CustomObjectsApi(api)

            def list_custom(**kwargs: Any) -> Any:
                return custom.list_cluster_custom_object(self.group, self.version, self.plural, **kwargs)

            return list_custom
        api_class, name = BUILTIN_LISTS[(self.group, self.plural)]
        method = getattr(api_class(api), name)

        def list_core(**kwargs: Any) -> Any:
            kwargs.setdefault("_preload_content", False)
            return method(**kwargs)

        return list_core

    def list(self, api: client.ApiClient) -> tuple[list[Body], str]:
        """Every object of the resource, and the list's resourceVersion (where a watch resumes)."""
        answer = self.call(api)()
        data = answer if isinstance(answer, dict) else json.loads(answer.data)
        return data["items"], data["metadata"]["resourceVersion"]


# The built-in resources a loop may watch: the client's API class and its cluster-wide list call.
BUILTIN_LISTS: dict[tuple[str, str], tuple[Any, str]] = {
    ("", "secrets"): (client.CoreV1Api, "list_secret_for_all_namespaces"),
    ("", "services"): (client.CoreV1Api, "list_service_for_all_namespaces"),
    ("", "namespaces"): (client.CoreV1Api, "list_namespace"),
    ("apps", "deployments"): (client.AppsV1Api, "list_deployment_for_all_namespaces"),
}


class ControllerLoop:
    """Watches that mark keys dirty and one worker that reconciles them (see the module's docstring)."""

    WATCH_TIMEOUT = 5  # seconds a watch stream stays open: the longest a stop waits for a watch thread

    def __init__(
        self,
        name: str,
        api: client.ApiClient,
        watched: list[Watched],
        key_of: Callable[[Body], Hashable | None],
        reconcile: Callable[[Hashable], None],
        *,
        resync: float = 5.0,
        retry_delay: float = 0.5,
    ) -> None:
        self.name = name
        self._api = api
        self._watched = watched
        self._key_of = key_of
        self._reconcile = reconcile
        self._resync = resync
        self._retry_delay = retry_delay
        self._dirty: dict[Hashable, float] = {}  # key -> when it is due
        self._known: set[Hashable] = set()
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []  # the last reconcile failures, for tests and logs

    # ------------------------------------------------------------------ life

    def start(self) -> None:
        self._stopping.clear()
        for watched in self._watched:
            thread = threading.Thread(
                target=self._watch, args=(watched,), name=f"{self.name}-watch-{watched.plural}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        worker = threading.Thread(target=self._work, name=f"{self.name}-worker", daemon=True)
        worker.start()
        self._threads.append(worker)

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the worker (waits for the reconcile under way) and the watches (daemon threads: they end
        within WATCH_TIMEOUT, or as soon as the server goes away)."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        for thread in self._threads:
            if thread.name.endswith("-worker"):
                thread.join(timeout)
        self._threads.clear()

    def enqueue(self, key: Hashable, delay: float = 0.0) -> None:
        due = time.monotonic() + delay
        with self._cond:
            self._known.add(key)
            if key not in self._dirty or self._dirty[key] > due:
                self._dirty[key] = due
            self._cond.notify_all()

    def forget(self, key: Hashable) -> None:
        """Stop resyncing a key (its object is gone for good)."""
        with self._cond:
            self._known.discard(key)

    # ------------------------------------------------------------------ threads

    def _watch(self, watched: Watched) -> None:
        call = watched.call(self._api)
        version: str | None = None  # None: list (again) first
        while not self._stopping.is_set():
            try:
                if version is None:
                    items, version = watched.list(self._api)
                    for item in items:
                        self._mark(item)
                stream = watch.Watch()
                for event in stream.stream(
                    call, resource_version=version, timeout_seconds=self.WATCH_TIMEOUT
                ):
                    if self._stopping.is_set():
                        stream.stop()
                        break
                    if event["type"] == "ERROR":
                        version = None  # e.g. 410 Gone: list again
                        break
                    obj = event["raw_object"]
                    version = obj.get("metadata", {}).get("resourceVersion") or version
                    self._mark(obj)
            except Exception as error:  # the server went away, or refused: list again shortly
                if self._stopping.is_set():
                    return
                log.debug("%s: watch of %s failed: %s", self.name, watched.plural, error)
                version = None
                self._stopping.wait(0.5)

    def _mark(self, obj: Body) -> None:
        key = self._key_of(obj)
        if key is not None:
            self.enqueue(key)

    def _work(self) -> None:
        next_resync = time.monotonic() + self._resync
        while not self._stopping.is_set():
            with self._cond:
                now = time.monotonic()
                if now >= next_resync:
                    for key in self._known:
                        self._dirty.setdefault(key, now)
                    next_resync = now + self._resync
                due = [key for key, when in self._dirty.items() if when <= now]
                if not due:
                    wait = min([next_resync, *self._dirty.values()]) - now
                    self._cond.wait(max(0.01, wait))
                    continue
                key = min(due, key=lambda k: self._dirty[k])
                del self._dirty[key]
            try:
                self._reconcile(key)
            except Exception as error:
                if self._stopping.is_set():
                    return
                message = f"{key}: {type(error).__name__}: {error}"
                log.info("%s: reconcile failed, retrying: %s", self.name, message)
                self.errors = [*self.errors[-19:], message]
                with contextlib.suppress(Exception):
                    self.enqueue(key, self._retry_delay)
