"""One import per (image, storage) at a time: the job, and the callers following its progress."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from agent.images.download import PROGRESS_INTERVAL
from agent.images.request import EnsureRequest
from agentclient.templates import TemplatePhase, TemplateProgress


class Interrupted(Exception):
    """The import was cancelled: the agent is shutting down."""


class Follower:
    """One caller following a job: the reports it has not read yet, a slow reader getting the latest."""

    def __init__(self, latest: TemplateProgress | None) -> None:
        self.queue: collections.deque[TemplateProgress] = collections.deque([latest] if latest else [])
        self.wake = asyncio.Event()

    def push(self, progress: TemplateProgress) -> None:
        if self.queue and self.queue[-1].phase is progress.phase and progress.phase is not TemplatePhase.DONE:
            self.queue[-1] = progress
        else:
            self.queue.append(progress)
        self.wake.set()


class Job:
    """One import (or reuse) of an (image, storage), and the callers following it."""

    def __init__(
        self, request: EnsureRequest, work: Callable[[Job], Coroutine[Any, Any, TemplateProgress]]
    ) -> None:
        self.request = request
        self.latest: TemplateProgress | None = None
        self.finished = False
        self._followers: set[Follower] = set()
        self.task = asyncio.create_task(work(self), name=f"ensure-template-{request.image}-{request.storage}")

    def publish(self, progress: TemplateProgress) -> None:
        self.latest = progress
        for follower in self._followers:
            follower.push(progress)

    def finish(self) -> None:
        self.finished = True
        for follower in self._followers:
            follower.wake.set()

    def failure(self) -> BaseException | None:
        """Why the finished job failed, or None if it succeeded."""
        if self.task.cancelled():
            return Interrupted(
                f"the import of image {self.request.image} was interrupted: the agent is stopping"
            )
        return self.task.exception()

    async def follow(self) -> AsyncIterator[TemplateProgress]:
        """Every report from now on (starting with the latest), until the job ends."""
        follower = Follower(self.latest)
        self._followers.add(follower)
        try:
            while True:
                while follower.queue:
                    yield follower.queue.popleft()
                if self.finished:
                    return
                follower.wake.clear()
                await follower.wake.wait()
        finally:
            self._followers.discard(follower)


class Throttle:
    """True at most once per PROGRESS_INTERVAL."""

    def __init__(self) -> None:
        self._last = 0.0

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._last < PROGRESS_INTERVAL:
            return False
        self._last = now
        return True
