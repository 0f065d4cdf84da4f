"""Which callers the agent serves: a server interceptor on every method, health included.

TLS (``require_client_auth=True``) already proved that the caller holds a certificate
of the platform CA meant for client authentication (gRPC's TLS stack checks the
extended key usage). This interceptor then requires its common name to be one of
``allowed_clients``; anything else ends with PERMISSION_DENIED before the method runs.

One exception: the node itself (a certificate naming this agent's own identity) may ask the
health service and ``Agent.GetInfo``, and nothing else. Self-update's apply step uses it to
see that the version it restarted into answers (agent.update).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import grpc

from agent.interceptors import AroundInterceptor, Context
from agentclient.errors import CLIENT_NOT_ALLOWED, ERROR_METADATA_KEY

log = logging.getLogger(__name__)

# What the node's own certificate may call.
SELF_METHODS = frozenset({"/grpc.health.v1.Health/Check", "/flexplane.agent.v1.Agent/GetInfo"})


def caller_name(context: Context) -> str:
    """The common name of the caller's certificate ("" when there is none)."""
    names = list(context.auth_context().get("x509_common_name", ()))
    return names[0].decode("utf-8", "replace") if len(names) == 1 else ""


class ClientAllowlist(AroundInterceptor):
    """Refuses callers whose certificate common name is not in ``allowed`` (or ``own`` on SELF_METHODS)."""

    def __init__(self, allowed: frozenset[str], own: str | None = None) -> None:
        self.allowed = allowed
        self.own = own

    def refusal(self, context: Context, method: str = "") -> str | None:
        """Why this caller is refused, or None if it is allowed."""
        auth = context.auth_context()
        names = [name.decode("utf-8", "replace") for name in auth.get("x509_common_name", ())]
        if len(names) != 1:
            return "the client certificate must carry exactly one common name"
        if names[0] == self.own and method in SELF_METHODS:
            return None
        if names[0] not in self.allowed:
            return f"client certificate common name {names[0]!r} is not in this agent's allowed_clients"
        return None

    async def _check(self, context: Context, method: str) -> None:
        reason = self.refusal(context, method)
        if reason is not None:
            log.warning("refused caller %s: %s", context.peer(), reason)
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                reason,
                trailing_metadata=((ERROR_METADATA_KEY, CLIENT_NOT_ALLOWED),),
            )

    @contextlib.asynccontextmanager
    async def around(self, method: str, context: Context) -> AsyncIterator[None]:
        """The caller checked before the method runs."""
        await self._check(context, method)
        yield


async def require_caller(context: Context, clients: frozenset[str], setting: str) -> str:
    """The caller's common name when it is in clients (a service's own stricter list, named setting);
    otherwise the call ends with PERMISSION_DENIED and "client-not-allowed"."""
    caller = caller_name(context)
    if caller not in clients:
        log.warning("refused caller %s (%s) of a service for %s only", caller, context.peer(), setting)
        await context.abort(
            grpc.StatusCode.PERMISSION_DENIED,
            f"client certificate common name {caller!r} may not call this service ({setting})",
            trailing_metadata=((ERROR_METADATA_KEY, CLIENT_NOT_ALLOWED),),
        )
    return caller
