"""The root schema: it only composes each domain's mixins."""

import graphene

from orchestrator.graphql import catalog, enrollment, hosts, identity, releases, tasks, vdcs, vms, zones


class Query(
    identity.Query,
    catalog.Query,
    zones.Query,
    hosts.Query,
    vdcs.Query,
    vms.Query,
    tasks.Query,
    enrollment.Query,
    releases.Query,
    graphene.ObjectType,
):
    pass


class Mutation(
    catalog.Mutation,
    zones.Mutation,
    hosts.Mutation,
    vdcs.Mutation,
    vms.Mutation,
    enrollment.Mutation,
    releases.Mutation,
    graphene.ObjectType,
):
    pass


schema = graphene.Schema(query=Query, mutation=Mutation)
