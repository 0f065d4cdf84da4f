"""The network pages of a VDC, and the NICs of a VM: thin adapters over the services the GraphQL API's
fields and mutations call (``services.networks``: ``networks``, ``createNetwork``, ``deleteNetwork``;
``services.networks.attach``: ``attachNetwork``, ``detachNetwork``; :mod:`portal.networks.actions`).

A network or VM of another VDC answers the same 404 page as one that does not exist (the services
report it so). A delete and a detach ask for a confirmation first; a refusal (a network still in use:
its VMs are named) is said on the confirmation page, in place.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError
from orchestrator.models import Vdc
from orchestrator.models.networks import Network, Nic
from orchestrator.models.vms import VirtualMachine, vm_id
from orchestrator.services import networks, vdcs, vms
from orchestrator.services.context import Context
from orchestrator.services.networks.attach import attach_network, detach_network, vm_nics
from portal.context import vdc_view
from portal.errors import PAGE_ERRORS
from portal.forms import posted, show_error
from portal.networks import actions
from portal.networks.forms import AttachForm, NetworkForm
from portal.perform import confirmation, perform
from portal.security_groups.views import vm_groups


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _list_url(vdc: str) -> str:
    return reverse("network-list", args=[vdc])


def _vm_url(vdc: str, vm: VirtualMachine) -> str:
    return reverse("vm-detail", args=[vdc, vm.zone, vm.vmid])


# ------------------------------------------------------------------------------------------ networks


def _list_page(request: HttpRequest, ctx: Context, form: NetworkForm, status: int = 200) -> HttpResponse:
    vdc = _vdc(ctx)
    found = networks.list_networks(ctx)
    context = {
        "vdc": vdc,
        "networks": found,
        "form": form,
        "used": len(found),
        "quota": vdc.quota_networks,
        "create": actions.CREATE,
    }
    return render(request, "portal/networks/list.html", context, status=status)


@vdc_view
def network_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/networks/``: the VDC's networks (one SDN read per zone) and the create form."""
    return _list_page(request, ctx, NetworkForm(_vdc(ctx).zones))


@vdc_view
def network_create(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """``createNetwork`` as a form (the list page's); shown again with the service's errors in place."""
    vdc = _vdc(ctx)
    form = NetworkForm(vdc.zones, posted(request))
    if form.is_bound and form.is_valid():
        made = perform(
            lambda: networks.create_network(ctx, form.spec()), ctx=ctx, operation=actions.CREATE.mutation
        )
        if isinstance(made, FlexPlaneError):
            show_error(form, made)
        else:
            messages.success(request, f"Network {made.name} ({made.cidr}) is ready in zone {made.zone}.")
            return HttpResponseRedirect(_list_url(vdc.id), status=303)
    return _list_page(request, ctx, form)


@vdc_view
def network_delete(request: HttpRequest, ctx: Context, zone: str, network: str) -> HttpResponse:
    """GET: what deleting means, and a confirmation; POST (confirmed): ``deleteNetwork``. A refusal (the
    VMs still on it, named) is said on the same page."""
    vdc = _vdc(ctx)
    found = networks.get_network(ctx, f"{zone}/{network}")  # by name (the API takes it so); NotFound: 404
    return confirmation(
        request,
        ctx,
        actions.DELETE,
        lambda: networks.delete_network(ctx, found.id),
        page="portal/networks/delete.html",
        context={"vdc": vdc, "network": found, "delete": actions.DELETE},
        said=f"Network {found.name} of zone {found.zone} was deleted.",
        then=_list_url(vdc.id),
        network=found.id,
    )


# ------------------------------------------------------------------------------------------ a VM's NICs


def _attachable(ctx: Context, vm: VirtualMachine, nics: list[Nic]) -> list[Network]:
    """The VM's VDC's networks in its zone that it has no NIC on."""
    on = {nic.bridge for nic in nics}
    found = networks.vdc_networks(ctx, vdcs.get_vdc(ctx, vm.vdc), vm.zone)
    return [n for n in found if n.vnet not in on and not n.pending]


def vm_networking(ctx: Context, vm: VirtualMachine) -> dict[str, Any]:
    """The context of ``templates/portal/vms/_nics.html`` on a VM's page: its NICs (its config, one read),
    the networks it may be attached to, and its security groups. What cannot be read is said in place."""
    nics: list[Nic] = []
    nics_error = None
    try:
        nics = vm_nics(ctx, vm.id)
        attachable = _attachable(ctx, vm, nics)
    except PAGE_ERRORS:
        raise
    except FlexPlaneError as exc:
        nics_error, attachable = exc.message, []
    return {
        "nics": nics,
        "nics_error": nics_error,
        "attach_form": AttachForm(attachable),
        "attach": actions.ATTACH,
        **vm_groups(ctx, vm),
    }


@vdc_view
def nic_attach(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponseBase:
    """``attachNetwork`` as a form (also on the VM's page): on success, the VM's page saying what the
    guest must do; otherwise this page with the error next to its field."""
    vm = vms.get_vm(ctx, vm_id(zone, vmid))  # NotFound: the 404 page
    assert ctx.vdc is not None
    failure: FlexPlaneError | None = None
    try:
        attachable = _attachable(ctx, vm, vm_nics(ctx, vm.id))
    except PAGE_ERRORS:
        raise
    except FlexPlaneError as exc:
        attachable, failure = [], exc
    form = AttachForm(attachable, posted(request))
    if failure is not None:
        form.add_error(None, failure.message)
    elif form.is_bound and form.is_valid():
        data = form.cleaned_data
        change = perform(
            lambda: attach_network(ctx, vm.id, data["network"], data["ip_address"].strip() or None),
            ctx=ctx,
            operation=actions.ATTACH.mutation,
        )
        if isinstance(change, FlexPlaneError):
            show_error(form, change)
        else:
            messages.success(request, change.note)
            return HttpResponseRedirect(_vm_url(ctx.vdc, vm), status=303)
    context = {"vm": vm, "form": form, "attach": actions.ATTACH}
    return render(request, "portal/networks/attach.html", context)


@vdc_view
def nic_detach(request: HttpRequest, ctx: Context, zone: str, vmid: int, network: str) -> HttpResponse:
    """GET: a confirmation; POST (confirmed): ``detachNetwork``, then the VM's page saying what it did."""
    vm = vms.get_vm(ctx, vm_id(zone, vmid))  # NotFound: the 404 page
    assert ctx.vdc is not None
    return confirmation(
        request,
        ctx,
        actions.DETACH,
        lambda: detach_network(ctx, vm.id, network),
        page="portal/networks/detach.html",
        context={"vm": vm, "network": network, "detach": actions.DETACH},
        said=lambda change: change.note,
        then=_vm_url(ctx.vdc, vm),
        network=f"{zone}/{network}",
    )
