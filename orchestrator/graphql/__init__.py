"""The GraphQL API: each domain module exports its ``Query`` (and later ``Mutation``) mixin."""
