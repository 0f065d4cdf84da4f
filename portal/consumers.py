"""``/ws/tasks/<task_id>/``: a task's status and log lines, streamed until it ends.

The user comes from the signed session (channels' session middleware and ours, no ORM); the task
is read through ``services.tasks.get_task`` with the user's principal, so a task of a VDC they may
not see is reported as missing, exactly like an unknown id. Proxmox is polled (the services are
synchronous: in a worker thread), a little less often the longer the task runs; each message
carries only the log lines not sent yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from orchestrator.auth import Principal
from orchestrator.errors import FlexPlaneError, NotFound, PermissionDenied, Unavailable, UpstreamFailure
from orchestrator.models.tasks import Task
from orchestrator.services import tasks
from orchestrator.services.context import Context
from portal.tasks import update

logger = logging.getLogger(__name__)

POLL_FIRST = 0.25
POLL_MAX = 2.0
# Close codes (4000-4999 are the application's): the task is not there, or the user may not see it.
NOT_FOUND = 4404
FORBIDDEN = 4403


def read_task(principal: Principal, task_id: str) -> Task:
    """The task with its log, read as ``principal`` (a fresh context: nothing is kept between polls)."""
    return tasks.get_task(Context(principal=principal), task_id)


class TaskConsumer(AsyncJsonWebsocketConsumer):
    """Follows one task for one browser; the connection ends when the task does."""

    follower: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()  # refused before the handshake completes: the browser sees a 403
            return
        self.principal: Principal = user.principal
        self.task_id: str = self.scope["url_route"]["kwargs"]["task_id"]
        await self.accept()
        self.follower = asyncio.create_task(self.follow())

    async def disconnect(self, code: int) -> None:
        if self.follower is not None:
            self.follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.follower

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """The browser has nothing to say on this socket."""

    async def follow(self) -> None:
        sent = 0
        delay = POLL_FIRST
        while True:
            try:
                task = await asyncio.to_thread(read_task, self.principal, self.task_id)
            except (NotFound, PermissionDenied) as exc:
                await self._end(exc, NOT_FOUND if isinstance(exc, NotFound) else FORBIDDEN)
                return
            except (Unavailable, UpstreamFailure) as exc:
                # Proxmox or a zone did not answer this time: say so, and keep trying.
                await self.send_json({"type": "unavailable", "message": exc.message, "where": exc.where})
            except FlexPlaneError as exc:
                await self._end(exc, 4400)
                return
            else:
                message = update(task, sent)
                sent += len(message["log"])
                await self.send_json(message)
                if not task.running:
                    await self.close()
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, POLL_MAX)

    async def _end(self, exc: FlexPlaneError, code: int) -> None:
        await self.send_json({"type": "error", "code": exc.code, "message": exc.message})
        await self.close(code=code)
