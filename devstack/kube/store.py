"""The stored objects: kmock's object store, with resourceVersions, conflicts and an event log.

One cluster-wide ``resourceVersion`` counter, bumped by every write. Objects live in kmock's
store (``emulator.objects[resource, namespace, name]``, with their history), so tests can read
them. Every write is published to the open watches and kept in an event log, so that a watch can
resume after a resourceVersion until the log has moved past it.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import kmock

from devstack.kube.errors import STALE_WRITE, ApiError
from devstack.kube.objects import Body, ObjectKey, sort_key
from devstack.kube.selectors import Selector

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclasses.dataclass(frozen=True)
class Event:
    """One write, as the event log keeps it: the object before and after (the last state on delete)."""

    revision: int
    key: ObjectKey
    type: EventType
    before: Body | None
    after: Body


class ObjectStore:
    """The objects of one emulator, and the revisions and events of their writes.

    Its methods never await: called from the server's event loop, every read-then-write of a
    handler is atomic.
    """

    def __init__(self, objects: kmock.ObjectsArray, *, event_log_limit: int, history_limit: int) -> None:
        self.objects = objects
        self.history_limit = history_limit
        self._revision = 0
        self._events: collections.deque[Event] = collections.deque(maxlen=event_log_limit)
        self._compacted_revision = 0
        self._subscribers: set[asyncio.Queue[Event | None]] = set()

    @property
    def revision(self) -> int:
        """The cluster's current resourceVersion: the number of the latest write."""
        return self._revision

    @property
    def compacted_revision(self) -> int:
        """The latest revision that has left the event log: a watch cannot resume at or before it."""
        return self._compacted_revision

    def events(self) -> Iterator[Event]:
        """The writes still in the event log, oldest first."""
        return iter(self._events)

    # ------------------------------------------------------------------------------- reads

    def get(self, key: ObjectKey) -> Body | None:
        if key not in self.objects:
            return None
        obj = self.objects[key]
        return None if obj.deleted else obj.raw

    def existing(self, key: ObjectKey) -> Body:
        """The stored object; 404 if there is none."""
        current = self.get(key)
        if current is None:
            raise ApiError.not_found(key[0], key[2])
        return current

    def select(
        self, resource: kmock.resource, namespace: str | None, selector: Selector
    ) -> list[tuple[ObjectKey, Body]]:
        """The objects of ``resource`` in ``namespace`` (None: all) that match, in the server's order."""
        found = [
            (key, obj.raw)
            for key, obj in self.objects.items()
            if key[0] == resource
            and (namespace is None or key[1] == namespace)
            and not obj.deleted
            and selector.matches(obj.raw)
        ]
        return sorted(found, key=lambda item: sort_key(item[1]))

    def in_namespace(self, namespace: str) -> list[tuple[ObjectKey, Body]]:
        """Every object in ``namespace``, of any resource."""
        return [
            (key, obj.raw) for key, obj in self.objects.items() if key[1] == namespace and not obj.deleted
        ]

    # ------------------------------------------------------------------------------ writes

    def insert(self, key: ObjectKey, obj: Body, *, dry_run: bool) -> Body:
        if dry_run:
            return obj
        obj["metadata"]["resourceVersion"] = self._next_revision()
        self._record(key, obj)
        self._publish(key, "ADDED", None, obj)
        return obj

    def update(self, key: ObjectKey, current: Body, obj: Body, *, dry_run: bool) -> Body:
        if dry_run:
            return obj
        obj["metadata"]["resourceVersion"] = self._next_revision()
        self._record(key, obj)
        self._publish(key, "MODIFIED", current, obj)
        return obj

    def remove(self, key: ObjectKey, current: Body, last: Body, *, dry_run: bool) -> Body:
        """Delete the object; ``last`` is the state it is reported in (with a new resourceVersion)."""
        final = copy.deepcopy(last)
        if dry_run:
            return final
        final["metadata"]["resourceVersion"] = self._next_revision()
        self._record(key, None)
        self._publish(key, "DELETED", current, final)
        return final

    # ----------------------------------------------------------------------------- watches

    def subscribe(self, queue: asyncio.Queue[Event | None]) -> None:
        """Put every later write on ``queue``, until unsubscribed or the watches are closed (None)."""
        self._subscribers.add(queue)

    def unsubscribe(self, queue: asyncio.Queue[Event | None]) -> None:
        self._subscribers.discard(queue)

    def close_watches(self) -> None:
        """End every open watch stream (call on the server's event loop, e.g. before it stops)."""
        for queue in self._subscribers:
            queue.put_nowait(None)

    # ---------------------------------------------------------------------------- internal

    def _record(self, key: ObjectKey, version: Body | None) -> None:
        """Add a version (None: deleted) to the object's history in kmock's store, keeping the latest ones."""
        if key not in self.objects:
            self.objects[key] = [version]
            return
        history = self.objects[key].history
        history.append(version)
        del history[: max(0, len(history) - self.history_limit)]

    def _next_revision(self) -> str:
        self._revision += 1
        return str(self._revision)

    def _publish(self, key: ObjectKey, kind: EventType, before: Body | None, after: Body) -> None:
        event = Event(self._revision, key, kind, before, after)
        if len(self._events) == self._events.maxlen:
            self._compacted_revision = self._events[0].revision
        self._events.append(event)
        for queue in self._subscribers:
            queue.put_nowait(event)


# ---------------------------------------------------------------------------------- conflicts


def check_resource_version(key: ObjectKey, current: Body, version: Any) -> None:
    """409 Conflict unless the write names no resourceVersion or the stored one."""
    if version not in (None, "", current["metadata"]["resourceVersion"]):
        raise ApiError.conflict(key[0], key[2], STALE_WRITE)


def check_preconditions(key: ObjectKey, current: Body, preconditions: Mapping[str, Any]) -> None:
    """409 Conflict unless a delete's preconditions (uid, resourceVersion) match the stored object."""
    for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        expected = preconditions.get(field)
        if expected not in (None, current["metadata"][field]):
            why = f"Precondition failed: {label} in precondition: {expected}, "
            why += f"{label} in object meta: {current['metadata'][field]}"
            raise ApiError.conflict(key[0], key[2], why)
