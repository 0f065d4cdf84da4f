"""Console.Open end to end: the orchestrator's certificate, a real agent, the fake Proxmox's VNC server.

The agent answers Proxmox's VNC security with the console ticket itself; the caller meets an RFB 3.8
server offering security type None, then the VM's own ServerInit.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentclient import AgentTarget, ClientNotAllowed
from agentclient.console import ConsoleRefused, ConsoleStream, open_console
from tests.agent.conftest import AgentProcess, Pki

RFB = b"RFB 003.008\n"


class Reader:
    """Exact byte counts from a console stream (its chunks need not follow RFB's messages)."""

    def __init__(self, stream: ConsoleStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = await self.stream.receive()
            assert chunk is not None, f"the console ended after {self.buffer!r}"
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


async def handshake(stream: ConsoleStream) -> bytes:
    """The client's RFB handshake through ClientInit; answers the server's name from ServerInit."""
    reader = Reader(stream)
    assert await reader.read(12) == RFB
    await stream.send(RFB)
    assert await reader.read(2) == b"\x01\x01"  # one security type: None
    await stream.send(b"\x01")
    assert await reader.read(4) == b"\x00\x00\x00\x00"  # SecurityResult: OK
    await stream.send(b"\x01")  # ClientInit, shared
    header = await reader.read(24)
    length = int.from_bytes(header[20:24], "big")
    return await reader.read(length)


@pytest.fixture(scope="module")
def console_agent(launch: Callable[..., AgentProcess]) -> Iterator[AgentProcess]:
    """An agent that serves two clients, of which only the orchestrator may open consoles."""
    process = launch(
        allowed_clients=["flexplane-orchestrator", "flexplane-portal"],
        console_clients=["flexplane-orchestrator"],
    )
    yield process
    process.stop()


async def test_the_orchestrator_opens_a_running_vms_console_and_speaks_rfb_to_its_server(
    console_agent: AgentProcess, pki: Pki, pve: Any
) -> None:
    vm = pve.add_vm(4991, "console-1", node="pve1", status="running")

    stream = await open_console(pki.client_tls(), console_agent.target(), 4991)
    try:
        assert await handshake(stream) == b"console-1"
    finally:
        await stream.close()
    assert vm.vncticket is None  # the one-use ticket was taken by the agent's own connection


async def test_a_caller_not_in_console_clients_is_refused_though_it_may_call_the_rest(
    console_agent: AgentProcess, pki: Pki, pve: Any
) -> None:
    pve.add_vm(4992, "console-2", node="pve1", status="running")
    stranger = pki.client_tls(pki.stranger)

    with pytest.raises(ClientNotAllowed, match="may not open consoles"):
        await open_console(stranger, console_agent.target(), 4992)


async def test_a_vm_that_is_not_on_the_node_is_refused_in_proxmoxs_words(
    console_agent: AgentProcess, pki: Pki
) -> None:
    with pytest.raises(ConsoleRefused, match="does not exist"):
        await open_console(pki.client_tls(), console_agent.target(), 4399)


async def test_an_agent_that_accepts_and_never_answers_is_a_refusal_within_the_deadline(
    console_agent: AgentProcess, pki: Pki
) -> None:
    """A node whose agent hangs (the kernel completes the TCP handshake, nothing answers the TLS one):
    the connection, the first message and the greeting share one deadline; without it the caller would
    wait on the connection, past any page's patience."""
    host = console_agent.address.rsplit(":", 1)[0]
    with socket.create_server((host, 0)) as silent:  # listens, never accepts
        target = AgentTarget(console_agent.target().identity, f"{host}:{silent.getsockname()[1]}")
        started = time.monotonic()
        with pytest.raises(ConsoleRefused, match=r"did not open within 0\.5 s"):
            await open_console(pki.client_tls(), target, 4991, timeout=0.5)
        assert time.monotonic() - started < 5
