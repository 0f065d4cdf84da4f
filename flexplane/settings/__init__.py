"""Development settings: the devstack's defaults (``flexplane.settings.production`` for real deployments)."""

from flexplane.settings.base import *  # noqa: F403

DEBUG = env_bool("DEBUG", True)  # noqa: F405
FLEXPLANE_GRAPHIQL = env_bool("GRAPHIQL", True)  # noqa: F405
