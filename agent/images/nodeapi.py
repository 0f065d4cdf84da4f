"""The node's Proxmox API for the agent's own work (not the proxy's allowlist): calls, and
Proxmox tasks followed to their end, a failed one's log travelling with the error."""

from __future__ import annotations

import asyncio
import collections
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from agent.proxmox import ProxmoxAnswer, ProxmoxClient

log = logging.getLogger(__name__)

# A Proxmox task (an upload, an import of many GiB) that has not ended after this long has failed.
TASK_TIMEOUT = 4 * 3600.0
# Task status polling: the first delay, growing to the longest.
TASK_POLL_FIRST = 0.1
TASK_POLL_LONGEST = 2.0
# How many of a failed task's last log lines travel with the error.
TASK_LOG_TAIL = 8
TASK_LOG_PAGE = 500
TASK_LOG_PAGES = 20
_UPID_NODE = re.compile(r"UPID:([^:]+):")


class TemplateImportError(Exception):
    """Proxmox refused or failed a step of the import; the message carries Proxmox's own text."""


def data_of(answer: ProxmoxAnswer, what: str) -> Any:
    """The answer's decoded data; TemplateImportError naming what was being done when it is an error."""
    if answer.status >= 400:
        detail = answer.message.rstrip(".")
        if answer.errors:
            detail += " (" + "; ".join(f"{k}: {v}" for k, v in sorted(answer.errors.items())) + ")"
        raise TemplateImportError(f"{what}: Proxmox answered {answer.status}: {detail}")
    return answer.data()


class NodeApi:
    """The node's Proxmox API for the agent's own work (not the proxy's allowlist)."""

    def __init__(self, proxmox: ProxmoxClient, node: str) -> None:
        self.proxmox = proxmox
        self.node = node

    async def call(
        self, method: str, path: str, params: Mapping[str, str] | None = None, *, what: str
    ) -> Any:
        """Proxmox's decoded data; TemplateImportError naming what was being done when it answers an error."""
        return data_of(await self.proxmox.request(method, path, params or {}), what)

    async def wait(self, upid: Any, *, what: str, timeout: float = TASK_TIMEOUT) -> None:
        """Poll the task until it stops; unless it ends OK, TemplateImportError with its status and log."""
        if not isinstance(upid, str) or not (found := _UPID_NODE.match(upid)):
            raise TemplateImportError(f"{what}: Proxmox answered {upid!r} instead of a task id")
        path = f"/nodes/{found.group(1)}/tasks/{upid}"
        deadline = time.monotonic() + timeout
        delay = TASK_POLL_FIRST
        while True:
            status = await self.call("GET", path + "/status", what=f"{what} (following its task)")
            if isinstance(status, dict) and status.get("status") == "stopped":
                break
            if time.monotonic() > deadline:
                raise TemplateImportError(f"{what}: its task {upid} did not end within {timeout:g} s")
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, TASK_POLL_LONGEST)
        exit_status = str(status.get("exitstatus") or "unknown")
        if exit_status == "OK" or exit_status.startswith("WARNINGS"):
            if exit_status != "OK":
                log.warning("%s: task %s ended with %s", what, upid, exit_status)
            return
        tail = await self._log_tail(path + "/log", exit_status)
        raise TemplateImportError(f"{what} failed: {exit_status}" + (f" (task log: {tail})" if tail else ""))

    async def _log_tail(self, path: str, exit_status: str) -> str:
        """The task's last log lines, joined, without the final TASK ERROR line (it is the exit status)."""
        lines: collections.deque[str] = collections.deque(maxlen=TASK_LOG_TAIL + 1)
        try:
            for page in range(TASK_LOG_PAGES):
                params = {"start": str(page * TASK_LOG_PAGE), "limit": str(TASK_LOG_PAGE)}
                entries = await self.call("GET", path, params, what="reading the task log")
                if not isinstance(entries, list):
                    break
                lines.extend(str(entry.get("t", "")) for entry in entries if isinstance(entry, dict))
                if len(entries) < TASK_LOG_PAGE:
                    break
        except (TemplateImportError, OSError) as exc:
            log.warning("cannot read the log of a failed task: %s", exc)
        kept = [line for line in lines if line and line not in (f"TASK ERROR: {exit_status}", "TASK OK")]
        return " | ".join(kept[-TASK_LOG_TAIL:])
