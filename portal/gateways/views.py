"""A VDC's edge gateway pages: its public IPs, its port forwards, its gateway firewall; and what reaches
a VM from outside, on the VM's page. Thin adapters over the services the GraphQL API's fields and
mutations call (``services.gateways``: ``publicIps``, ``edgeGateways``, and the mutations of
:mod:`portal.gateways.actions`).

A public IP of another VDC answers as one that does not exist (the services report it so). What cannot be
undone (a release, removing a port forward or a firewall rule) asks for a confirmation first, naming what
goes, and says a refusal there; other refusals are said in place, on the page the form was on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from orchestrator.errors import FlexPlaneError, NotFound
from orchestrator.models import Vdc
from orchestrator.models.vms import VirtualMachine
from orchestrator.services import gateways, vdcs
from orchestrator.services.context import Context
from orchestrator.services.gateways import ForwardRequest, PublicAddress
from orchestrator.services.gateways.targets import of_vm, vm_targets
from portal.actions import Action
from portal.context import vdc_view
from portal.errors import failure_status
from portal.forms import posted, show_error
from portal.gateways import actions
from portal.gateways.forms import FIELDS, AllocateForm, ForwardForm, NatForm, RuleForm
from portal.perform import attempt, confirmation, perform


def _vdc(ctx: Context) -> Vdc:
    assert ctx.vdc is not None  # a vdc_view's context
    return vdcs.get_vdc(ctx, ctx.vdc)


def _redirect(name: str, vdc: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse(name, args=[vdc]), status=303)


def _do(ctx: Context, action: Action, call: Callable[[], object], **targets: str) -> FlexPlaneError | None:
    """Run a mutation's service call under the portal's audit trail; its expected failure, if any."""
    return attempt(call, ctx=ctx, operation=action.mutation, **targets)


# ------------------------------------------------------------------------------------------ public IPs


def _ips_page(
    request: HttpRequest,
    ctx: Context,
    form: AllocateForm | None = None,
    failure: FlexPlaneError | None = None,
) -> HttpResponse:
    vdc = _vdc(ctx)
    zones = gateways.gateway_zones(ctx, vdc)
    ips = gateways.list_public_ips(ctx)
    targets = vm_targets(ctx)
    rows = [(ip, NatForm([t for t in targets if t.zone == ip.zone])) for ip in ips]
    context = {
        "vdc": vdc,
        "rows": rows,
        "zones": zones,
        "form": form or AllocateForm(zones),
        "failure": failure,
        "used": len(ips),
        "quota": vdc.quota_public_ips,
        "allocate": actions.ALLOCATE,
        "attach": actions.ATTACH,
        "detach": actions.DETACH,
    }
    return render(request, "portal/gateways/public_ips.html", context, status=failure_status(failure))


@vdc_view
def public_ip_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/public-ips/``: the VDC's public IPs, their 1:1 NAT and the allocate form."""
    return _ips_page(request, ctx)


