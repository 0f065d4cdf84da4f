"""The root schema: it only composes each domain's mixins."""

import graphene

from orchestrator.graphql import (
    audit,
    catalog,
    enrollment,
    hosts,
    identity,
    networks,
    releases,
    security_groups,
    snapshots,
    tasks,
    usage,
    vdcs,
    vms,
    zones,
)


class Query(
    identity.Query,
    catalog.Query,
    zones.Query,
    hosts.Query,
    vdcs.Query,
    vms.Query,
    networks.Query,
    snapshots.Query,
    security_groups.Query,
    tasks.Query,
    usage.Query,
    enrollment.Query,
    releases.Query,
    audit.Query,
    graphene.ObjectType,
):
    pass


class Mutation(
    catalog.Mutation,
    zones.Mutation,
    hosts.Mutation,
    vdcs.Mutation,
    vms.Mutation,
    networks.Mutation,
    snapshots.Mutation,
    security_groups.Mutation,
    enrollment.Mutation,
    releases.Mutation,
    graphene.ObjectType,
):
    pass


schema = graphene.Schema(query=Query, mutation=Mutation)
