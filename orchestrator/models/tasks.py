"""Proxmox tasks (workers with a UPID): a clone, a start, a delete... as their status and log say.

A task is shown by what it does in words (:data:`TITLES`: ``qmstart`` is "Start"), in the API
(``Task.title``) and the portal alike; its Proxmox type stays readable as ``kind``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import models

from orchestrator.sources.proxmox.values import RUNNING, STOPPED, TaskStatus

# Proxmox ends a task that succeeded with exitstatus "OK", or "WARNINGS: <n>" when it logged warnings.
_SUCCESS = re.compile(r"OK|WARNINGS: [0-9]+")
# A progress figure in a task's log, as qemu-img, the clone and the download workers print it.
_PERCENT = re.compile(r"(\d{1,3}(?:\.\d+)?)\s?%")
# A guest's VMID as a task's id names it (ASCII digits: ``str.isdigit`` takes other scripts' too).
_VMID = re.compile(r"[0-9]{1,9}")
# UPID:node:pid:pstart:starttime:type:id:user: (pid, pstart and starttime in hex).
_UPID = re.compile(
    r"UPID:(?P<node>[a-zA-Z0-9][a-zA-Z0-9.-]*):(?P<pid>[0-9A-Fa-f]{8}):(?P<pstart>[0-9A-Fa-f]{8,9})"
    r":(?P<starttime>[0-9A-Fa-f]{8}):(?P<type>[^:]+):(?P<id>[^:]*):(?P<user>[^:]+):"
)


# What a Proxmox task type does, in words: the one table the API and the portal show tasks by.
TITLES: dict[str, str] = {
    "qmcreate": "Create",
    "qmclone": "Clone",
    "qmconfig": "Configure",
    "resize": "Resize",
    "qmstart": "Start",
    "qmstop": "Stop",
    "qmshutdown": "Shut down",
    "qmreboot": "Reboot",
    "qmreset": "Reset",
    "qmsuspend": "Suspend",
    "qmresume": "Resume",
    "qmigrate": "Migrate",
    "qmmove": "Move disk",
    "qmdestroy": "Delete",
    "qmtemplate": "Make template",
    "qmsnapshot": "Snapshot",
    "qmdelsnapshot": "Delete snapshot",
    "qmrollback": "Roll back",
    "vzdump": "Back up",
    "qmrestore": "Restore",
    "download": "Download image",
    "imgcopy": "Copy image",
}


def title_of(kind: str) -> str:
    """The task type in words; one this table does not know, as Proxmox names it."""
    return TITLES.get(kind, kind)


@dataclass(frozen=True)
class Upid:
    """A task's UPID, taken apart: which node runs it, since when, what kind of task, for which guest."""

    raw: str
    node: str
    started_at: datetime
    kind: str
    target: str
    user: str
    # When the worker process started, in clock ticks since the node booted.
    pstart: int

    @property
    def vmid(self) -> int | None:
        """The guest the task acts on, when it acts on one."""
        return int(self.target) if _VMID.fullmatch(self.target) else None

    @property
    def sequence(self) -> tuple[datetime, int]:
        """Its place among its node's tasks: by start time (whole seconds), then by its worker's start."""
        return self.started_at, self.pstart

    @classmethod
    def parse(cls, value: str) -> Upid | None:
        match = _UPID.fullmatch(value)
        if match is None:
            return None
        return cls(
            raw=value,
            node=match["node"],
            started_at=datetime.fromtimestamp(int(match["starttime"], 16), tz=UTC),
            kind=match["type"],
            target=match["id"],
            user=match["user"],
            pstart=int(match["pstart"], 16),
        )


def _time(value: int | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(value, tz=UTC) if value is not None else None
    except (ValueError, OverflowError, OSError):
        return None


def progress_of(status: str, lines: Sequence[str]) -> float | None:
    """A finished task is done (1.0); a running one as far as its last logged percentage, else unknown."""
    if status == STOPPED:
        return 1.0
    for line in reversed(lines):
        found = _PERCENT.findall(line)
        if found:
            return max(0.0, min(1.0, float(found[-1]) / 100))
    return None


class Task(models.Model):
    """A Proxmox task of a zone, addressed by an id that names the zone, the node and the UPID."""

    id = models.CharField(primary_key=True, max_length=512)
    zone = models.CharField(max_length=63)
    node = models.CharField(max_length=63)
    upid = models.CharField(max_length=255)
    kind = models.CharField(max_length=32)
    vmid = models.PositiveIntegerField(null=True)
    status = models.CharField(max_length=16)
    # Proxmox's exitstatus: "OK", "WARNINGS: n", or the error; empty while the task runs.
    exitstatus = models.TextField(blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)
    progress = models.FloatField(null=True)
    # The task's log lines; None when they were not read.
    log = models.JSONField(null=True, default=None)
    # The VDC of the VM it acts on (its id says), and that VM's name ("" until it is read).
    vdc = models.CharField(max_length=63, blank=True)
    vm_name = models.CharField(max_length=63, blank=True)

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.upid

    @property
    def title(self) -> str:
        """What it does, in words ("Start", "Clone", ...)."""
        return title_of(self.kind)

    @property
    def running(self) -> bool:
        return self.status != STOPPED

    @property
    def succeeded(self) -> bool:
        return self.status == STOPPED and bool(_SUCCESS.fullmatch(self.exitstatus))

    @property
    def failed(self) -> bool:
        return self.status == STOPPED and not self.succeeded

    @classmethod
    def from_status(
        cls,
        task_id: str,
        zone: str,
        upid: Upid,
        status: TaskStatus,
        log: Sequence[str] | None = None,
    ) -> Task:
        """Build from the task's status (and, when read, its log)."""
        state = STOPPED if status.status == STOPPED else RUNNING
        lines = list(log) if log is not None else None
        return cls(
            id=task_id,
            zone=zone,
            node=upid.node,
            upid=upid.raw,
            kind=status.kind or upid.kind,
            vmid=upid.vmid,
            status=state,
            exitstatus=status.exitstatus if state == STOPPED else "",
            started_at=_time(status.started) or upid.started_at,
            ended_at=_time(status.ended) if state == STOPPED else None,
            progress=progress_of(state, lines or []),
            log=lines,
        )

    def with_log(self, lines: Sequence[str]) -> Task:
        self.log = list(lines)
        self.progress = progress_of(self.status, self.log)
        return self
