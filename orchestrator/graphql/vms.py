"""Virtual machines."""

from __future__ import annotations

import graphene

from orchestrator.graphql.errors import domain_errors
from orchestrator.graphql.partial import report_partial
from orchestrator.services import vms
from orchestrator.services.vms import Page


class VirtualMachine(graphene.ObjectType):
    """A VM of a VDC."""

    id = graphene.ID(required=True, description="Global id: <zone>/<vmid>.")
    name = graphene.String(required=True)
    status = graphene.String(required=True, description="Proxmox's status: running, stopped, ...")
    zone = graphene.String(required=True)
    host = graphene.String(required=True, description="The Proxmox node it runs on.")
    vdc = graphene.String(required=True)
    cores = graphene.Int(required=True)
    memory_mb = graphene.Int(required=True)
    disk_gb = graphene.Float(required=True)


class VirtualMachineEdge(graphene.ObjectType):
    cursor = graphene.String(required=True)
    node = graphene.Field(VirtualMachine, required=True)


class PageInfo(graphene.ObjectType):
    has_next_page = graphene.Boolean(required=True)
    end_cursor = graphene.String()


class VirtualMachineConnection(graphene.ObjectType):
    edges = graphene.List(graphene.NonNull(VirtualMachineEdge), required=True)
    page_info = graphene.Field(PageInfo, required=True)

    @staticmethod
    def resolve_edges(page: Page, info: graphene.ResolveInfo) -> list[VirtualMachineEdge]:
        return [VirtualMachineEdge(cursor=c, node=vm) for c, vm in zip(page.cursors, page.items, strict=True)]

    @staticmethod
    def resolve_page_info(page: Page, info: graphene.ResolveInfo) -> PageInfo:
        return PageInfo(has_next_page=page.has_next, end_cursor=page.end_cursor)


class Query(graphene.ObjectType):
    virtual_machines = graphene.Field(
        VirtualMachineConnection,
        required=True,
        first=graphene.Int(description="Page size (default 50)."),
        after=graphene.String(description="The endCursor of the previous page."),
        description="VMs sorted by name. Scoped to the VDC named by the FlexPlane-VDC-ID header (its "
        "members and ADMIN); without it, the caller's VDCs (ADMIN: every VDC). Needs USER or "
        "ADMIN. Zones that do not answer are left out, each with an UNAVAILABLE error.",
    )

    @staticmethod
    @domain_errors
    def resolve_virtual_machines(
        root: None, info: graphene.ResolveInfo, first: int | None = None, after: str | None = None
    ) -> Page:
        return report_partial(info, vms.list_vms(info.context.flexplane, first=first, after=after))
