"""``Console.Open``: a VM's VNC console, relayed between the orchestrator and the node's own Proxmox.

The orchestrator (and only the callers of ``console_clients``) opens a stream naming a VM. The agent
then, on its own node:

1. asks Proxmox for a console ticket (``POST /nodes/{node}/qemu/{vmid}/vncproxy``, ``websocket=1``);
2. connects to ``vncwebsocket`` with that ticket, and answers the VM's VNC server's security itself
   (VNC authentication, the ticket as password, as Proxmox's own noVNC does): the ticket never leaves
   the node;
3. greets the caller as an RFB 3.8 server whose only security type is None, and relays the caller's
   bytes (the browser's noVNC, from ClientInit on) and the server's, unchanged, until either ends.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator
from typing import Any, NoReturn

import aiohttp
import grpc
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

from agent.auth import Context, caller_name
from agent.metrics import CONSOLES
from agent.proxmox import ProxmoxBadAnswer, ProxmoxClient, ProxmoxUnreachableError
from agentclient.errors import CLIENT_NOT_ALLOWED, ERROR_METADATA_KEY, PROXMOX_UNREACHABLE
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc

log = logging.getLogger(__name__)

RFB_38 = b"RFB 003.008\n"
RFB_37 = b"RFB 003.007\n"
SECURITY_NONE = 1
SECURITY_VNC = 2
# The handshakes (Proxmox's side, then the caller's) must be over within this long.
HANDSHAKE_TIMEOUT = 30.0
# The largest reason a VNC server may give for a refusal.
MAX_REASON = 4096
VMID_RANGE = (100, 999_999_999)


class ConsoleRefused(Exception):
    """The VM's VNC server, or the caller, did not complete its handshake; the message says how."""


class _Buffered:
    """Reads exact byte counts from a source of chunks."""

    def __init__(self) -> None:
        self.buffer = b""

    async def more(self) -> bytes:
        raise NotImplementedError

    async def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = await self.more()
            if not chunk:
                raise ConsoleRefused("the connection ended during the handshake")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def rest(self) -> bytes:
        """What was read past the handshake, to relay first."""
        data, self.buffer = self.buffer, b""
        return data


class _Server(_Buffered):
    """The VM's VNC server, behind Proxmox's vncwebsocket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        super().__init__()
        self.ws = ws

    async def more(self) -> bytes:
        frame = await self.ws.receive()
        return bytes(frame.data) if frame.type == aiohttp.WSMsgType.BINARY else b""


class _Caller(_Buffered):
    """The caller's stream of ConsoleInput messages, as bytes."""

    def __init__(self, requests: AsyncIterator[Any]) -> None:
        super().__init__()
        self.requests = requests

    async def first(self) -> Any:
        try:
            return await anext(self.requests)
        except StopAsyncIteration:
            return None

    async def more(self) -> bytes:
        while True:
            try:
                message = await anext(self.requests)
            except StopAsyncIteration:
                return b""
            if message.data:
                return bytes(message.data)


def vnc_response(password: str, challenge: bytes) -> bytes:
    """The answer to VNC authentication's challenge: DES with the password's bytes each bit-reversed."""
    key = (password.encode() + b"\0" * 8)[:8]
    key = bytes(int(f"{byte:08b}"[::-1], 2) for byte in key)
    encryptor = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()  # noqa: S305 - RFB 6.2.2 is single-block DES
    return encryptor.update(challenge) + encryptor.finalize()


async def _reason(server: _Buffered) -> str:
    (length,) = struct.unpack(">I", await server.read(4))
    return (await server.read(min(length, MAX_REASON))).decode("utf-8", "replace")


async def authenticate(server: _Server, password: str) -> None:
    """The client's half of the RFB handshake up to a successful SecurityResult (before ClientInit)."""
    version = await server.read(12)
    if not version.startswith(b"RFB 003."):
        raise ConsoleRefused(f"the VM's VNC server greeted with {version!r}, not RFB")
    await server.ws.send_bytes(RFB_38)
    (count,) = await server.read(1)
    if count == 0:
        raise ConsoleRefused(f"the VM's VNC server refused the connection: {await _reason(server)}")
    offered = set(await server.read(count))
    if SECURITY_VNC in offered:
        await server.ws.send_bytes(bytes([SECURITY_VNC]))
        await server.ws.send_bytes(vnc_response(password, await server.read(16)))
    elif SECURITY_NONE in offered:
        await server.ws.send_bytes(bytes([SECURITY_NONE]))
    else:
        raise ConsoleRefused(
            f"the VM's VNC server offers no security type the agent speaks ({sorted(offered)})"
        )
    (result,) = struct.unpack(">I", await server.read(4))
    if result != 0:
        raise ConsoleRefused(f"the VM's VNC server refused the console ticket: {await _reason(server)}")


