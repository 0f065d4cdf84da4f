"""Proxmox tasks: what a mutation started, followed until it ends; the latest ones of a VDC or a VM."""

from __future__ import annotations

import graphene

from orchestrator.graphql.errors import domain_errors
from orchestrator.graphql.fields import attr, described_enum
from orchestrator.graphql.partial import report_partial
from orchestrator.models.tasks import Task as TaskModel
from orchestrator.services import tasks

TaskStatus = described_enum(
    "TaskStatus",
    {
        "RUNNING": ("RUNNING", "Proxmox is still working on it."),
        "SUCCEEDED": ("SUCCEEDED", "It ended well (Proxmox's exit status OK, or WARNINGS)."),
        "FAILED": ("FAILED", "It ended in TASK ERROR; `result` carries Proxmox's message."),
    },
)


class Task(graphene.ObjectType):
    """A Proxmox task (a clone, a start, a delete, ...) acting on a VM."""

    id = graphene.ID(
        required=True,
        description="Opaque; names the zone, the host and the task's UPID. Stable: a task has the same id "
        "in a mutation's answer and in every listing.",
    )
    zone = graphene.String(required=True)
    host = graphene.String(required=True, description="The host the task runs on (its Proxmox node).")
    type = graphene.String(required=True, description="Proxmox's task type: qmclone, qmstart, qmdestroy, ...")
    title = graphene.String(
        required=True,
        description="What it does, in words: Start, Clone, Resize, Migrate, ... (Proxmox's type when no "
        "word is known for it).",
    )
    virtual_machine_id = graphene.ID(description="The VM it acts on (<zone>/<vmid>), if it acts on one.")
    virtual_machine_name = graphene.String(
        description="The name of the VM it acts on, while that VM exists (null once it was deleted)."
    )
    status = graphene.Field(TaskStatus, required=True)
    progress = graphene.Float(
        description="0 to 1: 1 once ended; while running, the last percentage Proxmox logged (null if none)."
    )
    result = graphene.String(description="Proxmox's exit status once ended: OK, WARNINGS: n, or the error.")
    started_at = graphene.DateTime(required=True)
    ended_at = graphene.DateTime(
        description="When it ended (null while running or when Proxmox does not say)."
    )
    log = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="Proxmox's task log lines (in a listing, one Proxmox call per task that asks for it).",
    )

    resolve_host = attr("node")
    resolve_type = attr("kind")

    @staticmethod
    @domain_errors
    def resolve_virtual_machine_name(task: TaskModel, info: graphene.ResolveInfo) -> str | None:
        return tasks.vm_name(info.context.flexplane, task)

    @staticmethod
    def resolve_virtual_machine_id(task: TaskModel, info: graphene.ResolveInfo) -> str | None:
        return f"{task.zone}/{task.vmid}" if task.vmid is not None else None

    @staticmethod
    def resolve_status(task: TaskModel, info: graphene.ResolveInfo) -> str:
        return "RUNNING" if task.running else "SUCCEEDED" if task.succeeded else "FAILED"

    resolve_result = attr("exitstatus", blank_is_null=True)

    @staticmethod
    @domain_errors
    def resolve_log(task: TaskModel, info: graphene.ResolveInfo) -> list[str]:
        return tasks.task_log(info.context.flexplane, task)

    @staticmethod
    @domain_errors
    def resolve_progress(task: TaskModel, info: graphene.ResolveInfo) -> float | None:
        if task.running and task.log is None:
            tasks.task_log(info.context.flexplane, task)
        return task.progress


class Query(graphene.ObjectType):
    task = graphene.Field(
        Task,
        id=graphene.ID(required=True),
        description="A task a VM mutation returned. Needs USER or ADMIN and membership of the VM's VDC; "
        "another VDC's task is NOT_FOUND, exactly like an unknown id.",
    )

    tasks = graphene.List(
        graphene.NonNull(Task),
        required=True,
        first=graphene.Int(
            description=f"How many (default {tasks.DEFAULT_TASKS}, at most {tasks.MAX_TASKS})."
        ),
        vm=graphene.ID(description="Only this VM's tasks (<zone>/<vmid>)."),
        description="The latest tasks acting on VMs, newest first. Scoped like virtualMachines: the VDC "
        "named by the FlexPlane-VDC-ID header (its members and ADMIN); without it, the caller's VDCs "
        "(ADMIN: every VDC). Needs USER or ADMIN. With vm, that VM's tasks: another VDC's VM is NOT_FOUND, "
        "exactly like a missing one. One Proxmox call per host of the zones that hold the VMs (a VM's "
        "tasks are on whichever host ran them: a migrated VM keeps its history), in parallel; a zone or "
        "host that does not answer is left out, with an UNAVAILABLE error naming it. Tasks of deleted VMs "
        "are not listed (Proxmox's task list does not say whose VM a freed VMID was); the ids the "
        "mutations answered for them stay readable with task(id). The log (and the progress of a running "
        "task) costs one Proxmox call per task.",
    )

    @staticmethod
    @domain_errors
    def resolve_task(root: None, info: graphene.ResolveInfo, id: str) -> TaskModel:
        return tasks.get_task(info.context.flexplane, id)

    @staticmethod
    @domain_errors
    def resolve_tasks(
        root: None, info: graphene.ResolveInfo, first: int | None = None, vm: str | None = None
    ) -> list[TaskModel]:
        return report_partial(info, tasks.recent_tasks(info.context.flexplane, first=first, vm=vm))