@vdc_view
def public_ip_allocate(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """``allocatePublicIp`` as a form; shown again with the service's error in place."""
    vdc = _vdc(ctx)
    form = AllocateForm(gateways.gateway_zones(ctx, vdc), posted(request))
    if form.is_bound and form.is_valid():
        made = perform(
            lambda: gateways.allocate_public_ip(ctx, form.cleaned_data["zone"]),
            ctx=ctx,
            operation=actions.ALLOCATE.mutation,
        )
        if not isinstance(made, FlexPlaneError):
            messages.success(request, f"Public IP {made.address} is yours in zone {made.zone}.")
            return _redirect("public-ip-list", vdc.id)
        show_error(form, made)
    return _ips_page(request, ctx, form)


def _one(ctx: Context, address: str) -> PublicAddress:
    for ip in gateways.list_public_ips(ctx):
        if ip.address == address:
            return ip
    raise NotFound("public IP", address)


@vdc_view
def public_ip_release(request: HttpRequest, ctx: Context, address: str) -> HttpResponse:
    """GET: what releasing means, and a confirmation; POST (confirmed): ``releasePublicIp``."""
    vdc = _vdc(ctx)
    ip = _one(ctx, address)  # another VDC's: the 404 page
    return confirmation(
        request,
        ctx,
        actions.RELEASE,
        lambda: gateways.release_public_ip(ctx, address),
        page="portal/gateways/release.html",
        context={"vdc": vdc, "ip": ip, "release": actions.RELEASE},
        said=f"Public IP {address} went back to the zone's pool.",
        then=reverse("public-ip-list", args=[vdc.id]),
        address=address,
    )


@vdc_view
def public_ip_attach(request: HttpRequest, ctx: Context, address: str) -> HttpResponseBase:
    """``attachPublicIp`` (POST): 1:1 NAT to the VM address chosen."""
    ip = _one(ctx, address)
    target = str(request.POST.get("to_address") or "") if request.method == "POST" else ""
    if not target:
        return _redirect("public-ip-list", _vdc(ctx).id)
    failure = _do(
        ctx, actions.ATTACH, lambda: gateways.attach_public_ip(ctx, ip.address, target), address=address
    )
    if failure is not None:
        return _ips_page(request, ctx, failure=failure)
    messages.success(request, f"Public IP {address} now reaches {target} (1:1 NAT).")
    return _redirect("public-ip-list", _vdc(ctx).id)


@vdc_view
def public_ip_detach(request: HttpRequest, ctx: Context, address: str) -> HttpResponseBase:
    """``detachPublicIp`` (POST)."""
    ip = _one(ctx, address)
    if request.method == "POST":
        failure = _do(
            ctx, actions.DETACH, lambda: gateways.detach_public_ip(ctx, ip.address), address=address
        )
        if failure is not None:
            return _ips_page(request, ctx, failure=failure)
        messages.success(request, f"Public IP {address} has no 1:1 NAT any more.")
    return _redirect("public-ip-list", _vdc(ctx).id)


# ------------------------------------------------------------------------------------------ port forwards


def _forwards_page(
    request: HttpRequest, ctx: Context, form: ForwardForm | None = None, failure: FlexPlaneError | None = None
) -> HttpResponse:
    vdc = _vdc(ctx)
    ips = gateways.list_public_ips(ctx)
    targets = vm_targets(ctx)
    names = {t.address: t.vm for t in targets}
    forwards = [(f, names.get(f.to_address)) for ip in ips for f in ip.forwards]
    context = {
        "vdc": vdc,
        "forwards": forwards,
        "form": form or ForwardForm([ip.address for ip in ips], targets),
        "failure": failure,
        "has_ips": bool(ips),
        "forward": actions.FORWARD,
    }
    return render(request, "portal/gateways/forwards.html", context, status=failure_status(failure))


@vdc_view
def forward_list(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/port-forwards/``: the VDC's port forwards and the form adding one."""
    return _forwards_page(request, ctx)


@vdc_view
def forward_add(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """``addPortForward`` as a form; shown again with the service's error next to its field."""
    ips = gateways.list_public_ips(ctx)
    form = ForwardForm([ip.address for ip in ips], vm_targets(ctx), posted(request))
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        request_ = ForwardRequest(
            data["public_ip"], data["protocol"], data["port"], data["to_address"], data["to_port"]
        )
        failure = _do(ctx, actions.FORWARD, lambda: gateways.add_port_forward(ctx, request_))
        if failure is None:
            said = f"Port {data['port']}/{data['protocol']} of {data['public_ip']}"
            messages.success(request, f"{said} now reaches {data['to_address']}.")
            return _redirect("port-forward-list", _vdc(ctx).id)
        show_error(form, failure, FIELDS)
    return _forwards_page(request, ctx, form)


@vdc_view
def forward_remove(
    request: HttpRequest, ctx: Context, address: str, protocol: str, port: int
) -> HttpResponse:
    """GET: the port forward, what removing it means, and a confirmation; POST (confirmed):
    ``removePortForward``, then the list of port forwards."""
    vdc = _vdc(ctx)
    ip = _one(ctx, address)  # another VDC's: the 404 page
    found = next((f for f in ip.forwards if (f.protocol, f.port) == (protocol, port)), None)
    if found is None:
        raise NotFound("port forward", f"{address}:{port}/{protocol}")
    names = {t.address: t.vm for t in vm_targets(ctx)}
    return confirmation(
        request,
        ctx,
        actions.UNFORWARD,
        lambda: gateways.remove_port_forward(ctx, address, protocol, port),
        page="portal/gateways/unforward.html",
        context={
            "vdc": vdc,
            "forward": found,
            "vm_name": names.get(found.to_address),
            "unforward": actions.UNFORWARD,
        },
        said=f"Port {port}/{protocol} of {address} is no longer forwarded.",
        then=reverse("port-forward-list", args=[vdc.id]),
        address=address,
    )


# ------------------------------------------------------------------------------------------ firewall


def _firewall_page(
    request: HttpRequest, ctx: Context, form: RuleForm | None = None, failure: FlexPlaneError | None = None
) -> HttpResponse:
    vdc = _vdc(ctx)
    zones = gateways.gateway_zones(ctx, vdc)
    shown = [(g.gateway, gateways.live(ctx, g.gateway)) for g in gateways.list_edge_gateways(ctx)]
    context = {
        "vdc": vdc,
        "gateways": shown,
        "zones": zones,
        "form": form or RuleForm(zones),
        "failure": failure,
        "add_rule": actions.ADD_RULE,
    }
    return render(request, "portal/gateways/firewall.html", context, status=failure_status(failure))


@vdc_view
def firewall(request: HttpRequest, ctx: Context) -> HttpResponse:
    """``/vdc/<vdc>/gateway-firewall/``: each of the VDC's gateways (where it runs, its health and counters,
    read live) with its firewall rules, and the form adding one."""
    return _firewall_page(request, ctx)


@vdc_view
def rule_add(request: HttpRequest, ctx: Context) -> HttpResponseBase:
    """``addGatewayFirewallRule`` as a form."""
    form = RuleForm(gateways.gateway_zones(ctx, _vdc(ctx)), posted(request))
    if form.is_bound and form.is_valid():
        zone = form.cleaned_data["zone"]
        failure = _do(ctx, actions.ADD_RULE, lambda: gateways.add_firewall_rule(ctx, zone, form.values()))
        if failure is None:
            messages.success(request, f"The gateway firewall of zone {zone} has the new rule.")
            return _redirect("gateway-firewall", _vdc(ctx).id)
        show_error(form, failure, FIELDS)
    return _firewall_page(request, ctx, form)


@vdc_view
def rule_remove(request: HttpRequest, ctx: Context, zone: str, position: int) -> HttpResponse:
    """GET: the rule, what removing it means, and a confirmation; POST (confirmed):
    ``removeGatewayFirewallRule``, then the gateway firewall page."""
    vdc = _vdc(ctx)
    rules = next((g.gateway.rules for g in gateways.list_edge_gateways(ctx) if g.gateway.zone == zone), ())
    if not 0 <= position < len(rules):
        raise NotFound("gateway firewall rule", f"{position + 1} of zone {zone}")
    return confirmation(
        request,
        ctx,
        actions.REMOVE_RULE,
        lambda: gateways.remove_firewall_rule(ctx, zone, position),
        page="portal/gateways/rule_remove.html",
        context={
            "vdc": vdc,
            "zone": zone,
            "position": position,
            "rule": rules[position],
            "remove_rule": actions.REMOVE_RULE,
        },
        said=f"Rule {position + 1} of the gateway firewall of zone {zone} was removed.",
        then=reverse("gateway-firewall", args=[vdc.id]),
        zone=zone,
    )


# ------------------------------------------------------------------------------------------ a VM's page


def vm_public(ctx: Context, vm: VirtualMachine) -> dict[str, Any]:
    """The context of ``templates/portal/gateways/_vm_public.html`` on a VM's page: its public IPs (1:1
    NAT) and the port forwards to it (one read of the gateways)."""
    return {"exposure": of_vm(ctx, vm)}
