"""Use-cases: authorization, validation, quotas, placement. Portal views and GraphQL resolvers
are thin adapters over these functions; neither talks to a source directly."""
