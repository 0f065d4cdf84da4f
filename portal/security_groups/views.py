"""The security-group pages of a VDC, and a VM's groups: thin adapters over the services the GraphQL
API's field and mutations call (``services.security_groups``: ``securityGroups``,
``createSecurityGroup``, ``updateSecurityGroup``, ``deleteSecurityGroup``, ``assignSecurityGroups``;
:mod:`portal.security_groups.actions`).

A group of another VDC answers the same 404 page as one that does not exist. A delete asks for a
confirmation first, and a refusal (VMs still in the group, named) is said on that page. A change that
could not reach some VMs' firewalls is stored: the page says which VMs, and that saving again updates them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.models import Vdc
from orchestrator.models.security_groups import ANYWHERE, DEFAULT_GROUP, Rule, SecurityGroup, groups_in
from orchestrator.models.vms import VirtualMachine, vm_id
from orchestrator.services import security_groups, vdcs, vms
from orchestrator.services.context import Context
from orchestrator.services.security_groups import Realised
from portal.context import vdc_view
from portal.forms import posted, show_error
from portal.perform import confirmation, perform
from portal.security_groups import actions
from portal.security_groups.forms import AssignForm, GroupEditor


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _groups(ctx: Context) -> list[SecurityGroup]:
    """The groups of the page's VDC (its catalog entry: no Proxmox call)."""
    return [g for g in security_groups.security_groups(ctx) if g.vdc in ("", ctx.vdc)]


def _group(ctx: Context, name: str) -> SecurityGroup:
    """One group of the page's VDC; another VDC's is ``NotFound`` as a missing one."""
    for group in _groups(ctx):
        if group.name == name:
            return group
    raise NotFound("security group", name)


def _list_url(vdc: str) -> str:
    return reverse("security-group-list", args=[vdc])


def _say_not_updated(request: HttpRequest, realised: Realised) -> None:
    for failure in realised.failures:
        messages.error(request, failure.message[:1].upper() + failure.message[1:] + ".")


def _where(rule: Rule) -> str:
    """A rule's remote in words, as the form's choices say it."""
    if rule.group:
        return f"group {rule.group}'s VMs"
    if rule.vdc_networks:
        return "the VDC's networks"
    return f"anywhere ({ANYWHERE})" if rule.cidr == ANYWHERE else str(rule.cidr)


def _remote(group: SecurityGroup) -> list[dict[str, str]]:
    """The group's rules in words, for the list."""
    out = []
    for rule in group.rules:
        where = _where(rule)
        out.append(
            {
                "direction": rule.direction,
                "protocol": rule.protocol,
                "ports": rule.ports or "any",
                "remote": f"{'from' if rule.direction == 'in' else 'to'} {where}",
                "description": rule.description,
            }
        )
    return out


# ------------------------------------------------------------------------------------------ groups


@vdc_view
def group_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/security-groups/``: the VDC's groups with their rules."""
    vdc = _vdc(ctx)
    groups = [(g, _remote(g)) for g in _groups(ctx)]
    return render(
        request, "portal/security_groups/list.html", {"vdc": vdc, "groups": groups, "default": DEFAULT_GROUP}
    )


def _form_page(
    request: HttpRequest, ctx: Context, editor: GroupEditor, group: SecurityGroup | None
) -> HttpResponse:
    context = {
        "vdc": _vdc(ctx),
        "editor": editor,
        "group": group,
        "action": actions.UPDATE if group else actions.CREATE,
        "default": DEFAULT_GROUP,
    }
    return render(request, "portal/security_groups/form.html", context)


