"""The root schema: it only composes each domain's mixins."""

import graphene

from orchestrator.graphql import (
    access,
    audit,
    catalog,
    clusters,
    enrollment,
    gateways,
    hosts,
    identity,
    networks,
    releases,
    security_groups,
    service_accounts,
    snapshots,
    tasks,
    usage,
    vdcs,
    vms,
    volumes,
    zones,
)


class Query(
    identity.Query,
    catalog.Query,
    zones.Query,
    hosts.Query,
    vdcs.Query,
    vms.Query,
    volumes.Query,
    networks.Query,
    clusters.Query,
    gateways.Query,
    snapshots.Query,
    security_groups.Query,
    tasks.Query,
    usage.Query,
    enrollment.Query,
    releases.Query,
    audit.Query,
    access.Query,
    service_accounts.Query,
    graphene.ObjectType,
):
    pass


class Mutation(
    catalog.Mutation,
    zones.Mutation,
    hosts.Mutation,
    vdcs.Mutation,
    vms.Mutation,
    volumes.Mutation,
    networks.Mutation,
    clusters.Mutation,
    gateways.Mutation,
    snapshots.Mutation,
    security_groups.Mutation,
    enrollment.Mutation,
    releases.Mutation,
    access.Mutation,
    service_accounts.Mutation,
    graphene.ObjectType,
):
    pass


schema = graphene.Schema(query=Query, mutation=Mutation)
