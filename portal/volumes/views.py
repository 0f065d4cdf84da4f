"""The volume pages of a VDC: thin adapters over the services the GraphQL API's fields and mutations call
(``services.volumes``: ``volumes``, ``volume``, ``createVolume``, ``attachVolume``, ``detachVolume``,
``resizeVolume``, ``deleteVolume``; ``services.volume_snapshots``: ``volumeSnapshots``, ``Volume.snapshots``,
``volumeSnapshot``, ``createVolumeSnapshot``, ``createVolumeFromSnapshot``, ``deleteVolumeSnapshot``;
:mod:`portal.volumes.actions`).

A volume's page lists its snapshots, takes one (while it is detached) and makes a new volume from each. A
snapshot outlives its volume, so the list of volumes lists the VDC's snapshots too, each with what can be
done with it: the pages of a snapshot (a new volume from it, deleting it) are reached from either.

Who may: a member of the VDC holding USER, or ADMIN (the services say so; anyone else gets the 404 page, as
for a VDC they may not see). A volume or a snapshot of another VDC answers as a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.models import Vdc
from orchestrator.models.vms import VirtualMachine, vm_id
from orchestrator.models.volumes import AVAILABLE, Volume, VolumeSnapshot
from orchestrator.services import vdcs, vms, volume_snapshots, volumes
from orchestrator.services.context import Context
from portal.context import vdc_view
from portal.forms import posted
from portal.perform import confirmation, perform
from portal.volumes import actions
from portal.volumes.forms import AttachForm, FromSnapshotForm, ResizeForm, SnapshotForm, VolumeForm

# The VMs offered in a form: the VDC's first so many, by name.
VM_CHOICES = 500


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _list_url(vdc: str) -> str:
    return reverse("volume-list", args=[vdc])


def _detail_url(vdc: str, volume: Volume) -> str:
    return reverse("volume-detail", args=[vdc, volume.zone, volume.vmid])


def _volume(ctx: Context, zone: str, vmid: int) -> Volume:
    """One volume of the page's VDC; another VDC's is ``NotFound``, as a missing one."""
    volume = volumes.get_volume(ctx, vm_id(zone, vmid))
    if volume.vdc != ctx.vdc:
        raise NotFound("volume", volume.id)
    return volume


def _snapshot(ctx: Context, zone: str, vmid: int) -> VolumeSnapshot:
    """One volume snapshot of the page's VDC; another VDC's is ``NotFound``, as a missing one."""
    snapshot = volume_snapshots.get_volume_snapshot(ctx, vm_id(zone, vmid))
    if snapshot.vdc != ctx.vdc:
        raise NotFound(volume_snapshots.SNAPSHOT, snapshot.id)
    return snapshot


def _source(ctx: Context, snapshot: VolumeSnapshot) -> Volume | None:
    """The volume a snapshot was taken of, while there is one (None once it is deleted)."""
    if snapshot.source is None or snapshot.source_deleted:
        return None
    try:
        volume = volumes.get_volume(ctx, snapshot.source)
    except NotFound:
        return None
    return volume if snapshot.taken_of(volume) else None


@dataclass(frozen=True)
class SnapshotRow:
    """A volume snapshot as a page lists it: when it was taken (None while it is being copied), the volume
    it was taken of (on the list: None once deleted), and on its volume's page the form making a new volume
    from it."""

    snapshot: VolumeSnapshot
    taken: datetime | None
    source: Volume | None = None
    form: FromSnapshotForm | None = None


def _taken(snapshot: VolumeSnapshot) -> datetime | None:
    return datetime.fromtimestamp(snapshot.taken_at, UTC) if snapshot.taken_at is not None else None


def _vms(ctx: Context, zone: str | None = None) -> list[VirtualMachine]:
    """The VDC's VMs (in ``zone``, if named), by name."""
    page = vms.list_vms(ctx, first=VM_CHOICES)
    return [vm for vm in page.items if zone is None or vm.zone == zone]


def _vm_choices(found: list[VirtualMachine]) -> list[tuple[str, str]]:
    return [(vm.id, f"{vm.name} ({vm.zone}, host {vm.host}, {vm.status})") for vm in found]


@vdc_view
def volume_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/volumes/``: the VDC's volumes, where each is and what it is attached to; below them, the
    VDC's volume snapshots, those of deleted volumes too (the same read of each zone)."""
    vdc = _vdc(ctx)
    found = volumes.list_volumes(ctx)
    names = {vm.vmid: vm.name for vm in _vms(ctx)} if any(v.attached_vmid for v in found) else {}
    rows = [(v, names.get(v.attached_vmid or 0)) for v in found]
    by_id = {v.id: v for v in found}
    snapshots = [
        SnapshotRow(s, _taken(s), v if (v := by_id.get(s.source or "")) and s.taken_of(v) else None)
        for s in volume_snapshots.list_volume_snapshots(ctx)
    ]
    context = {"vdc": vdc, "volumes": rows, "snapshots": snapshots}
    return render(request, "portal/volumes/list.html", context)


