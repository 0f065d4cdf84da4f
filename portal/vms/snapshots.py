"""A VM's snapshots on its page: the list, taking one, and rolling back to or deleting one.

Each is the service call of its mutation (``services.snapshots``: ``snapshots``, ``createSnapshot``,
``rollbackSnapshot``, ``deleteSnapshot``; registered in :data:`portal.vms.actions.SNAPSHOT_MUTATIONS`).
Rolling back and deleting ask for a confirmation first (GET), and run on a POST that sends it. Every
action ends on the VM's page following its Proxmox task live, with what was done said in words (a
rollback says whether the VM was stopped, resumed or started).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import (
    Conflict,
    NotFound,
    Unavailable,
    UpstreamFailure,
    ValidationFailed,
)
from orchestrator.models.tasks import Task
from orchestrator.models.vms import VirtualMachine, vm_id
from orchestrator.services import snapshots, vms
from orchestrator.services.context import Context
from orchestrator.services.snapshots import Snapshot
from orchestrator.services.tasks import failed_task
from portal.activity import trail as activity
from portal.context import vdc_view
from portal.forms import CONTROL, confirmed, posted, show_error
from portal.vms.actions import FAILURES, SNAPSHOT_MUTATIONS


class SnapshotForm(forms.Form):
    """``createSnapshot``'s arguments; the service checks the name again, as Proxmox would."""

    name = forms.RegexField(
        label="Name",
        regex=snapshots.NAME,
        max_length=40,
        help_text="2 to 40 letters, digits, '-' or '_', starting with a letter (e.g. before-upgrade).",
        error_messages={
            "invalid": "A snapshot name is 2 to 40 letters, digits, '-' or '_', starting with a letter."
        },
    )
    description = forms.CharField(
        label="Description",
        required=False,
        max_length=snapshots.MAX_DESCRIPTION,
        widget=forms.Textarea({"rows": 2}),
    )
    include_memory = forms.BooleanField(
        label="Include the VM's memory",
        required=False,
        help_text="A running VM only: rolling back resumes it where it was. Takes longer, and as much disk "
        "as its memory.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if name != "include_memory":
                field.widget.attrs.setdefault("class", CONTROL)


@dataclass(frozen=True)
class SnapshotAction:
    """Rolling back to a snapshot, or deleting one: asked first, then done."""

    name: str
    label: str
    explanation: str

    @property
    def mutation(self) -> str:
        return SNAPSHOT_MUTATIONS[f"snapshot-{self.name}"]


ACTIONS = {
    action.name: action
    for action in (
        SnapshotAction(
            "rollback",
            "Roll back",
            "Put the VM's disks and configuration back as they were in this snapshot: everything written "
            "since is lost, and this cannot be undone. A running VM is stopped first; a snapshot with "
            "memory resumes it where it was, otherwise it stays stopped unless you ask to start it.",
        ),
        SnapshotAction(
            "delete",
            "Delete",
            "Remove this snapshot. The VM as it is now does not change, but you can no longer roll back "
            "to it. This cannot be undone.",
        ),
    )
}


@dataclass(frozen=True)
class Listing:
    """The snapshots a VM's page shows, or why they could not be read."""

    snapshots: list[Snapshot]
    problem: str | None = None
    form: SnapshotForm | None = None


def listing(ctx: Context, vm: VirtualMachine) -> Listing:
    """The VM's snapshots for its page (a zone that does not answer is said, the page still shows)."""
    try:
        return Listing(snapshots.list_snapshots(ctx, vm.id), form=SnapshotForm())
    except (Unavailable, UpstreamFailure, Conflict) as exc:
        return Listing([], f"The snapshots could not be read: {exc.message}")


def _detail(ctx: Context, zone: str, vmid: int, task: Task | None = None) -> HttpResponseRedirect:
    """To the VM's page, following ``task`` live when there is one."""
    assert ctx.vdc is not None  # a vdc_view's context
    url = reverse("vm-detail", args=[ctx.vdc, zone, vmid])
    return HttpResponseRedirect(f"{url}?{urlencode({'task': task.id})}" if task else url, status=303)


@vdc_view
def snapshot_create(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """``.../<zone>/<vmid>/snapshots/new/``: the form (GET), ``createSnapshot`` (POST). A VM that does
    not exist (or is another VDC's) is the 404 page, after the attempt's audit record."""
    ident = vm_id(zone, vmid)
    form = SnapshotForm(posted(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with activity.action(ctx, SNAPSHOT_MUTATIONS["snapshot-create"], name=data["name"]):
                outcome = snapshots.create_snapshot(
                    ctx, ident, data["name"], data["description"], data["include_memory"]
                )
        except ValidationFailed as exc:
            show_error(form, exc)
        except FAILURES as exc:
            task = failed_task(exc)
            if task is None:
                show_error(form, exc)
            else:
                messages.error(request, f"Snapshot {data['name']} failed: {exc.message}")
                return _detail(ctx, zone, vmid, task)
        else:
            messages.success(request, outcome.message)
            return _detail(ctx, zone, vmid, outcome.task)
    vm = vms.get_vm(ctx, ident)
    return render(request, "portal/vms/snapshot_new.html", {"vm": vm, "form": form})


@vdc_view
def snapshot_action(
    request: HttpRequest, ctx: Context, zone: str, vmid: int, name: str, action: str
) -> HttpResponse:
    """``.../<zone>/<vmid>/snapshots/<name>/<rollback|delete>/``: GET asks, POST with confirm=yes does."""
    chosen = ACTIONS.get(action)
    if chosen is None:
        raise NotFound("page", request.path)
    ident = vm_id(zone, vmid)
    if confirmed(request):
        try:
            with activity.action(ctx, chosen.mutation, name=name):
                if chosen.name == "rollback":
                    outcome = snapshots.rollback_snapshot(ctx, ident, name, request.POST.get("start") == "on")
                else:
                    outcome = snapshots.delete_snapshot(ctx, ident, name)
        except (*FAILURES, ValidationFailed) as exc:
            messages.error(request, f"{chosen.label} of snapshot {name} did not happen: {exc.message}")
            return _detail(ctx, zone, vmid, failed_task(exc))
        messages.success(request, outcome.message)
        return _detail(ctx, zone, vmid, outcome.task)
    vm = vms.get_vm(ctx, ident)
    snapshot = next((s for s in snapshots.list_snapshots(ctx, vm.id) if s.name == name), None)
    if snapshot is None:
        raise NotFound("snapshot", f"{vm.id}@{name}")
    return render(
        request, "portal/vms/snapshot_confirm.html", {"vm": vm, "snapshot": snapshot, "action": chosen}
    )
