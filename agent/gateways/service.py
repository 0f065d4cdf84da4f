"""The agent's Gateways service: the orchestrator's calls, each run in a thread (the tools block)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, NoReturn

import grpc

from agent.auth import Context, require_caller
from agent.gateways.manager import ApplyFailed, GatewayManager
from agentclient.errors import ERROR_METADATA_KEY
from agentclient.gateways import (
    FIELD_METADATA_KEY,
    GATEWAY_FAILED,
    GATEWAY_REFUSED,
    GatewaySpecError,
    check_gateway_id,
    spec_from_proto,
    state_to_proto,
)
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc

log = logging.getLogger(__name__)


class GatewaysServicer(agent_pb2_grpc.GatewaysServicer):
    """Applies, reports and removes this node's gateways for the callers in ``clients`` only."""

    def __init__(self, manager: GatewayManager, clients: frozenset[str]) -> None:
        self.manager = manager
        self.clients = clients

    async def Apply(self, request: Any, context: Context) -> Any:
        caller = await require_caller(context, self.clients, "gateway_clients")
        try:
            spec = spec_from_proto(request)
        except GatewaySpecError as exc:
            await _refuse(context, caller, str(request.id)[:64], exc)
        try:
            state = await asyncio.to_thread(self.manager.apply, spec)
        except ApplyFailed as exc:
            await _failed(context, caller, spec.id, exc)
        log.info("Gateways.Apply %s generation %d for %s", spec.id, spec.generation, caller)
        return state_to_proto(state)

    async def Get(self, request: Any, context: Context) -> Any:
        caller = await require_caller(context, self.clients, "gateway_clients")
        gateway_id = await _gateway_id(context, caller, request)
        state = await asyncio.to_thread(self.manager.state, gateway_id)
        if state is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"this node has no gateway {gateway_id}")
        return state_to_proto(state)

    async def Remove(self, request: Any, context: Context) -> Any:
        caller = await require_caller(context, self.clients, "gateway_clients")
        gateway_id = await _gateway_id(context, caller, request)
        try:
            removed = await asyncio.to_thread(self.manager.remove, gateway_id)
        except ApplyFailed as exc:
            await _failed(context, caller, gateway_id, exc)
        log.info("Gateways.Remove %s for %s: %s", gateway_id, caller, "removed" if removed else "none")
        return agent_pb2.RemoveGatewayReply(removed=removed)


async def _gateway_id(context: Context, caller: str, request: Any) -> str:
    try:
        return check_gateway_id(request.id)
    except GatewaySpecError as exc:
        await _refuse(context, caller, str(request.id)[:64], exc)


async def _refuse(context: Context, caller: str, gateway: str, exc: GatewaySpecError) -> NoReturn:
    log.warning("Gateways %r for %s refused: %s", gateway, caller, exc)
    await context.abort(
        grpc.StatusCode.INVALID_ARGUMENT,
        str(exc),
        trailing_metadata=((ERROR_METADATA_KEY, GATEWAY_REFUSED), (FIELD_METADATA_KEY, exc.field)),
    )


async def _failed(context: Context, caller: str, gateway: str, exc: ApplyFailed) -> NoReturn:
    log.warning("Gateways %s for %s failed: %s", gateway, caller, exc)
    await context.abort(
        grpc.StatusCode.FAILED_PRECONDITION,
        str(exc),
        trailing_metadata=((ERROR_METADATA_KEY, GATEWAY_FAILED),),
    )
