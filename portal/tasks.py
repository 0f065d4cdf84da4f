"""A Proxmox task followed live: the task page, its htmx fragment, and what the websocket sends.

The websocket (:mod:`portal.consumers`) streams a task's status and new log lines until it ends;
without websockets, the fragment ``portal/tasks/_live.html`` polls this page through htmx.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render

from orchestrator.models.tasks import Task
from orchestrator.services import tasks
from orchestrator.services.context import Context
from portal.context import vdc_view
from portal.htmx import HtmxHttpRequest

RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
# The event the page hears when a followed task has ended (from the websocket or the last poll).
ENDED_EVENT = "flexplane:task-ended"


def state_of(task: Task) -> str:
    if task.running:
        return RUNNING
    return SUCCEEDED if task.succeeded else FAILED


def progress_percent(task: Task) -> int | None:
    return None if task.progress is None else round(task.progress * 100)


def update(task: Task, log_from: int) -> dict[str, Any]:
    """What the websocket sends: the task's state, and its log lines from ``log_from`` on."""
    lines = list(task.log or [])
    return {
        "type": "task",
        "status": state_of(task),
        "kind": task.kind,
        "title": task.title,
        "host": task.node,
        "progress": task.progress,
        # Proxmox's exit status once ended: OK, WARNINGS: n, or its error message.
        "result": task.exitstatus or None,
        "started_at": task.started_at.isoformat() if task.started_at else None,
        "ended_at": task.ended_at.isoformat() if task.ended_at else None,
        "log_from": log_from,
        "log": lines[log_from:],
    }


def live_context(task: Task) -> dict[str, Any]:
    """The context of ``portal/tasks/_live.html`` for a task already read."""
    return {"task_id": task.id, "task": task, "state": state_of(task), "percent": progress_percent(task)}


@vdc_view
def task_page(request: HtmxHttpRequest, ctx: Context, task_id: str) -> HttpResponse:
    """``/vdc/<vdc>/tasks/<task_id>/``: the task (another VDC's answers as one that does not exist).

    For htmx (the fragment polling itself) only the fragment, with ``flexplane:task-ended`` once ended.
    """
    task = tasks.get_task(ctx, task_id)
    context = live_context(task)
    if request.htmx:
        response = render(request, "portal/tasks/_live.html", context)
        if not task.running:
            response["HX-Trigger"] = ENDED_EVENT
        return response
    # The page names the VM (the polling fragment does not: it costs a read of the zones).
    return render(request, "portal/tasks/task.html", {**context, "vm_name": tasks.vm_name(ctx, task)})
