"""Zones and hosts."""

from __future__ import annotations

import graphene

from orchestrator.graphql.errors import domain_errors
from orchestrator.graphql.partial import report_partial
from orchestrator.services import inventory
from orchestrator.services.inventory import HostStatus, ZoneStatus


class Host(graphene.ObjectType):
    """A Proxmox node of a zone."""

    name = graphene.String(required=True, description="The node's name in Proxmox.")
    online = graphene.Boolean(required=True, description="Whether Proxmox reports the node online.")
    cordoned = graphene.Boolean(required=True, description="Cordoned hosts take no new VMs.")

    @staticmethod
    def resolve_name(status: HostStatus, info: graphene.ResolveInfo) -> str:
        return status.host.node

    @staticmethod
    def resolve_cordoned(status: HostStatus, info: graphene.ResolveInfo) -> bool:
        return status.host.cordoned


class Zone(graphene.ObjectType):
    """A Proxmox cluster that VMs are placed in."""

    id = graphene.ID(required=True)
    name = graphene.String(required=True)
    hosts = graphene.List(graphene.NonNull(Host), required=True)

    @staticmethod
    def resolve_id(status: ZoneStatus, info: graphene.ResolveInfo) -> str:
        return status.zone.id

    @staticmethod
    def resolve_name(status: ZoneStatus, info: graphene.ResolveInfo) -> str:
        return status.zone.name


class Query(graphene.ObjectType):
    zones = graphene.List(
        graphene.NonNull(Zone),
        required=True,
        description="Every zone with its hosts. Needs USER or ADMIN. A zone that does not answer is "
        "listed with its hosts offline and an UNAVAILABLE error naming it.",
    )

    @staticmethod
    @domain_errors
    def resolve_zones(root: None, info: graphene.ResolveInfo) -> list[ZoneStatus]:
        return report_partial(info, inventory.zone_statuses(info.context.flexplane))
