"""Proxmox tasks: the ids handed out for them, reading them, and following them to their end.

A task id names the zone and the task's UPID (which names its node), and the VDC whose VM the task
acts on, signed with the deployment's secret key: a caller can read a task only if they may see that
VDC, and nobody can forge an id for another VDC's task. The signature holds no state: any replica
checks it, and a task of a VM that was since deleted stays readable by its VDC.

``ZoneApi`` is how services speak to one zone's Proxmox: the source's ``ProxmoxZone`` (guests, config,
power, disks, tasks in domain terms, Proxmox's failures as domain errors), found from the catalog, plus
following tasks to their end and cloud-init snippets written on a node through its own agent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django.core import signing

from agentclient import (
    AgentDeadlineExceeded,
    AgentError,
    AgentTarget,
    AgentUnavailable,
    ProxmoxUnreachable,
    host_identity,
)
from orchestrator.errors import Conflict, NotFound, Unavailable, UpstreamFailure
from orchestrator.models.tasks import Task, Upid
from orchestrator.services import access, catalog
from orchestrator.services.context import Context
from orchestrator.sources.proxmox import ProxmoxZone, is_lock_message, proxmox

T = TypeVar("T")

_SALT = "flexplane.orchestrator.task"
# The most log lines a task answer carries (Proxmox sends 50 unless asked for more).
LOG_LIMIT = 1000
# Writing or removing a snippet is one small file on the node.
SNIPPET_TIMEOUT = 15.0
_POLL_FIRST = 0.05
_POLL_MAX = 1.0


# --------------------------------------------------------------------------- errors


class TaskFailed(UpstreamFailure):
    """A Proxmox task ended in ``TASK ERROR``; ``task`` is it, to be read with its log."""

    def __init__(self, zone: str, message: str, task: Task) -> None:
        super().__init__(zone, message)
        self.task = task


class TaskLocked(Conflict):
    """A Proxmox task could not take the VM's lock: another operation holds it."""

    def __init__(self, message: str, task: Task) -> None:
        super().__init__(message)
        self.task = task


def task_failure(zone: str, task: Task, doing: str) -> TaskFailed | TaskLocked:
    """The error of a task that ended in ``TASK ERROR``, carrying Proxmox's message and the task."""
    message = task.exitstatus or "the task failed without a message"
    if is_lock_message(message):
        return TaskLocked(f"{doing} failed, the VM is locked by another operation: {message}", task)
    return TaskFailed(zone, f"{doing} failed in Proxmox (task {task.kind} on {task.node}): {message}", task)


def failed_task(exc: Exception) -> Task | None:
    """The task whose ``TASK ERROR`` an error reports, if it reports one."""
    return exc.task if isinstance(exc, TaskFailed | TaskLocked) else None


# --------------------------------------------------------------------------- ids


def encode_task_id(zone: str, upid: str, vdc: str) -> str:
    """The id of a task of ``zone`` acting on a VM of ``vdc`` (signed: it cannot be forged)."""
    return signing.dumps([zone, upid, vdc], salt=_SALT, compress=False)


def decode_task_id(value: str) -> tuple[str, Upid, str]:
    """``(zone, upid, vdc)`` of an id this API handed out; ``NotFound`` for anything else."""
    try:
        zone, raw, vdc = signing.loads(value, salt=_SALT)
    except (signing.BadSignature, ValueError, TypeError):
        raise NotFound("task", value) from None
    upid = Upid.parse(str(raw)) if isinstance(raw, str) else None
    if upid is None or not isinstance(zone, str) or not isinstance(vdc, str):
        raise NotFound("task", value)
    return zone, upid, vdc


# --------------------------------------------------------------------------- one zone


