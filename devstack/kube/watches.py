"""Watches: a stream of ADDED/MODIFIED/DELETED events, as the real API server sends them.

Every event carries the object's namespace; ``timeoutSeconds`` ends the stream; a
``resourceVersion`` resumes after that version (410 Expired once it left the event log); an
object that stops matching the watch's selector is reported DELETED, one that starts matching ADDED.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import aiohttp.web
import kmock

from devstack.kube.errors import ApiError
from devstack.kube.objects import Body
from devstack.kube.request import int_param, resource_version_param
from devstack.kube.selectors import Selector, selector_of
from devstack.kube.store import Event, ObjectStore


@dataclasses.dataclass(eq=False)
class Watcher:
    """One open watch stream: what it watches, and the queue that its events arrive on."""

    resource: kmock.resource
    namespace: str | None
    selector: Selector
    since: int
    queue: asyncio.Queue[Event | None] = dataclasses.field(default_factory=asyncio.Queue)

    def translate(self, event: Event) -> Body | None:
        """The event as this watch reports it, or None when the watch does not see it.

        As a real API server does for a filtered watch: an object that starts to match is ADDED,
        one that stops matching is DELETED.
        """
        resource, namespace, _ = event.key
        if event.revision <= self.since or resource != self.resource:
            return None
        if self.namespace is not None and namespace != self.namespace:
            return None
        matched_before = event.before is not None and self.selector.matches(event.before)
        matches_now = event.type != "DELETED" and self.selector.matches(event.after)
        if matched_before and matches_now:
            kind = "MODIFIED"
        elif matches_now:
            kind = "ADDED"
        elif matched_before:
            kind = "DELETED"
        else:
            return None
        return {"type": kind, "object": event.after}


async def serve_watch(
    store: ObjectStore, request: kmock.Request, resource: kmock.resource
) -> aiohttp.web.StreamResponse:
    """Answer a watch request: the starting events, then every write it sees until it ends."""
    # Private: kmock.Request keeps the aiohttp request only in this attribute, and a stream must be
    # prepared on it; kmock's own streamed responses are prepared on it the same way.
    raw_request = request._raw_request
    assert raw_request is not None  # always set for requests that came over HTTP
    timeout = int_param(request, "timeoutSeconds")
    since = resource_version_param(request)
    selector = selector_of(request, resource)
    watcher = Watcher(resource, request.namespace, selector, store.revision if since is None else since)

    # Take the starting events and subscribe in one step, so that no write falls in between.
    expired = since is not None and since < store.compacted_revision
    starting: list[Body]
    if since is None:
        selected = store.select(resource, request.namespace, selector)
        starting = [{"type": "ADDED", "object": obj} for _, obj in selected]
    elif expired:
        too_old = f"too old resource version: {since} ({store.compacted_revision})"
        starting = [{"type": "ERROR", "object": ApiError.expired(too_old).status()}]
    else:
        starting = [event for event in map(watcher.translate, store.events()) if event is not None]
    store.subscribe(watcher.queue)

    response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    try:
        await response.prepare(raw_request)
        for event in starting:
            await response.write(_encode_event(event))
        if not expired:
            await _stream_events(watcher, response, timeout)
        await response.write_eof()
    except ConnectionError:
        pass  # the client went away
    finally:
        store.unsubscribe(watcher.queue)
    return response


async def _stream_events(watcher: Watcher, response: aiohttp.web.StreamResponse, timeout: int) -> None:
    """Write the watcher's events until the emulator closes it or ``timeout`` seconds (0: none) pass."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout or None):
            while (item := await watcher.queue.get()) is not None:
                if (event := watcher.translate(item)) is not None:
                    await response.write(_encode_event(event))


def _encode_event(event: Mapping[str, Any]) -> bytes:
    return json.dumps(event).encode() + b"\n"
