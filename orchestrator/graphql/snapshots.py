"""VM snapshots: a VM's snapshots, and taking, rolling back and deleting one (as Proxmox snapshots)."""

from __future__ import annotations

from typing import Any

import graphene

from orchestrator.errors import FlexPlaneError
from orchestrator.graphql.core import VM_MEMBER, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.tasks import Task
from orchestrator.graphql.vms import VirtualMachine
from orchestrator.services import snapshots
from orchestrator.services.snapshots import Snapshot as SnapshotModel
from orchestrator.services.snapshots import SnapshotOutcome
from orchestrator.services.tasks import failed_task

SnapshotErrorCode, SnapshotError = error_types("Snapshot", "QUOTA_EXCEEDED")


class Snapshot(graphene.ObjectType):
    """A Proxmox snapshot of a VM: its disks and configuration (and memory, if it holds it) at a time."""

    vm = graphene.ID(required=True, description="The VM's id (<zone>/<vmid>).")
    name = graphene.String(required=True)
    description = graphene.String(required=True)
    taken_at = graphene.DateTime(description="When it was taken; null while Proxmox is making it.")
    includes_memory = graphene.Boolean(
        required=True, description="It holds the VM's memory: rolling back resumes the VM where it was."
    )
    parent = graphene.String(description="The snapshot it was taken after, if any.")
    current = graphene.Boolean(
        required=True,
        description="The VM's present state descends from it (taken after it, or rolled back to it).",
    )
    state = graphene.String(
        description="prepare or delete while Proxmox makes or removes it; null once whole."
    )


class SnapshotMutation(ServiceMutation):
    """A snapshot operation's payload: the snapshot, the VM after it, Proxmox's task and what was done."""

    class Meta:
        abstract = True

    shared = Shared(VM_MEMBER, SnapshotError)

    snapshot = graphene.Field(Snapshot)
    virtual_machine = graphene.Field(VirtualMachine, description="The VM after the operation.")
    task = graphene.Field(Task, description="Proxmox's task; with UPSTREAM_FAILURE, the task that failed.")
    message = graphene.String(description="What was done, in words (a rollback says how the VM is now).")

    @classmethod
    def answer(cls, result: SnapshotOutcome) -> dict[str, Any]:
        return {
            "snapshot": result.snapshot,
            "virtual_machine": result.vm,
            "task": result.task,
            "message": result.message,
        }

    @classmethod
    def failed(cls, exc: FlexPlaneError) -> dict[str, Any]:
        return {"task": failed_task(exc)}


_ERRORS = (
    "Another VDC's VM, or a snapshot it does not have, is NOT_FOUND. CONFLICT: the VM is locked by another "
    "operation (a resize, a migration, another snapshot); nothing was changed. UPSTREAM_FAILURE carries "
    "Proxmox's message and its task."
)


class CreateSnapshot(SnapshotMutation):
    class Meta:
        service = snapshots.create_snapshot
        description = (
            "Take a snapshot of a VM's disks and configuration, and of its memory with includeMemory (a "
            "running VM only). INVALID: a name that is not 2-40 letters, digits, '-' or '_' starting with a "
            "letter; a VM whose storage profile keeps its disks where Proxmox cannot snapshot them (named). "
            "QUOTA_EXCEEDED: the VM has as many snapshots as its VDC allows (quota.snapshotsPerVm). "
            f"CONFLICT also for a name the VM already has. {_ERRORS}"
        )

    class Arguments:
        vm = graphene.ID(required=True, description="The VM's id.")
        name = graphene.String(required=True)
        description = graphene.String()
        include_memory = graphene.Boolean(description="Save the running VM's memory too (default false).")


class RollbackSnapshot(SnapshotMutation):
    class Meta:
        service = snapshots.rollback_snapshot
        description = (
            "Put a VM back as it was in a snapshot; what was written since is lost. As Proxmox does, a "
            "running VM is stopped first; a snapshot holding memory resumes it where it was, otherwise it "
            f"stays stopped unless start is true. `message` says what happened. {_ERRORS}"
        )

    class Arguments:
        vm = graphene.ID(required=True, description="The VM's id.")
        name = graphene.String(required=True)
        start = graphene.Boolean(description="Start the VM after the rollback (default false).")


class DeleteSnapshot(SnapshotMutation):
    class Meta:
        service = snapshots.delete_snapshot
        description = f"Delete a snapshot of a VM; the VM as it is now does not change. {_ERRORS}"

    class Arguments:
        vm = graphene.ID(required=True, description="The VM's id.")
        name = graphene.String(required=True)


class Query(graphene.ObjectType):
    snapshots = graphene.List(
        graphene.NonNull(Snapshot),
        required=True,
        vm=graphene.ID(required=True),
        description="A VM's snapshots, oldest first. Needs USER or ADMIN and membership of the VM's VDC "
        "(another VDC's VM is NOT_FOUND).",
    )

    @staticmethod
    @domain_errors
    def resolve_snapshots(root: None, info: graphene.ResolveInfo, vm: str) -> list[SnapshotModel]:
        return snapshots.list_snapshots(flexplane(info), vm)


class Mutation(graphene.ObjectType):
    create_snapshot = CreateSnapshot.Field()
    rollback_snapshot = RollbackSnapshot.Field()
    delete_snapshot = DeleteSnapshot.Field()
