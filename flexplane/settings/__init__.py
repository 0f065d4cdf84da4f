"""Development settings: the devstack's defaults (``flexplane.settings.production`` for real deployments).

They serve this machine only, and sign with no key anyone else knows: ``make dev`` passes a key of
its own run (FLEXPLANE_SECRET_KEY); without one, each process makes its own (a restart signs the
browser out). The ASGI app refuses to start under them unless ALLOWED_HOSTS names loopback hosts
only, and refuses connections that arrive on any other address (``flexplane.loopback``), so
``python -m flexplane.serve --host 0.0.0.0`` under these settings answers no other machine: serve
with the production settings for that.
"""

import secrets

from flexplane.settings.base import *  # noqa: F403

DEBUG = env_bool("DEBUG", True)  # noqa: F405
FLEXPLANE_GRAPHIQL = env_bool("GRAPHIQL", True)  # noqa: F405
SECRET_KEY = env("SECRET_KEY", "") or secrets.token_urlsafe(50)  # noqa: F405
FLEXPLANE_LOOPBACK_ONLY = True
