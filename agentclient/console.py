"""The client of ``Console.Open``: a VM's console relayed by the agent of the VM's node (asyncio).

A console lasts as long as someone watches it, so it has no deadline; the first answer (the agent's
RFB greeting, once Proxmox's side is authenticated) has one, so that a refusal surfaces at once. Each
console has its own channel (grpc.aio), closed with it.

    stream = await open_console(pool.tls, target, 101)
    greeting = await stream.receive()        # b"RFB 003.008\\n"
    await stream.send(b"RFB 003.008\\n")
    ...
    await stream.close()
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import grpc

from agentclient.errors import AgentError, translate_error
from agentclient.identity import AgentTarget
from agentclient.pool import ClientTLS, channel_options
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc

OPEN_TIMEOUT = 15.0
# What a stream's read() answers at its end (grpc-stubs do not declare it).
_EOF = grpc.aio.EOF  # type: ignore[attr-defined]


class ConsoleRefused(AgentError):
    """The agent, or its Proxmox, would not open the console (no such VM on the node, the VM is not
    running, the VNC handshake failed); the message is theirs."""


_REFUSALS = (
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.INVALID_ARGUMENT,
)


def _translate(exc: grpc.aio.AioRpcError, target: AgentTarget, timeout: float) -> AgentError:
    if exc.code() in _REFUSALS:
        return ConsoleRefused(target, exc.details() or exc.code().name)
    return translate_error(cast(grpc.Call, exc), target, timeout)


class ConsoleStream:
    """One open console: bytes to send to the VM's VNC server, bytes it sent."""

    def __init__(self, channel: grpc.aio.Channel, call: Any, target: AgentTarget, first: bytes) -> None:
        self.channel = channel
        self.call = call
        self.target = target
        self._first: bytes | None = first

    async def send(self, data: bytes) -> None:
        try:
            await self.call.write(agent_pb2.ConsoleInput(data=data))
        except grpc.aio.AioRpcError as exc:
            raise _translate(exc, self.target, OPEN_TIMEOUT) from None

    async def receive(self) -> bytes | None:
        """The next bytes from the VM's VNC server; None when the console ended."""
        if self._first is not None:
            first, self._first = self._first, None
            return first
        try:
            message = await self.call.read()
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.CANCELLED:
                return None
            raise _translate(exc, self.target, OPEN_TIMEOUT) from None
        if message is _EOF:
            return None
        return bytes(message.data)

    async def close(self) -> None:
        """End the console (the agent closes Proxmox's side) and the channel."""
        self.call.cancel()
        await self.channel.close(None)


async def open_console(
    tls: ClientTLS, target: AgentTarget, vmid: int, *, timeout: float = OPEN_TIMEOUT, proxy: str = ""
) -> ConsoleStream:
    """Open VM vmid's console through target's agent; its greeting is the stream's first bytes.
    ``proxy``: the mesh hub's CONNECT proxy the channel tunnels through (``AgentPool.proxy_for``).

    Raises ConsoleRefused, ClientNotAllowed, ProxmoxUnreachable and the other AgentErrors.
    """
    channel = grpc.aio.secure_channel(
        target.address, tls.credentials(), options=channel_options(target, proxy)
    )
    call = agent_pb2_grpc.ConsoleStub(channel).Open()
    try:
        # The first write waits for the channel's connection (TCP, TLS) and the read for the greeting: one
        # deadline for both, so that an agent that accepts but never answers is a refusal, not a hang.
        async with asyncio.timeout(timeout):
            await call.write(agent_pb2.ConsoleInput(vmid=vmid))
            message = await call.read()
        if message is _EOF:
            raise ConsoleRefused(target, "the agent ended the console before it began")
    except grpc.aio.AioRpcError as exc:
        await channel.close(None)
        raise _translate(exc, target, timeout) from None
    except TimeoutError:
        call.cancel()
        await channel.close(None)
        raise ConsoleRefused(target, f"the console did not open within {timeout:g} s") from None
    except BaseException:
        call.cancel()
        await channel.close(None)
        raise
    return ConsoleStream(channel, call, target, bytes(message.data))
