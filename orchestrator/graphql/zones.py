"""Zones: the Proxmox clusters VMs are placed in, each with its hosts.

Reading zones needs USER or ADMIN; every mutation needs ADMIN. A mutation's expected failures
are data: ``errors { field message code }``.
"""

from __future__ import annotations

import graphene

from orchestrator.graphql.core import ADMIN, ServiceMutation, Shared, flexplane
from orchestrator.graphql.errors import domain_errors, error_types
from orchestrator.graphql.hosts import Host
from orchestrator.graphql.inputs import input_type
from orchestrator.graphql.partial import report_partial
from orchestrator.models import Zone as ZoneModel
from orchestrator.models.catalog import ZONE_INPUTS
from orchestrator.services import catalog, inventory
from orchestrator.services.inventory import HostStatus, ZoneStatus

ZoneErrorCode, ZoneError = error_types("Zone")


def _zone(root: ZoneStatus | ZoneModel) -> ZoneModel:
    return root.zone if isinstance(root, ZoneStatus) else root


class ZoneNetworkSettings(graphene.ObjectType):
    """How a zone builds its tenant networks (Proxmox SDN)."""

    type = graphene.String(required=True, description="vxlan (among its hosts) or vlan (on one bridge).")
    bridge = graphene.String(required=True, description="The bridge VLANs ride on (vlan only).")
    id_first = graphene.Int(required=True, description="The first VXLAN id or VLAN tag handed out.")
    id_last = graphene.Int(required=True, description="The last VXLAN id or VLAN tag handed out.")
    mtu = graphene.Int(required=True)
    ranges = graphene.List(
        graphene.NonNull(graphene.String), required=True, description="Ranges allowed besides RFC 1918."
    )
    dns = graphene.List(graphene.NonNull(graphene.String), required=True, description="Default resolvers.")
    routed = graphene.Boolean(
        required=True,
        description="Whether the site routes its tenant networks to the management cluster (else tenant "
        "clusters' workers reach their control planes through the VDC's edge gateway).",
    )


class ZoneExternalNetwork(graphene.ObjectType):
    """Where a zone's edge gateways have their uplink, and the public addresses they hand out."""

    bridge = graphene.String(required=True, description="The external bridge (empty: no edge gateways).")
    vlan = graphene.Int(description="Its VLAN tag; null: untagged.")
    cidr = graphene.String(required=True)
    gateway = graphene.String(required=True, description="The external network's router.")
    pool = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="Public address ranges, CIDRs, addresses.",
    )
    nodes = graphene.List(
        graphene.NonNull(graphene.String),
        required=True,
        description="The hosts that may run edge gateways (empty: any host of the zone).",
    )


class Zone(graphene.ObjectType):
    """A Proxmox cluster that VMs are placed in."""

    id = graphene.ID(required=True)
    name = graphene.String(required=True)
    description = graphene.String(required=True)
    hosts = graphene.List(graphene.NonNull(Host), required=True)
    network = graphene.Field(ZoneNetworkSettings, required=True)
    external_network = graphene.Field(ZoneExternalNetwork, required=True)

    @staticmethod
    def resolve_external_network(
        root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo
    ) -> ZoneExternalNetwork:
        zone = _zone(root)
        return ZoneExternalNetwork(
            bridge=zone.external_bridge,
            vlan=zone.external_vlan or None,
            cidr=zone.external_cidr,
            gateway=zone.external_gateway,
            pool=zone.public_pool,
            nodes=zone.gateway_hosts,
        )

    @staticmethod
    def resolve_network(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> ZoneNetworkSettings:
        zone = _zone(root)
        return ZoneNetworkSettings(
            type=zone.network_type,
            bridge=zone.network_bridge,
            id_first=zone.network_id_first,
            id_last=zone.network_id_last,
            mtu=zone.network_mtu,
            ranges=zone.ranges,
            dns=zone.dns_servers,
            routed=zone.network_routed,
        )

    @staticmethod
    def resolve_id(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> str:
        return _zone(root).id

    @staticmethod
    def resolve_name(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> str:
        return _zone(root).name

    @staticmethod
    def resolve_description(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> str:
        return _zone(root).description

    @staticmethod
    def resolve_hosts(root: ZoneStatus | ZoneModel, info: graphene.ResolveInfo) -> list[HostStatus]:
        if isinstance(root, ZoneStatus):
            return root.hosts
        return next((z.hosts for z in inventory.zone_statuses(flexplane(info)) if z.zone.id == root.id), [])


ZoneInput = input_type("ZoneInput", ZONE_INPUTS)
ZoneUpdateInput = input_type("ZoneUpdateInput", ZONE_INPUTS, update=True)


class ZoneMutation(ServiceMutation):
    class Meta:
        abstract = True

    shared = Shared(ADMIN, ZoneError, "zone")
    zone = graphene.Field(Zone)


class CreateZone(ZoneMutation):
    class Meta:
        service = catalog.create_zone
        description = "Add a zone (a Proxmox cluster); add its hosts next."

    class Arguments:
        input = ZoneInput(required=True)


class UpdateZone(ZoneMutation):
    class Meta:
        service = catalog.update_zone
        description = "Change a zone's name, description or network settings (for networks made later)."

    class Arguments:
        id = graphene.ID(required=True)
        input = ZoneUpdateInput(required=True)


class DeleteZone(ZoneMutation):
    class Meta:
        service = catalog.delete_zone
        description = "Remove a zone; refused (CONFLICT) while it has hosts or VDCs allow it."

    class Arguments:
        id = graphene.ID(required=True)

    zone = graphene.Field(Zone, description="The zone as it was.")


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
        return report_partial(info, inventory.zone_statuses(flexplane(info)))


class Mutation(graphene.ObjectType):
    create_zone = CreateZone.Field()
    update_zone = UpdateZone.Field()
    delete_zone = DeleteZone.Field()
