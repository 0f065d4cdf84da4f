"""The VM list's actions on several VMs at once (start, stop, delete), and on one VM from its row.

The list's form (``#vm-bulk``) brings the VMs ticked on it (``vms``, their ids) and the action here with a
GET: the page names every VM and says what the action does to it (for a delete, that it cannot be undone),
and its form sends them with ``confirm=yes`` to the same URL. Only a POST acts: a stop or a delete only
with that confirmation (without it, the page is shown again), a start at once (a row's Start button).

Each VM is then the same service call as the action on the VM's own page (:func:`portal.vms.actions.call`,
its GraphQL mutation's), under its own audit record, one VM after the other: one VM's refusal does not
stop the others, and the list then says, VM by VM, what happened.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from orchestrator.errors import FlexPlaneError, NotFound, PermissionDenied, Unauthenticated
from orchestrator.models.tasks import Task
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import vms
from orchestrator.services.context import Context
from orchestrator.services.tasks import failed_task
from orchestrator.services.vms import Outcome
from portal.activity import trail as activity
from portal.context import vdc_view
from portal.forms import confirmed
from portal.vms.actions import FAILURES, VmAction, call
from portal.vms.forms import BulkForm

# Said on the confirmation page of several VMs (a VM's own page says ``VmAction.explanation``).
EXPLANATIONS = {
    "start": "Each VM is powered on; one that runs already is left as it is.",
    "stop": "Each VM is powered off at once, like pulling its plug: what its guest OS has not written is "
    "lost.",
    "delete": "Each VM is stopped and destroyed with its disks. This cannot be undone.",
}


@dataclass(frozen=True)
class Unreadable:
    """A VM named by the request that the confirmation page could not show."""

    ident: str
    reason: str


@dataclass(frozen=True)
class Done:
    """What one VM of the action came to: the service's answer, or why it did not happen."""

    ident: str
    name: str
    outcome: Outcome | None = None
    failure: FlexPlaneError | None = None

    @property
    def task(self) -> Task | None:
        if self.outcome is not None:
            return self.outcome.task
        return failed_task(self.failure) if self.failure is not None else None


def _list_url(vdc: str, task: Task | None = None) -> str:
    url = reverse("vm-list", args=[vdc])
    return f"{url}?{urlencode({'task': task.id})}" if task is not None else url


def _read(ctx: Context, idents: list[str]) -> tuple[list[VirtualMachine], list[Unreadable]]:
    """The VMs ``idents`` name, read now, and those that could not be (another VDC's VM reads as missing)."""
    found: list[VirtualMachine] = []
    unreadable: list[Unreadable] = []
    for ident in idents:
        try:
            found.append(vms.get_vm(ctx, ident))
        except NotFound:
            unreadable.append(Unreadable(ident, "no such virtual machine in this VDC (deleted meanwhile?)"))
        except FAILURES as exc:
            unreadable.append(Unreadable(ident, f"could not be read: {exc.message}"))
    return found, unreadable


def _perform(ctx: Context, action: VmAction, idents: list[str]) -> list[Done]:
    """``action`` on each VM in turn, each its own service call and audit record; a refusal is kept."""
    done: list[Done] = []
    for ident in idents:
        try:
            with activity.action(ctx, action.mutation, vm=ident):
                outcome = call(ctx, action, ident)
        except (PermissionDenied, Unauthenticated):
            raise  # the whole request's, not this VM's: its own page
        except FlexPlaneError as exc:
            done.append(Done(ident, ident, failure=exc))
        else:
            done.append(Done(ident, outcome.vm.name, outcome=outcome))
    return done


def _report(request: HttpRequest, action: VmAction, done: list[Done]) -> None:
    """One message per VM: what was done, that there was nothing to do, or why it did not happen."""
    for each in done:
        if each.failure is not None:
            reason = each.failure.message
            if isinstance(each.failure, NotFound):
                reason = "there is no such virtual machine in this VDC"
            messages.error(request, f"{action.label} of VM {each.name} did not happen: {reason}")
        elif each.outcome is not None and each.outcome.task is None and action.name != "delete":
            messages.info(request, f"VM {each.name} is {each.outcome.vm.status}: there was nothing to do.")
        else:
            past = {"start": "started", "stop": "stopped", "delete": "deleted"}[action.name]
            messages.success(request, f"VM {each.name} was {past}.")


def _confirm_page(request: HttpRequest, form: BulkForm, action: VmAction, ctx: Context) -> HttpResponse:
    chosen, unreadable = _read(ctx, form.cleaned_data["vms"])
    context = {
        "action": action,
        "chosen": chosen,
        "unreadable": unreadable,
        "explanation": EXPLANATIONS[action.name],
    }
    return render(request, "portal/vms/bulk_confirm.html", context)


@vdc_view
def vm_bulk(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/vms/bulk/``: GET names the VMs and asks; POST acts (a stop or a delete confirmed)
    and goes back to the list, which says per VM what happened (following the task when there was one)."""
    vdc = ctx.vdc
    assert vdc is not None  # a vdc_view's context
    form = BulkForm(request.POST if request.method == "POST" else request.GET)
    if not form.is_valid():
        for field in form:
            for error in field.errors:
                messages.error(request, f"{field.label}: {error}")
        return HttpResponseRedirect(_list_url(vdc), status=303)
    action = form.chosen()
    if request.method != "POST" or (action.destructive and not confirmed(request)):
        return _confirm_page(request, form, action, ctx)
    done = _perform(ctx, action, form.cleaned_data["vms"])
    _report(request, action, done)
    started = [each.task for each in done if each.task is not None]
    return HttpResponseRedirect(_list_url(vdc, started[0] if len(started) == 1 else None), status=303)
