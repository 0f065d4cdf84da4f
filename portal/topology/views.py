"""The page ``/vdc/<vdc>/topology/``: the VDC drawn, zone by zone (``portal.topology.facts`` reads it,
``portal.topology.layout`` places it, ``templates/portal/topology/`` draws it as inline SVG), with the same
facts as lists for whoever does not see the drawing."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from orchestrator.services import vdcs
from orchestrator.services.context import Context
from portal.context import vdc_view
from portal.topology.facts import topology


@vdc_view
def topology_page(request: HttpRequest, ctx: Context) -> HttpResponse:
    """The VDC's networks per zone, its edge gateways, VMs and clusters, each linked to its page."""
    assert ctx.vdc is not None  # a vdc_view's context
    vdc = vdcs.get_vdc(ctx, ctx.vdc)
    return render(request, "portal/topology/topology.html", {"vdc": vdc, "topology": topology(ctx, vdc)})
