"""Calls to a host's agent beyond its Proxmox proxy: edge gateways and "update now".

The agent's errors become domain errors here, as ``ProxmoxSource.host_call`` makes them for the proxy,
so that services never see an ``AgentError``: ``Unavailable`` when the agent did not answer (its
message the agent client's), ``ValidationFailed`` when the node refused a gateway's field (the field
as the node names it, e.g. ``forwards[2].port``, and the node's reason), ``Conflict`` when the agent
does not update itself, and ``UpstreamFailure`` for any other refusal (the agent client's words).
"""

from __future__ import annotations

from agentclient import AgentDeadlineExceeded, AgentError, AgentPool, AgentTarget, AgentUnavailable
from agentclient.gateways import GatewayRefused, GatewaySpec, GatewayState
from agentclient.pool import UpdateNowResult
from orchestrator.errors import Conflict, FlexPlaneError, Unavailable, UpstreamFailure, ValidationFailed


class HostAgents:
    """One host's agent at a time, by its target; ``where`` names the host in the errors raised."""

    def __init__(self, pool: AgentPool) -> None:
        self.pool = pool

    def apply_gateway(
        self, target: AgentTarget, spec: GatewaySpec, *, where: str, timeout: float
    ) -> GatewayState:
        """Run the gateway on the host exactly as ``spec`` says (idempotent, all or nothing there)."""
        try:
            return self.pool.apply_gateway(target, spec, timeout=timeout)
        except AgentError as exc:
            raise _domain(where, exc) from exc

    def gateway_state(
        self, target: AgentTarget, gateway_id: str, *, where: str, timeout: float
    ) -> GatewayState | None:
        """The gateway's state on the host; None when the host runs no such gateway."""
        try:
            return self.pool.gateway_state(target, gateway_id, timeout=timeout)
        except AgentError as exc:
            raise _domain(where, exc) from exc

    def remove_gateway(self, target: AgentTarget, gateway_id: str, *, where: str, timeout: float) -> None:
        """Remove the gateway from the host (one it does not run is no error)."""
        try:
            self.pool.remove_gateway(target, gateway_id, timeout=timeout)
        except AgentError as exc:
            raise _domain(where, exc) from exc

    def update_now(self, target: AgentTarget, *, where: str, timeout: float) -> UpdateNowResult:
        """Have the host's agent check its release channel now; ``Conflict`` when it does not update
        itself (the agent answers FAILED_PRECONDITION)."""
        try:
            return self.pool.update_now(target, timeout=timeout)
        except AgentError as exc:
            if "FAILED_PRECONDITION" in str(exc):
                raise Conflict(str(exc)) from exc
            raise _domain(where, exc) from exc


def _domain(where: str, exc: AgentError) -> FlexPlaneError:
    if isinstance(exc, AgentUnavailable | AgentDeadlineExceeded):
        return Unavailable(where, str(exc))
    if isinstance(exc, GatewayRefused):
        return ValidationFailed(exc.field or "gateway", exc.detail)
    return UpstreamFailure(where, str(exc))
