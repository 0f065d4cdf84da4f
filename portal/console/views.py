"""``/vdc/<vdc>/console/<zone>/<vmid>/``: a VM's console page, noVNC on a websocket to this app.

The page carries a ticket (``services.console.issue_ticket``): the decision that this user may open this
VM's console, signed, valid a few seconds; the websocket ``/ws/console/<ticket>/`` redeems it. The page
never learns anything of Proxmox: no ticket, host name or port of its.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from orchestrator.models.vms import vm_id
from orchestrator.services import console
from orchestrator.services.context import Context
from portal.console.consumers import PATIENCE, socket_path
from portal.context import vdc_view

# How many characters the page types into a VM at once (its "Paste text").
PASTE_LIMIT = 4096


@vdc_view
def console_page(request: HttpRequest, ctx: Context, zone: str, vmid: int) -> HttpResponse:
    ident = vm_id(zone, vmid)
    vm, ticket = console.ticketed_vm(ctx, ident)
    assert ctx.vdc is not None  # a vdc_view's context
    context = {
        "vm_ident": ident,
        "vm_name": vm.name,
        "zone": zone,
        "vmid": vmid,
        "socket_path": socket_path(ticket),
        "patience": f"{PATIENCE:g}",
        "paste_limit": PASTE_LIMIT,
        "back": reverse("vm-detail", kwargs={"vdc": ctx.vdc, "zone": zone, "vmid": vmid}),
    }
    response = render(request, "portal/console/console.html", context)
    response["Cache-Control"] = "no-store"  # the ticket is for this page view only
    return response