class ZoneApi(ProxmoxZone):
    """One zone's Proxmox as the services use it: the source's zone client, plus tasks and snippets."""

    def __init__(self, ctx: Context, zone: str) -> None:
        targets = {z.zone: z for z in catalog.zone_targets(ctx)}
        if zone not in targets:
            raise NotFound("zone", zone)
        super().__init__(proxmox(), targets[zone])

    # ----------------------------------------------------------- snippets

    def _own_agent(self, node: str) -> AgentTarget:
        """The agent of ``node`` itself: a snippet lives on the node's own storage, so no failover."""
        identity = host_identity(self.zone, node)
        for target in self.targets.targets:
            if target.identity == identity:
                return target
        raise Unavailable(f"{self.zone}/{node}", f"host {node} of zone {self.zone} is not in the catalog")

    def _snippet_call(self, node: str, doing: str, call: Callable[[AgentTarget], T]) -> T:
        where = f"{self.zone}/{node}"
        target = self._own_agent(node)
        try:
            return call(target)
        except (AgentUnavailable, ProxmoxUnreachable, AgentDeadlineExceeded) as exc:
            raise Unavailable(where, f"{doing} on host {node}: {exc}") from exc
        except AgentError as exc:
            raise UpstreamFailure(where, f"{doing} on host {node}: {exc}") from exc

    def write_snippet(self, node: str, name: str, content: bytes) -> str:
        """Write the cloud-init snippet ``name`` on ``node`` (through its own agent); its volume id."""
        return self._snippet_call(
            node,
            f"writing cloud-init snippet {name}",
            lambda target: proxmox().pool.write_snippet(target, name, content, timeout=SNIPPET_TIMEOUT),
        )

    def delete_snippet(self, node: str, name: str) -> None:
        """Remove the cloud-init snippet ``name`` from ``node``; a missing one is no error."""
        self._snippet_call(
            node,
            f"removing cloud-init snippet {name}",
            lambda target: proxmox().pool.delete_snippet(target, name, timeout=SNIPPET_TIMEOUT),
        )

    # -------------------------------------------------------------- tasks

    def status_of(self, upid: Upid) -> dict[str, Any]:
        try:
            data = self.task_status(upid.node, upid.raw)
        except UpstreamFailure as exc:
            if "unable to parse worker upid" in exc.message or "no such task" in exc.message:
                raise NotFound("task", upid.raw) from exc
            raise
        return data if isinstance(data, dict) else {}

    def log_of(self, upid: Upid) -> list[str]:
        data = self.task_log(upid.node, upid.raw, LOG_LIMIT)
        return [str(line.get("t", "")) for line in data or [] if isinstance(line, dict)]

    def task_ended_at(self, upid: Upid) -> datetime | None:
        """When a finished task ended: only Proxmox's task list says (its status does not)."""
        params = {"since": str(int(upid.started_at.timestamp())), "limit": "500", "source": "all"}
        if upid.vmid is not None:
            params["vmid"] = str(upid.vmid)
        try:
            listing = self.tasks(upid.node, params)
        except (UpstreamFailure, Unavailable):
            return None  # the end time is a detail: the task itself was read
        for entry in listing or []:
            if isinstance(entry, dict) and entry.get("upid") == upid.raw and entry.get("endtime"):
                return datetime.fromtimestamp(int(entry["endtime"]), tz=upid.started_at.tzinfo)
        return None

    def task(self, task_id: str, upid: Upid, *, log: bool = False) -> Task:
        status = self.status_of(upid)
        task = Task.from_status(task_id, self.zone, upid, status, self.log_of(upid) if log else None)
        if task.status == "stopped" and task.ended_at is None and log:
            task.ended_at = self.task_ended_at(upid)
        return task

    def wait(self, task_id: str, upid: Upid, timeout: float) -> Task:
        """The task once it ended, or as it is when ``timeout`` seconds have passed."""
        deadline = time.monotonic() + timeout
        delay = _POLL_FIRST
        while True:
            task = Task.from_status(task_id, self.zone, upid, self.status_of(upid))
            if not task.running or time.monotonic() + delay > deadline:
                return task
            time.sleep(delay)
            delay = min(delay * 2, _POLL_MAX)

    def started(self, answer: Any, vdc: str, doing: str) -> tuple[str, Upid]:
        """The id and UPID of the task a write answered with."""
        upid = Upid.parse(answer) if isinstance(answer, str) else None
        if upid is None:
            raise UpstreamFailure(self.zone, f"{doing}: Proxmox answered {answer!r} instead of a task id")
        return encode_task_id(self.zone, upid.raw, vdc), upid

    def run(self, answer: Any, vdc: str, doing: str, timeout: float) -> Task:
        """Follow the task a write started to its end (or ``timeout``); its ``TASK ERROR`` is raised."""
        task_id, upid = self.started(answer, vdc, doing)
        task = self.wait(task_id, upid, timeout)
        if task.failed:
            raise task_failure(self.zone, task, doing)
        return task


# --------------------------------------------------------------------------- the query


def get_task(ctx: Context, task_id: str) -> Task:
    """A task with its log; another VDC's task is reported as missing, exactly like an unknown id."""
    zone, upid, vdc = decode_task_id(task_id)
    vdcs = access.visible_vdcs(ctx)
    if vdcs is not None and vdc not in vdcs:
        raise NotFound("task", task_id)
    try:
        api = ZoneApi(ctx, zone)
    except NotFound:
        raise NotFound("task", task_id) from None
    try:
        return api.task(task_id, upid, log=True)
    except NotFound:
        raise NotFound("task", task_id) from None


def task_log(ctx: Context, task: Task) -> list[str]:
    """The log lines of a task already authorized (read once per request)."""
    if task.log is not None:
        return list(task.log)
    upid = Upid.parse(task.upid)
    if upid is None:
        return []

    def read() -> list[str]:
        return ZoneApi(ctx, task.zone).log_of(upid)

    lines: list[str] = ctx.memoize(("task-log", task.id, task.status), read)
    task.with_log(lines)
    return lines