def _save(
    request: HttpRequest, ctx: Context, group: SecurityGroup | None
) -> tuple[GroupEditor, HttpResponseBase | None]:
    """The form sent: saved through the service (create, or update of ``group``), or shown again."""
    names = [g.name for g in _groups(ctx)]
    posted = request.method == "POST"
    editor = GroupEditor(
        names, request.POST if posted else None, group, more=posted and "more" in request.POST
    )
    if not posted or "more" in request.POST or not editor.is_valid():
        return editor, None
    values = editor.values()
    if group is None:
        changed = perform(
            lambda: security_groups.create_security_group(ctx, values),
            ctx=ctx,
            operation=actions.CREATE.mutation,
            name=values["name"],
        )
    else:
        changes = {"description": values["description"], "rules": values["rules"]}
        changed = perform(
            lambda: security_groups.update_security_group(ctx, group.name, changes),
            ctx=ctx,
            operation=actions.UPDATE.mutation,
            name=group.name,
        )
    if isinstance(changed, FlexPlaneError):
        editor.show_error(changed)
        return editor, None
    _say_not_updated(request, changed.realised)
    verb = "created" if group is None else "saved"
    messages.success(request, f"Security group {changed.group.name} was {verb}.")
    assert ctx.vdc is not None
    return editor, HttpResponseRedirect(_list_url(ctx.vdc), status=303)


@vdc_view
def group_create(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """``createSecurityGroup`` as a form: name, description and rules."""
    editor, done = _save(request, ctx, None)
    return done or _form_page(request, ctx, editor, None)


@vdc_view
def group_edit(request: HttpRequest, ctx: Context, group: str) -> HttpResponseBase:
    """``updateSecurityGroup`` as a form: its description and rules (every member VM's firewall follows)."""
    found = _group(ctx, group)  # NotFound: the 404 page
    editor, done = _save(request, ctx, found)
    return done or _form_page(request, ctx, editor, found)


@vdc_view
def group_delete(request: HttpRequest, ctx: Context, group: str) -> HttpResponse:
    """GET: a confirmation; POST (confirmed): ``deleteSecurityGroup``; a refusal is said in place."""
    vdc = _vdc(ctx)
    found = _group(ctx, group)  # NotFound: the 404 page
    return confirmation(
        request,
        ctx,
        actions.DELETE,
        lambda: security_groups.delete_security_group(ctx, found.name),
        page="portal/security_groups/delete.html",
        context={"vdc": vdc, "group": found, "delete": actions.DELETE},
        said=f"Security group {found.name} was deleted.",
        then=_list_url(vdc.id),
        name=found.name,
    )


# ------------------------------------------------------------------------------------------ a VM's groups


def vm_groups(ctx: Context, vm: VirtualMachine) -> dict[str, Any]:
    """The part of ``templates/portal/vms/_nics.html``'s context about the VM's security groups."""
    current = groups_in(vm.tags)
    return {
        "vm_groups": current,
        "assign_form": AssignForm(_groups(ctx), current),
        "assign": actions.ASSIGN,
    }


def _assign_page(
    request: HttpRequest, vm: VirtualMachine, form: AssignForm, status: int = 200
) -> HttpResponse:
    context = {"vm": vm, "assign_form": form, "assign": actions.ASSIGN, "vm_groups": groups_in(vm.tags)}
    return render(request, "portal/security_groups/assign.html", context, status=status)


@vdc_view
def vm_assign(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponseBase:
    """``assignSecurityGroups`` as a form (also on the VM's page): the VM is in exactly the groups ticked."""
    vm = vms.get_vm(ctx, vm_id(zone, vmid))  # NotFound: the 404 page
    assert ctx.vdc is not None
    form = AssignForm(_groups(ctx), groups_in(vm.tags), posted(request))
    if not form.is_bound or not form.is_valid():
        return _assign_page(request, vm, form)
    assigned = perform(
        lambda: security_groups.assign_security_groups(ctx, vm.id, form.cleaned_data["groups"]),
        ctx=ctx,
        operation=actions.ASSIGN.mutation,
    )
    if isinstance(assigned, FlexPlaneError):
        show_error(form, assigned)
        return _assign_page(request, vm, form)
    _say_not_updated(request, assigned.realised)
    messages.success(request, f"VM {vm.name} is in security group(s) {', '.join(assigned.groups)}.")
    return HttpResponseRedirect(reverse("vm-detail", args=[ctx.vdc, vm.zone, vm.vmid]), status=303)
