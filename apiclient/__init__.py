"""flex.plane's Python client of its GraphQL API, for automation users (scripts, a CLI, Ansible).

Typed operations generated from schema.graphql (``apiclient.generated``, `make schema`), and around them
authentication, typed errors, tasks followed and connections paged (``apiclient.client``). It imports
nothing of the orchestrator and installs alone (distributions/flexplane-client).
"""

from apiclient.auth import BearerToken, ServiceAccountKey
from apiclient.client import FlexPlane
from apiclient.errors import (
    ApiError,
    Conflict,
    Forbidden,
    InternalError,
    InvalidInput,
    NoCapacity,
    NotFound,
    Problem,
    ProtocolError,
    QuotaExceeded,
    TaskFailed,
    TaskTimedOut,
    Unauthenticated,
    Unavailable,
    UpstreamFailure,
)

__all__ = [
    "ApiError",
    "BearerToken",
    "Conflict",
    "FlexPlane",
    "Forbidden",
    "InternalError",
    "InvalidInput",
    "NoCapacity",
    "NotFound",
    "Problem",
    "ProtocolError",
    "QuotaExceeded",
    "ServiceAccountKey",
    "TaskFailed",
    "TaskTimedOut",
    "Unauthenticated",
    "Unavailable",
    "UpstreamFailure",
]