@vdc_view
def volume_detail(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """``/vdc/<vdc>/volumes/<zone>/<vmid>/``: the volume, what can be done to it, and its snapshots."""
    return _volume_page(request, ctx, _vdc(ctx), _volume(ctx, zone, vmid), SnapshotForm())


def _volume_page(
    request: HttpRequest, ctx: Context, vdc: Vdc, volume: Volume, form: SnapshotForm
) -> HttpResponse:
    """A volume's page, its form taking a snapshot as ``form`` left it (offered while the volume is available,
    and shown with its refusal whatever the volume's status); each available snapshot with its form making a
    new volume, told apart from the others' by its ids."""
    snapshots = [
        SnapshotRow(
            s,
            _taken(s),
            form=FromSnapshotForm(size_gb=s.size_gb, auto_id=f"id_from_{s.vmid}_%s")
            if s.status == AVAILABLE
            else None,
        )
        for s in volume_snapshots.snapshots_of(ctx, volume)
    ]
    context = {
        "vdc": vdc,
        "volume": volume,
        "snapshots": snapshots,
        "form": form,
        "offer_snapshot": volume.status == AVAILABLE or form.is_bound,
        "take": actions.SNAPSHOT,
        "from_snapshot": actions.FROM_SNAPSHOT,
    }
    return render(request, "portal/volumes/detail.html", context)


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
                request,
                _list_url(vdc.id),
                f"Volume {made.volume.name} ({made.volume.size_gb} GiB) was created.",
            )
    return render(request, "portal/volumes/new.html", {"vdc": vdc, "form": form, "create": actions.CREATE})


def _done(request: HttpRequest, then: str, said: str) -> HttpResponseRedirect:
    messages.success(request, said)
    return HttpResponseRedirect(then, status=303)


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
            return _done(request, _list_url(vdc.id), f"Volume {volume.name} was attached to VM {vm}.")
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
            return _done(request, _list_url(vdc.id), f"Volume {volume.name} has {done.volume.size_gb} GiB.")
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


# ------------------------------------------------------------------------------------------ snapshots


@vdc_view
def volume_snapshot(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponseBase:
    """``createVolumeSnapshot`` as the volume page's form: taken, back to that page saying so; refused (an
    attached volume, the quota, a name taken), the page again with the refusal in the form."""
    vdc = _vdc(ctx)
    volume = _volume(ctx, zone, vmid)
    form = SnapshotForm(posted(request))
    if form.is_bound and form.is_valid():
        name = form.cleaned_data["name"].strip()
        taken = perform(
            lambda: volume_snapshots.snapshot_volume(ctx, volume.id, name),
            ctx=ctx,
            operation=actions.SNAPSHOT.mutation,
            volume=volume.id,
            name=name,
        )
        if isinstance(taken, FlexPlaneError):
            form.show_error(taken)
        else:
            snapshot = taken.snapshot
            said = (
                f"Snapshot {snapshot.name} of volume {volume.name} was taken ({snapshot.size_gb} GiB)."
                if snapshot.status == AVAILABLE
                else f"Snapshot {snapshot.name} of volume {volume.name} is being copied ({snapshot.size_gb} "
                "GiB): new volumes can be made from it once it is available."
            )
            return _done(request, _detail_url(vdc.id, volume), said)
    return _volume_page(request, ctx, vdc, volume, form)


@vdc_view
def snapshot_new_volume(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponseBase:
    """``createVolumeFromSnapshot`` as a form (the snapshot's row on its volume's page sends it too): made, to
    the list of volumes saying so; refused, the form again with the refusal in place."""
    vdc = _vdc(ctx)
    snapshot = _snapshot(ctx, zone, vmid)
    form = FromSnapshotForm(posted(request), size_gb=snapshot.size_gb)
    if form.is_bound and form.is_valid():
        name = form.cleaned_data["name"].strip()
        size = form.cleaned_data["size_gb"]
        made = perform(
            lambda: volume_snapshots.create_volume_from_snapshot(ctx, snapshot.id, name, size),
            ctx=ctx,
            operation=actions.FROM_SNAPSHOT.mutation,
            snapshot=snapshot.id,
            name=name,
        )
        if isinstance(made, FlexPlaneError):
            form.show_error(made)
        else:
            volume = made.volume
            done = "was created" if volume.status == AVAILABLE else "is being made"
            said = f"Volume {volume.name} ({volume.size_gb} GiB) {done} from snapshot {snapshot.name}."
            return _done(request, _list_url(vdc.id), said)
    context = {
        "vdc": vdc,
        "row": SnapshotRow(snapshot, _taken(snapshot), _source(ctx, snapshot)),
        "form": form,
        "from_snapshot": actions.FROM_SNAPSHOT,
    }
    return render(request, "portal/volumes/from_snapshot.html", context)


@vdc_view
def snapshot_delete(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    """GET: what deleting a snapshot means, and a confirmation; POST (confirmed): ``deleteVolumeSnapshot``,
    then back to its volume's page, or to the list once that volume is gone."""
    vdc = _vdc(ctx)
    snapshot = _snapshot(ctx, zone, vmid)
    source = _source(ctx, snapshot)
    return confirmation(
        request,
        ctx,
        actions.SNAPSHOT_DELETE,
        lambda: volume_snapshots.delete_volume_snapshot(ctx, snapshot.id),
        page="portal/volumes/snapshot_delete.html",
        context={"vdc": vdc, "row": SnapshotRow(snapshot, _taken(snapshot), source)},
        said=f"Volume snapshot {snapshot.name} was deleted with its copy.",
        then=_detail_url(vdc.id, source) if source is not None else _list_url(vdc.id),
        id=snapshot.id,
    )
