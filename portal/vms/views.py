"""The VM pages of a VDC: the list, the create form, a VM's page and its actions.

Each page is a thin adapter over the same service call as the GraphQL API's field or mutation
(``services.vms``, ``services.vdcs``): the list is ``virtualMachines`` (keyset cursors; its table
read again with the VMs' tags, see :func:`vm_list`), the create form is ``createVirtualMachine``, each
action is the mutation :data:`portal.vms.actions.MUTATIONS` names (on several VMs at once:
:mod:`portal.vms.bulk`). A VM of another VDC answers the same 404 page as one that does not exist (the
services report it so).

One URL serves a page and its htmx fragments: :func:`portal.htmx.respond` picks the fragment by the
element htmx asks to swap (``HX-Target``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import (
    Conflict,
    NotFound,
    QuotaExceeded,
    Unavailable,
    UpstreamFailure,
    ValidationFailed,
)
from orchestrator.models import Usage, Vdc
from orchestrator.models.networks import addresses_in
from orchestrator.models.tasks import Task
from orchestrator.models.vms import VirtualMachine, vm_id
from orchestrator.services import networks, tasks, vdcs, vms, volumes
from orchestrator.services.context import Context
from orchestrator.services.placement import NoCapacity, Placement
from orchestrator.services.tasks import failed_task
from portal.activity import trail as activity
from portal.context import vdc_view
from portal.forms import posted, show_error
from portal.gateways.views import vm_public
from portal.htmx import HtmxHttpRequest, redirect, respond, targets
from portal.networks.views import vm_networking
from portal.tasks import live_context
from portal.vms.actions import ACTIONS, BULK_ACTIONS, CREATE_MUTATION, FAILURES, VmAction, call
from portal.vms.forms import CreateVmForm, ResizeForm, ShutdownForm, VmFilterForm
from portal.vms.offer import Offer, QuotaLine, asked_for, over_quota, quota_lines
from portal.vms.snapshots import listing as snapshot_listing

PAGE_SIZE = vms.DEFAULT_PAGE_SIZE
# How many of a VM's latest tasks its page lists.
HISTORY = 10
# Where a create's placement decision waits for the VM's page (the signed session: the decision is
# only ever answered by the create itself, and the browser is the one place allowed to keep it).
PLACEMENT_KEY = "flexplane_vms_placement"


def changing(vm: VirtualMachine) -> bool:
    """Whether Proxmox reports the VM in the middle of something (a clone, a migration, a backup:
    its lock), or cannot say how it is (``unknown``): its row and page refresh themselves until not."""
    return bool(vm.lock) or vm.status not in ("running", "stopped")


def addresses(vm: VirtualMachine) -> list[str]:
    """The VM's IP addresses: those its network cards were given (its ``fp-ip-`` tags, as the API's
    ``nics`` report them from its config), then any other its guest agent reported (read for one VM only)."""
    given = [str(address) for _vnet, address in addresses_in(vm.tags)]
    return list(dict.fromkeys([*given, *(vm.ip_addresses or ())]))


@dataclass(frozen=True)
class Row:
    """A VM as its row of the list shows it, its words and links made here (a template's lookups and
    ``{% url %}`` cost more, 50 times a page); ``detailed`` once its tags were read (its profile,
    addresses and lock: a listing read from the VDC's pools has none of them)."""

    vm: VirtualMachine
    url: str  # its page (its row's refresh is ``<url>row/``)
    changing: bool
    addresses: str  # joined; empty for none
    detailed: bool
    # What its row offers: start (a stopped VM), stop (a running one, confirmed first), or nothing.
    action: str
    stop_url: str

    @classmethod
    def of(cls, vm: VirtualMachine, list_url: str, bulk_url: str, detailed: bool = True) -> Row:
        busy = changing(vm)
        action = "" if busy else {"stopped": "start", "running": "stop"}.get(vm.status, "")
        stop_url = f"{bulk_url}?action=stop&vms={quote(vm.id, safe='')}" if action == "stop" else ""
        url = f"{list_url}{quote(vm.zone, safe='')}/{vm.vmid}/"
        return cls(vm, url, busy, ", ".join(addresses(vm)), detailed, action, stop_url)


def available_actions(vm: VirtualMachine) -> list[VmAction]:
    """The actions that make sense for the VM as it is (all of them when Proxmox cannot say)."""
    useless = {"running": {"start"}, "stopped": {"shutdown", "reboot", "stop"}}.get(vm.status, set())
    return [action for name, action in ACTIONS.items() if name not in useless]


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _detail_url(vdc: str, vm: str, task: Task | None = None) -> str:
    zone, vmid = vm.split("/", 1)
    url = reverse("vm-detail", args=[vdc, zone, int(vmid)])
    return f"{url}?{urlencode({'task': task.id})}" if task is not None else url


def _list_url(vdc: str, task: Task | None = None) -> str:
    url = reverse("vm-list", args=[vdc])
    return f"{url}?{urlencode({'task': task.id})}" if task is not None else url


def _followed_task(request: HttpRequest, ctx: Context) -> Task | None:
    """The task an action just started (``?task=<id>``), read now; a message when it is not readable."""
    task_id = request.GET.get("task")
    if not task_id:
        return None
    try:
        return tasks.get_task(ctx, task_id)
    except NotFound:
        messages.error(request, "The task in this page's address does not exist (or is not of this VDC).")
    except (Unavailable, UpstreamFailure) as exc:
        messages.error(request, f"The task could not be read: {exc.message}")
    return None


def _followed(request: HttpRequest, ctx: Context) -> dict[str, Any] | None:
    """The context of ``portal/tasks/_live.html`` for the page's followed task, if it has one."""
    task = _followed_task(request, ctx)
    return live_context(task) if task is not None else None


# ------------------------------------------------------------------------------------------- list


@vdc_view
def vm_list(request: HtmxHttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/vms/``: the VDC's VMs by name, 50 a page, each with its profile and addresses,
    searched (name, address, status, zone, profile) and filtered by status and zone.

    The page comes from the VDC's pools (one call per zone, what the VDC has), which carry no tags; its
    table then reads itself again (htmx, as it shows) with the VMs' tags: one ``/cluster/resources`` per
    zone, as large as the zone's fleet, so the page does not wait for it. A table htmx asks for (a
    search, a filter, a page) and a search without htmx read the tags at once. Never a call per VM."""
    vdc = _vdc(ctx)
    form = VmFilterForm(request.GET, zones=vdc.zones)
    page: vms.Page | None = None
    valid = form.is_valid()
    detailed = targets(request, "vm-table") or (valid and bool(form.cleaned_data["q"].strip()))
    if valid:
        try:
            page = vms.list_vms(
                ctx,
                first=PAGE_SIZE,
                after=form.cleaned_data["after"] or None,
                where=form.where(),
                tags=detailed,
            )
        except ValidationFailed as exc:  # a page link from an older version, or edited by hand
            show_error(form, exc, lambda field: field if field == "after" else None)
    list_url, bulk_url = reverse("vm-list", args=[vdc.id]), reverse("vm-bulk", args=[vdc.id])
    context = {
        "vdc": vdc,
        "form": form,
        "page": page,
        "rows": [Row.of(vm, list_url, bulk_url, detailed) for vm in page.items] if page else [],
        "detailed": detailed or page is None,
        # A refused cursor is an error of the form, and no longer in its cleaned data.
        "table_query": urlencode(form.query(after=form.cleaned_data.get("after"))) if valid else "",
        "bulk_url": bulk_url,
        "bulk_actions": [(name, ACTIONS[name].label) for name in BULK_ACTIONS],
        "next_query": urlencode(form.query(after=page.end_cursor)) if page and page.has_next else None,
        "first_query": urlencode(form.query()) if form.is_valid() and form.cleaned_data["after"] else None,
        "followed": _followed(request, ctx),
    }
    return respond(request, "portal/vms/list.html", context, {"vm-table": "portal/vms/_table.html"})


@vdc_view
def vm_row(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """One row of the list, read again: a VM that is changing polls this until it is stable."""
    try:
        vm = vms.get_vm(ctx, vm_id(zone, vmid))
    except NotFound:
        return HttpResponse("")  # deleted meanwhile: the row goes
    list_url, bulk_url = reverse("vm-list", args=[ctx.vdc]), reverse("vm-bulk", args=[ctx.vdc])
    return render(
        request, "portal/vms/_row.html", {"row": Row.of(vm, list_url, bulk_url), "bulk_url": bulk_url}
    )


# ------------------------------------------------------------------------------------------- create


def _quota(ctx: Context, offer: Offer, form: CreateVmForm) -> list[QuotaLine]:
    """The VDC's quota, what it uses now (one ``/cluster/resources`` per zone) and what this VM would."""
    asked = asked_for(
        offer,
        form.value("compute_profile"),
        form.value("storage_profile"),
        form.value("image"),
        form.chosen_disk_gb(),
    )
    return quota_lines(offer.vdc, vdcs.usage(ctx, offer.vdc.id), asked)


def _remember_placement(request: HttpRequest, vm: VirtualMachine, placement: Placement | None) -> None:
    if placement is None:
        return
    request.session[PLACEMENT_KEY] = {
        "vm": vm.id,
        "zone": placement.zone,
        "host": placement.host,
        "reasons": list(placement.reasons),
        "rejected": [{"host": r.host, "reason": r.reason} for r in placement.rejected],
    }


@vdc_view
def vm_create(request: HtmxHttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/vms/new/``: ``createVirtualMachine`` as a form; on success, the VM's page with
    its task. For htmx: the form alone (sent), or the quota figures alone (recomputed)."""
    vdc = _vdc(ctx)
    offer = Offer.of(ctx, vdc)
    nets = networks.vdc_networks(ctx, vdc)  # the choice of networks (one SDN read per zone)
    placement: Placement | None = None
    if request.method == "POST":
        form = CreateVmForm(offer, request.POST, networks=nets)
        if form.is_valid():
            try:
                with activity.action(ctx, CREATE_MUTATION):
                    created = vms.create_vm(ctx, form.spec())
            except NoCapacity as exc:
                form.add_error("zone", exc.message)
                placement = exc.placement
            except QuotaExceeded as exc:
                show_error(form, exc, quota=over_quota(_quota(ctx, offer, form)))
            except (ValidationFailed, Conflict, Unavailable, UpstreamFailure) as exc:
                show_error(form, exc, form.form_field)
            else:
                _remember_placement(request, created.vm, created.placement)
                if not created.created:
                    messages.info(
                        request,
                        f"VM {created.vm.name} already exists in VDC {vdc.id} (an earlier create made it): "
                        "no second one was made.",
                    )
                return redirect(request, _detail_url(vdc.id, created.vm.id, created.task))
        # Shown again, with what was typed and what was wrong: a new request, so a new key.
        form.renew_idempotency_key()
    else:
        # The quota figures are recomputed from the choices made so far, sent along as parameters.
        recompute = targets(request, "quota")
        form = CreateVmForm(offer, request.GET if recompute else None, networks=nets)
    context = {"vdc": vdc, "form": form, "quota": _quota(ctx, offer, form), "rejected": placement}
    return respond(
        request,
        "portal/vms/new.html",
        context,
        {"create-form": "portal/vms/_form.html", "quota": "portal/vms/_quota.html"},
    )


# ------------------------------------------------------------------------------------------- one VM


def _placement_of(request: HttpRequest, vm: VirtualMachine) -> dict[str, Any] | None:
    remembered = request.session.get(PLACEMENT_KEY)
    return remembered if isinstance(remembered, dict) and remembered.get("vm") == vm.id else None


@vdc_view
def vm_detail(request: HtmxHttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """``/vdc/<vdc>/vms/<zone>/<vmid>/``: the VM live, its addresses, how it was placed, its latest
    tasks and its actions; with ``?task=``, the task an action started, followed live."""
    vm = vms.get_vm(ctx, vm_id(zone, vmid))
    context = {
        "vm": vm,
        "changing": changing(vm),
        "actions": available_actions(vm),
        "addresses": addresses(vm),
    }
    if targets(request, "vm-facts"):
        return respond(request, "portal/vms/detail.html", context, {"vm-facts": "portal/vms/_facts.html"})
    context.update(
        followed=_followed(request, ctx),
        placement=_placement_of(request, vm),
        history=tasks.recent_tasks(ctx, first=HISTORY, vm=vm.id),
        snapshots=snapshot_listing(ctx, vm),  # templates/portal/vms/_snapshots.html
        volumes=volumes.attached_to(ctx, vm),  # templates/portal/vms/_volumes.html
        **vm_networking(ctx, vm),  # its NICs and security groups (templates/portal/vms/_nics.html)
        **vm_public(ctx, vm),  # its public IPs and port forwards (templates/portal/gateways/_vm_public.html)
    )
    return render(request, "portal/vms/detail.html", context)


# ------------------------------------------------------------------------------------------- actions


def _run(request: HttpRequest, ctx: Context, action: VmAction, vm: VirtualMachine) -> HttpResponse:
    """Do the action through its service call; to the VM's page (the list after a delete) with its task."""
    vdc = ctx.vdc
    assert vdc is not None
    shutdown = ShutdownForm(request.POST)
    if action.name == "shutdown" and not shutdown.is_valid():
        return _confirm_page(request, action, vm, shutdown)
    try:
        with activity.action(ctx, action.mutation):
            timeout = shutdown.cleaned_data["timeout"] if action.name == "shutdown" else None
            outcome = call(ctx, action, vm.id, timeout)
    except ValidationFailed as exc:
        show_error(shutdown, exc)
        return _confirm_page(request, action, vm, shutdown)
    except FAILURES as exc:
        messages.error(request, f"{action.label} of VM {vm.name} did not happen: {exc.message}")
        return HttpResponseRedirect(_detail_url(vdc, vm.id, failed_task(exc)), status=303)
    if outcome.task is None:
        messages.info(request, f"VM {vm.name} is {outcome.vm.status}: there was nothing to do.")
    if action.name == "delete":
        messages.success(request, f"VM {vm.name} was deleted.")
        return HttpResponseRedirect(_list_url(vdc, outcome.task), status=303)
    return HttpResponseRedirect(_detail_url(vdc, vm.id, outcome.task), status=303)


def _confirm_page(
    request: HttpRequest, action: VmAction, vm: VirtualMachine, form: ShutdownForm | None = None
) -> HttpResponse:
    return render(
        request,
        "portal/vms/confirm.html",
        {"vm": vm, "action": action, "shutdown_form": form or ShutdownForm()},
    )


@vdc_view
def vm_action(request: HttpRequest, ctx: Context, zone: str, vmid: int, action: str) -> HttpResponse:
    """``/vdc/<vdc>/vms/<zone>/<vmid>/<action>/``: GET asks to confirm, POST does it.

    A destructive action (stop, delete) runs only when its confirmation was sent along.
    """
    chosen = ACTIONS.get(action)
    if chosen is None:
        raise NotFound("page", request.path)
    if chosen.name == "resize":
        return _resize(request, ctx, vm_id(zone, vmid))
    vm = vms.get_vm(ctx, vm_id(zone, vmid))
    if request.method == "POST" and (not chosen.destructive or request.POST.get("confirm") == "yes"):
        return _run(request, ctx, chosen, vm)
    return _confirm_page(request, chosen, vm)


def _resize_quota(ctx: Context, offer: Offer, form: ResizeForm) -> list[QuotaLine]:
    """What the resize would add to the VDC's usage (only what grows counts, as the service checks)."""
    vm = form.vm
    profile, disk = form.changes()
    chosen = offer.compute_profiles.get(profile or "")
    grows = Usage(
        vcpus=max(0, chosen.vcpus - vm.cores) if chosen else 0,
        memory_mib=max(0, chosen.memory_mib - vm.memory_mb) if chosen else 0,
        disk_gb=max(0, disk - round(vm.disk_gb)) if disk is not None else 0,
    )
    return quota_lines(offer.vdc, vdcs.usage(ctx, offer.vdc.id), grows)


def _resize(request: HttpRequest, ctx: Context, ident: str) -> HttpResponse:
    """``resizeVirtualMachine`` as a form; a move to a smaller compute profile is confirmed first."""
    vdc = _vdc(ctx)
    vm = vms.get_vm(ctx, ident)
    offer = Offer.of(ctx, vdc)
    form = ResizeForm(offer, vm, posted(request))
    confirming = False
    if request.method == "POST" and form.is_valid():
        if form.shrinks() and not form.cleaned_data["confirm"]:
            confirming = True
        else:
            profile, disk = form.changes()
            try:
                with activity.action(ctx, ACTIONS["resize"].mutation, vm=ident):
                    outcome = vms.resize_vm(ctx, ident, compute_profile=profile, disk_gb=disk)
            except QuotaExceeded as exc:
                show_error(form, exc, quota=over_quota(_resize_quota(ctx, offer, form)))
            except (ValidationFailed, Conflict, Unavailable, UpstreamFailure) as exc:
                task = failed_task(exc)
                if task is None:
                    show_error(form, exc)
                else:  # Proxmox took it on and failed: its task says why, on the VM's page
                    messages.error(request, f"Resize of VM {vm.name} failed: {exc.message}")
                    return HttpResponseRedirect(_detail_url(vdc.id, vm.id, task), status=303)
            else:
                if outcome.task is None:
                    messages.info(request, f"VM {vm.name} already has that size: there was nothing to do.")
                return HttpResponseRedirect(_detail_url(vdc.id, vm.id, outcome.task), status=303)
    context = {
        "vm": vm,
        "form": form,
        "action": ACTIONS["resize"],
        "confirming": confirming,
        "quota": _resize_quota(ctx, offer, form) if form.is_bound and form.is_valid() else None,
    }
    return render(request, "portal/vms/resize.html", context)
