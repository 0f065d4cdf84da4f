"""Proxmox tasks in the portal: a task followed live, and the header's indicator of the user's tasks.

The task page shows one task: the websocket (:mod:`portal.consumers`) streams its status and new log
lines until it ends; without websockets, the fragment ``portal/tasks/_live.html`` polls the page through
htmx. The header's indicator (``portal/tasks/_indicator.html``, polled every few seconds once the page has
loaded) counts the user's running tasks and those that failed since they last looked; it opens the list of
their recent tasks (``/tasks/``), each linked to its page, and opening it is looking. The user's tasks are
the API's ``tasks`` without a VDC: those of the VDCs they are a member of (ADMIN: every VDC's), one
listing per request.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.contrib.sessions.backends.base import SessionBase
from django.http import HttpResponse
from django.shortcuts import render

from orchestrator.errors import FlexPlaneError, Unauthenticated
from orchestrator.models.tasks import Task
from orchestrator.services import tasks
from orchestrator.services.context import Context
from portal.context import portal_view, vdc_view
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


# --------------------------------------------------------------------------- the header's indicator

# How many of the user's latest tasks the indicator and its list look at (the API's default page).
LISTED = tasks.DEFAULT_TASKS
# The session's record of the user's last look: when (Proxmox's clock, seconds since the epoch) the newest
# failure their list showed them ended, and which failures that ended in that second they saw (Proxmox
# says when in whole seconds): ``{"at": 1798000000.0, "saw": ["<mark>", ...]}``. A failure that ended
# later, or then but unseen, is news. Kept in Proxmox's clock, not the portal's, so that a node's clock
# running behind hides nothing; a failure's mark is a short digest of its UPID (the cookie stays small).
SEEN = "flexplane_tasks_seen"


def ended(task: Task) -> float:
    """When a task ended (when it started, if Proxmox did not say), in seconds since the epoch."""
    return (task.ended_at or task.started_at).timestamp()


def mark(task: Task) -> str:
    """A failure's mark in the session: a short digest of its UPID."""
    return hashlib.sha256(task.upid.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class LastLook:
    """The newest failure the user saw ended ``at``; ``saw``: the marks of those that ended then."""

    at: float
    saw: frozenset[str]

    @classmethod
    def of(cls, session: SessionBase) -> LastLook | None:
        """The session's last look; None before any (or for a record this code did not write)."""
        value = session.get(SEEN)
        if not isinstance(value, dict):
            return None
        at, saw = value.get("at"), value.get("saw")
        if not isinstance(at, int | float) or not isinstance(saw, list):
            return None
        return cls(float(at), frozenset(str(m) for m in saw))

    def is_news(self, task: Task) -> bool:
        when = ended(task)
        return when > self.at or (when == self.at and mark(task) not in self.saw)


@dataclass(frozen=True)
class MyTasks:
    """The user's latest tasks, as the indicator and its list show them.

    ``failed``: the failures that are news since the last look (every failure listed, before any look).
    ``problem``: why the list could not be read, or which zones or nodes did not answer (it may then be
    partial); empty when all is well.
    """

    tasks: list[Task]
    running: list[Task]
    failed: list[Task]
    problem: str = ""

    @property
    def label(self) -> str:
        """What the indicator says to a screen reader: the counts, in words."""
        if self.problem and not self.tasks:
            return "Tasks: not available"
        said = [f"{len(self.running)} running"] if self.running else ["none running"]
        if self.failed:
            said.append(f"{len(self.failed)} failed since you last looked")
        return "Tasks: " + ", ".join(said)


def my_tasks(ctx: Context, session: SessionBase) -> MyTasks:
    """The user's latest tasks (one listing: ``services.tasks.recent_tasks``), counted against the
    session's last look. A failure to read them is said, not raised: the header is on every page."""
    try:
        listed = tasks.recent_tasks(ctx, first=LISTED)
    except Unauthenticated:
        raise
    except FlexPlaneError as exc:
        return MyTasks([], [], [], problem=exc.message)
    last = LastLook.of(session)
    failed = [t for t in listed if t.failed and (last is None or last.is_news(t))]
    problem = ""
    if ctx.unavailable:
        where = ", ".join(str(getattr(exc, "where", "") or exc.message) for exc in ctx.unavailable)
        problem = f"{where} did not answer: the list may be incomplete."
    return MyTasks(listed, [t for t in listed if t.running], failed, problem)


def look(session: SessionBase, shown: MyTasks) -> None:
    """The user has looked at ``shown``: its failures are no longer news."""
    failures = [t for t in shown.tasks if t.failed]
    if not failures:
        return
    last = LastLook.of(session)
    newest = max(ended(t) for t in failures)
    saw = {mark(t) for t in failures if ended(t) == newest}
    if last is not None and last.at > newest:
        return
    if last is not None and last.at == newest:
        saw |= last.saw
    session[SEEN] = {"at": newest, "saw": sorted(saw)}


@portal_view
def indicator(request: HtmxHttpRequest, ctx: Context) -> HttpResponse:
    """``/tasks/indicator/``: the header's button, with the counts of the user's running tasks and of
    those that failed since they last looked (htmx polls it; it changes nothing)."""
    mine = my_tasks(ctx, request.session)
    return render(request, "portal/tasks/_indicator.html", {"mine": mine})


@portal_view
def my_task_list(request: HtmxHttpRequest, ctx: Context) -> HttpResponse:
    """``/tasks/``: the user's latest tasks, each linked to its page, the failures since their last look
    marked; seeing it is looking (the indicator stops counting them). For htmx (the header's list
    opened), the list alone, and the indicator's button out of band with its new counts."""
    mine = my_tasks(ctx, request.session)
    look(request.session, mine)
    context = {"mine": mine, "news": {t.id for t in mine.failed}}
    if request.htmx:
        after = MyTasks(mine.tasks, mine.running, [], mine.problem)
        return render(request, "portal/tasks/_list.html", {**context, "after": after, "oob": True})
    return render(request, "portal/tasks/list.html", context)