class ConsoleServicer(agent_pb2_grpc.ConsoleServicer):
    """Relays VM consoles of this node for the callers in ``clients``."""

    def __init__(self, proxmox: ProxmoxClient, node: str, clients: frozenset[str]) -> None:
        self.proxmox = proxmox
        self.node = node
        self.clients = clients

    async def Open(self, request_iterator: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
        caller = caller_name(context)
        # The first message is read before a caller is refused: a refusal racing the caller's write of it
        # reaches the caller as INTERNAL ("Internal error from Core"), not as what it is.
        source = _Caller(request_iterator)
        try:
            async with asyncio.timeout(HANDSHAKE_TIMEOUT):
                first = await source.first()
        except TimeoutError:
            first = None
        if caller not in self.clients:
            CONSOLES.labels("refused").inc()
            log.warning("Console.Open refused for %s (%s): not in console_clients", caller, context.peer())
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"client certificate common name {caller!r} may not open consoles (console_clients)",
                trailing_metadata=((ERROR_METADATA_KEY, CLIENT_NOT_ALLOWED),),
            )
        vmid = int(first.vmid) if first is not None else 0
        if not VMID_RANGE[0] <= vmid <= VMID_RANGE[1]:
            await self._fail(context, grpc.StatusCode.INVALID_ARGUMENT, "the first message must name a VM id")
        path = f"/nodes/{self.node}/qemu/{vmid}"
        try:
            async with asyncio.timeout(HANDSHAKE_TIMEOUT):
                ws, ticket = await self._connect(context, path)
        except TimeoutError:
            await self._fail(context, grpc.StatusCode.UNAVAILABLE, "Proxmox's console did not answer in time")
        log.info("console of VM %d opened for %s", vmid, caller)
        outcome = "failed"
        try:
            try:
                async with asyncio.timeout(HANDSHAKE_TIMEOUT):
                    server = _Server(ws)
                    await authenticate(server, ticket)
                    yield agent_pb2.ConsoleOutput(data=RFB_38)
                    version = await source.read(12)
                    if version not in (RFB_38, RFB_37):
                        raise ConsoleRefused(f"the caller answered {version!r}, not RFB 3.7 or 3.8")
                    yield agent_pb2.ConsoleOutput(data=bytes([1, SECURITY_NONE]))
                    if await source.read(1) != bytes([SECURITY_NONE]):
                        raise ConsoleRefused("the caller chose a security type that was not offered")
                    if version == RFB_38:
                        yield agent_pb2.ConsoleOutput(data=struct.pack(">I", 0))
            except (ConsoleRefused, TimeoutError) as exc:
                outcome = "refused"
                reason = str(exc) or "the handshake did not complete in time"
                await self._fail(context, grpc.StatusCode.FAILED_PRECONDITION, reason, counted=False)
            if early := server.rest():
                yield agent_pb2.ConsoleOutput(data=early)
            pump = asyncio.create_task(self._pump(source, ws))
            try:
                async for frame in ws:
                    if frame.type != aiohttp.WSMsgType.BINARY:
                        break
                    yield agent_pb2.ConsoleOutput(data=bytes(frame.data))
            finally:
                pump.cancel()
            outcome = "closed"
        finally:
            await ws.close()
            CONSOLES.labels(outcome).inc()
            log.info("console of VM %d for %s: %s", vmid, caller, outcome)

    async def _connect(self, context: Context, path: str) -> tuple[aiohttp.ClientWebSocketResponse, str]:
        """A console ticket from Proxmox, and its vncwebsocket opened with it."""
        try:
            answer = await self.proxmox.request("POST", f"{path}/vncproxy", {"websocket": "1"})
            if answer.status >= 400:
                code = grpc.StatusCode.NOT_FOUND if "does not exist" in answer.message else None
                await self._fail(context, code or grpc.StatusCode.FAILED_PRECONDITION, answer.message)
            data = answer.data()
            if not isinstance(data, dict) or not data.get("ticket") or not data.get("port"):
                await self._fail(context, grpc.StatusCode.INTERNAL, "Proxmox's vncproxy answered no ticket")
            ticket, port = str(data["ticket"]), str(data["port"])
            ws = await self.proxmox.websocket(f"{path}/vncwebsocket", {"port": port, "vncticket": ticket})
        except ProxmoxUnreachableError as exc:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                str(exc),
                trailing_metadata=((ERROR_METADATA_KEY, PROXMOX_UNREACHABLE),),
            )
        except ProxmoxBadAnswer as exc:
            await self._fail(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        return ws, ticket

    @staticmethod
    async def _pump(source: _Caller, ws: aiohttp.ClientWebSocketResponse) -> None:
        """The caller's bytes to the VM's VNC server; when the caller is done, the websocket closes."""
        try:
            if early := source.rest():
                await ws.send_bytes(early)
            while chunk := await source.more():
                await ws.send_bytes(chunk)
        except (ConnectionError, aiohttp.ClientError):
            pass
        finally:
            await ws.close()

    @staticmethod
    async def _fail(
        context: Context, code: grpc.StatusCode, message: str, *, counted: bool = True
    ) -> NoReturn:
        if counted:
            CONSOLES.labels("refused").inc()
        log.warning("Console.Open: %s: %s", code.name, message)
        await context.abort(code, message)
