"""The volume pages of a VDC: thin adapters over the services the GraphQL API's fields and mutations call
(``services.volumes``: ``volumes``, ``createVolume``, ``attachVolume``, ``detachVolume``, ``resizeVolume``,
``deleteVolume``; :mod:`portal.volumes.actions`).

Who may: a member of the VDC holding USER, or ADMIN (the services say so; anyone else gets the 404 page, as
for a VDC they may not see). A volume of another VDC answers as a missing one.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.models import Vdc
from orchestrator.models.vms import VirtualMachine, vm_id
from orchestrator.models.volumes import Volume
from orchestrator.services import vdcs, vms, volumes
from orchestrator.services.context import Context
from portal.context import vdc_view
from portal.forms import posted
from portal.perform import confirmation, perform
from portal.volumes import actions
from portal.volumes.forms import AttachForm, ResizeForm, VolumeForm

# The VMs offered in a form: the VDC's first so many, by name.
VM_CHOICES = 500


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _list_url(vdc: str) -> str:
    return reverse("volume-list", args=[vdc])


def _volume(ctx: Context, zone: str, vmid: int) -> Volume:
    """One volume of the page's VDC; another VDC's is ``NotFound``, as a missing one."""
    volume = volumes.get_volume(ctx, vm_id(zone, vmid))
    if volume.vdc != ctx.vdc:
        raise NotFound("volume", volume.id)
    return volume


def _vms(ctx: Context, zone: str | None = None) -> list[VirtualMachine]:
    """The VDC's VMs (in ``zone``, if named), by name."""
    page = vms.list_vms(ctx, first=VM_CHOICES)
    return [vm for vm in page.items if zone is None or vm.zone == zone]


def _vm_choices(found: list[VirtualMachine]) -> list[tuple[str, str]]:
    return [(vm.id, f"{vm.name} ({vm.zone}, host {vm.host}, {vm.status})") for vm in found]


@vdc_view
def volume_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/volumes/``: the VDC's volumes, where each is and what it is attached to."""
    vdc = _vdc(ctx)
    found = volumes.list_volumes(ctx)
    names = {vm.vmid: vm.name for vm in _vms(ctx)} if any(v.attached_vmid for v in found) else {}
    rows = [(v, names.get(v.attached_vmid or 0)) for v in found]
    return render(request, "portal/volumes/list.html", {"vdc": vdc, "volumes": rows})


@vdc_view
def volume_create(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """``createVolume`` as a form; made, to the list saying so."""
    vdc = _vdc(ctx)
    form = VolumeForm(
        posted(request), profiles=vdc.storage_profiles, vms=_vm_choices(_vms(ctx)), zones=vdc.zones
    )
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        name = data["name"].strip()
        made = perform(
            lambda: volumes.create_volume(
                ctx,
                name,
                data["storage_profile"],
                data["size_gb"],
                data["zone"] or None,
                data["near"] or None,
            ),
            ctx=ctx,
            operation=actions.CREATE.mutation,
            name=name,
        )
        if isinstance(made, FlexPlaneError):
            form.show_error(made)
        else:
            return _done(
                request, vdc.id, f"Volume {made.volume.name} ({made.volume.size_gb} GiB) was created."
            )
    return render(request, "portal/volumes/new.html", {"vdc": vdc, "form": form, "create": actions.CREATE})


def _done(request: HttpRequest, vdc: str, said: str) -> HttpResponseRedirect:
    messages.success(request, said)
    return HttpResponseRedirect(_list_url(vdc), status=303)


@vdc_view
def volume_attach(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponseBase:
    """``attachVolume`` as a form: the VDC's VMs of the volume's zone to choose from."""
    vdc = _vdc(ctx)
    volume = _volume(ctx, zone, vmid)
    form = AttachForm(posted(request), vms=_vm_choices(_vms(ctx, volume.zone)))
    if form.is_bound and form.is_valid():
        vm = form.cleaned_data["vm"]
        done = perform(
            lambda: volumes.attach_volume(ctx, volume.id, vm),
            ctx=ctx,
            operation=actions.ATTACH.mutation,
            id=volume.id,
            vm=vm,
        )
        if isinstance(done, FlexPlaneError):
            form.show_error(done)
        else:
            return _done(request, vdc.id, f"Volume {volume.name} was attached to VM {vm}.")
    context = {"vdc": vdc, "volume": volume, "form": form, "attach": actions.ATTACH}
    return render(request, "portal/volumes/attach.html", context)


@vdc_view
def volume_resize(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponseBase:
    """``resizeVolume`` as a form (grow only)."""
    vdc = _vdc(ctx)
    volume = _volume(ctx, zone, vmid)
    form = ResizeForm(posted(request), current=volume.size_gb)
    if form.is_bound and form.is_valid():
        size = form.cleaned_data["size_gb"]
        done = perform(
            lambda: volumes.resize_volume(ctx, volume.id, size),
            ctx=ctx,
            operation=actions.RESIZE.mutation,
            id=volume.id,
        )
        if isinstance(done, FlexPlaneError):
            form.show_error(done)
        else:
            return _done(request, vdc.id, f"Volume {volume.name} has {done.volume.size_gb} GiB.")
    context = {"vdc": vdc, "volume": volume, "form": form, "resize": actions.RESIZE}
    return render(request, "portal/volumes/resize.html", context)


@vdc_view
def volume_detach(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """GET: what detaching means, and a confirmation; POST (confirmed): ``detachVolume``."""
    vdc = _vdc(ctx)
    volume = _volume(ctx, zone, vmid)
    return confirmation(
        request,
        ctx,
        actions.DETACH,
        lambda: volumes.detach_volume(ctx, volume.id),
        page="portal/volumes/detach.html",
        context={"vdc": vdc, "volume": volume},
        said=f"Volume {volume.name} was detached: it is available, with its data.",
        then=_list_url(vdc.id),
        id=volume.id,
    )


@vdc_view
def volume_delete(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """GET: what deleting means, and a confirmation; POST (confirmed): ``deleteVolume``."""
    vdc = _vdc(ctx)
    volume = _volume(ctx, zone, vmid)
    return confirmation(
        request,
        ctx,
        actions.DELETE,
        lambda: volumes.delete_volume(ctx, volume.id),
        page="portal/volumes/delete.html",
        context={"vdc": vdc, "volume": volume},
        said=f"Volume {volume.name} was deleted with its data.",
        then=_list_url(vdc.id),
        id=volume.id,
    )
