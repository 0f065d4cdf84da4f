"""``/ws/console/<ticket>/``: a VM's console, relayed between the browser's noVNC and the VM's node.

The path: the browser's websocket (the session and Origin checks of every portal websocket) -> this
consumer, which only relays bytes -> ``services.console`` (the checks, the slots, and the stream:
``Console.Open`` on the agent of the VM's node (gRPC, mutual TLS, the orchestrator's
certificate) -> Proxmox's vncproxy/vncwebsocket on that node). The browser speaks RFB with the agent's
greeting (security type None); the Proxmox ticket stays on the node.

Before anything opens, the ticket of the console page must be genuine, fresh and the session user's, and
the user must still be allowed (``services.console``: checked again, live), with a free slot of the VM
and of the user. A refusal before the handshake answers 403; once accepted, the socket is closed with a
code and a reason the page shows:

- 4403 the ticket opened a console already (a ticket opens one: the page reloads for another),
  4404 the VM is gone (or not the user's), 4409 it is not running, 4429 too many consoles open,
  4502 the node's agent or Proxmox would not open it, 4503 a neighbour did not answer;
- 4408 no input from the user (keys, pointer, clipboard: ``portal.console.rfb``; noVNC's own requests for
  screen updates do not count) for ``FLEXPLANE_CONSOLE_IDLE_TIMEOUT`` seconds;
- 4401 the session's life ended (the page reloads, which renews it, and opens a new console).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from orchestrator import metrics
from orchestrator.errors import (
    Conflict,
    FlexPlaneError,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    UpstreamFailure,
)
from orchestrator.services import console
from orchestrator.services.context import Context
from portal.auth import EXPIRATION_KEY
from portal.console.rfb import InputWatcher

logger = logging.getLogger(__name__)

SOCKET_PREFIX = "/ws/console/"
USED, GONE, NOT_RUNNING, TOO_MANY, REFUSED, UNAVAILABLE = 4403, 4404, 4409, 4429, 4502, 4503
IDLE, SESSION_ENDED = 4408, 4401
# The largest websocket message sent to the browser.
MAX_MESSAGE = 256 * 1024
# How long the page waits for the console to open before it gives up (seconds): past the checks' own
# deadlines and the agent's greeting (OPEN_TIMEOUT), by which time this consumer has closed with a reason.
PATIENCE = console.OPEN_TIMEOUT + 15.0


def socket_path(ticket: str) -> str:
    return f"{SOCKET_PREFIX}{ticket}/"


class ConsoleConsumer(AsyncWebsocketConsumer):
    """One console for one browser; it ends when either side does, when idle, or with the session."""

    opened: console.Console | None = None  # the console, once open
    tasks: tuple[asyncio.Task[None], ...] = ()
    counted = False
    ident = ""  # the VM, once the ticket named it

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            metrics.CONSOLES_REFUSED.labels("unauthenticated").inc()
            await self.close()  # before the handshake: the browser sees a 403
            return
        principal = user.principal
        try:
            ticket = console.redeem_ticket(principal, self.scope["url_route"]["kwargs"]["ticket"])
        except PermissionDenied as exc:
            metrics.CONSOLES_REFUSED.labels("ticket").inc()
            logger.info("console refused for %s: %s", principal.subject, exc.message)
            await self.close()
            return
        await self.accept("binary" if "binary" in self.scope.get("subprotocols", ()) else None)
        self.ident = ident = ticket.vm
        try:
            self.opened = opened = await console.connect(Context(principal=principal), ticket)
        except FlexPlaneError as exc:
            await self._refuse(exc)
            return
        metrics.CONSOLES_OPEN.inc()
        self.counted = True
        self.watcher = InputWatcher()
        self.last_input = time.monotonic()
        self.tasks = (asyncio.create_task(self._relay()), asyncio.create_task(self._watch()))
        logger.info(
            "console of %s opened for %s in %.2f s (checks and slots %.2f s, the node's agent %.2f s)",
            ident,
            principal.subject,
            opened.checked_in + opened.opened_in,
            opened.checked_in,
            opened.opened_in,
        )

    async def _refuse(self, exc: FlexPlaneError) -> None:
        if isinstance(exc, console.TicketUsed):
            await self._end(USED, exc.message, "ticket")
        elif isinstance(exc, QuotaExceeded):
            await self._end(TOO_MANY, exc.message, "limit")
        elif isinstance(exc, NotFound | PermissionDenied):
            await self._end(GONE, exc.message, "not_found")
        elif isinstance(exc, Conflict):
            await self._end(NOT_RUNNING, exc.message, "not_running")
        elif isinstance(exc, UpstreamFailure):
            await self._end(REFUSED, exc.message, "agent")
        else:
            await self._end(UNAVAILABLE, exc.message, "unavailable")

    async def _end(self, code: int, reason: str, refused: str | None = None) -> None:
        """Say why in a text frame (RFB itself is binary; a browser may not show a close reason), then
        close."""
        if refused is not None:
            metrics.CONSOLES_REFUSED.labels(refused).inc()
        logger.info("console of %s closed with %d: %s", self.ident, code, reason)
        with contextlib.suppress(Exception):  # the browser may be gone already
            await self.send(text_data=json.dumps({"type": "closed", "code": code, "message": reason}))
        await self.close(code=code)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.opened is None or not bytes_data:
            return  # RFB is binary: text has no place on this socket
        if self.watcher.feed(bytes_data):
            self.last_input = time.monotonic()
        metrics.CONSOLE_BYTES.labels("to_vm").inc(len(bytes_data))
        try:
            await self.opened.send(bytes_data)
        except UpstreamFailure as exc:
            await self._end(REFUSED, exc.message)

    async def _relay(self) -> None:
        """The VM's bytes to the browser, until the console ends."""
        assert self.opened is not None
        try:
            while (chunk := await self.opened.receive()) is not None:
                metrics.CONSOLE_BYTES.labels("to_browser").inc(len(chunk))
                # RFB is a byte stream: a large update goes as several messages of at most
                # MAX_MESSAGE, not as one frame of several MiB.
                for start in range(0, len(chunk), MAX_MESSAGE):
                    await self.send(bytes_data=chunk[start : start + MAX_MESSAGE])
        except UpstreamFailure as exc:
            await self._end(REFUSED, exc.message)
            return
        except Exception:
            logger.exception("console relay failed")
            await self._end(REFUSED, "the console ended: the relay failed")
            return
        await self.close(code=1000)

    def _session_end(self) -> float | None:
        """When the session's life ends, in time.monotonic()'s terms (None: the session says not)."""
        session = self.scope.get("session")
        value = session.get(EXPIRATION_KEY) if session is not None else None
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        return time.monotonic() + (float(value) - time.time())

    async def _watch(self) -> None:
        """Close the console when its user has given no input too long, or when the session ends."""
        idle = settings.FLEXPLANE_CONSOLE_IDLE_TIMEOUT
        ends = self._session_end()
        while True:
            now = time.monotonic()
            if ends is not None and now >= ends:
                await self._end(SESSION_ENDED, "your session ended: reload the page to sign in again")
                return
            if now - self.last_input >= idle:
                await self._end(IDLE, f"closed after {idle:g} s without input")
                return
            wake = self.last_input + idle
            if ends is not None:
                wake = min(wake, ends)
            await asyncio.sleep(max(wake - now, 0.05))

    async def disconnect(self, code: int) -> None:
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.opened is not None:
            opened, self.opened = self.opened, None
            await opened.close()
        if self.counted:
            self.counted = False
            metrics.CONSOLES_OPEN.dec()
