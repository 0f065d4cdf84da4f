"""The root schema: it only composes each domain's mixins."""

import graphene

from orchestrator.graphql import catalog, identity, tasks, vdcs, vms


class Query(identity.Query, catalog.Query, vdcs.Query, vms.Query, tasks.Query, graphene.ObjectType):
    pass


class Mutation(catalog.Mutation, vdcs.Mutation, vms.Mutation, graphene.ObjectType):
    pass


schema = graphene.Schema(query=Query, mutation=Mutation)
