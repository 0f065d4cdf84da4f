"""The root schema: it only composes each domain's mixins."""

import graphene

from orchestrator.graphql import catalog, identity, vms


class Query(identity.Query, catalog.Query, vms.Query, graphene.ObjectType):
    pass


schema = graphene.Schema(query=Query)
