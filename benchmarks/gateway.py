"""What an edge gateway costs: the time to apply one, and a TCP stream's throughput through it.

Builds the gateway tests' network of namespaces (``tests/gateway/topology.py``: two nodes with
joined bridges, VMs, the internet) and runs the node's part of the agent (``agent.gateways``) on
node 1. Measured in one run:

- apply: a gateway with 1, 100 and 1,000 port forwards, made from nothing (namespace, legs,
  ruleset) and applied again with one forward changed (the ruleset replaced); the median of
  ``--rounds`` of each;
- throughput: one TCP stream for ``--seconds`` from VM a1 through the gateway (bridge, veth legs,
  routing, conntrack, SNAT, the firewall) to the internet, and on a plain path in the same network
  (a namespace on the external bridge, next to the internet: veth, bridge, veth), interleaved
  ``--streams`` times each; the medians and their ratio. Target: ratio >= 0.8.

Sender and receiver are Python processes in their namespaces (``ip netns exec``), moving 1 MiB
buffers, so that the kernel's path, not the interpreter, is what is measured; the machine is shared,
so the figures move from run to run. Needs root.

    .venv/bin/python -m benchmarks.gateway [--rounds 5] [--seconds 3] [--streams 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent.gateways import GatewayManager
from agentclient.gateways import GatewaySpec, PortForward, PublicIp
from tests.gateway.topology import INTERNET, Net

TARGET = 0.8
PUBLIC = "203.0.113.10"
PLAIN = "203.0.113.50"
PORT = 5201

RECEIVER = """
import socket, sys
server = socket.create_server(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
conn, _ = server.accept()
buffer = bytearray(1 << 20)
total = 0
while (n := conn.recv_into(buffer)):
    total += n
print(total, flush=True)
"""

SENDER = """
import socket, sys, time
conn = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
payload = bytes(1 << 20)
end = time.monotonic() + float(sys.argv[3])
started = time.monotonic()
while time.monotonic() < end:
    conn.sendall(payload)
conn.shutdown(socket.SHUT_WR)
conn.recv(1)
print(time.monotonic() - started, flush=True)
"""


def spec(net: Net, forwards: int, generation: int = 1, shift: int = 0) -> GatewaySpec:
    return GatewaySpec(
        id=net.gateway_id(f"f{forwards}"),
        generation=generation,
        uplink=net.uplink("203.0.113.2"),
        legs=(net.leg("vnet-a"),),
        public_ips=(PublicIp(PUBLIC),),
        forwards=tuple(
            PortForward(PUBLIC, "tcp", 10000 + i, "10.20.0.5", 1000 + (i + shift) % 60000)
            for i in range(forwards)
        ),
    )


def measure_apply(net: Net, manager: GatewayManager, rounds: int) -> None:
    print(f"apply time (median of {rounds}): from nothing / again with a forward changed")
    for forwards in (1, 100, 1000):
        fresh: list[float] = []
        again: list[float] = []
        for round_ in range(rounds):
            first = spec(net, forwards)
            started = time.perf_counter()
            manager.apply(first)
            fresh.append(time.perf_counter() - started)
            started = time.perf_counter()
            manager.apply(spec(net, forwards, 2, shift=round_ + 1))
            again.append(time.perf_counter() - started)
            manager.remove(first.id)
        print(
            f"  {forwards:>5} forwards: {statistics.median(fresh) * 1000:7.1f} ms / "
            f"{statistics.median(again) * 1000:7.1f} ms"
        )


def stream(client_ns: str, server_ns: str, address: str, seconds: float) -> float:
    """Bits per second of one TCP stream from client_ns to address:PORT, served in server_ns."""
    receiver = subprocess.Popen(
        ["ip", "netns", "exec", server_ns, sys.executable, "-c", RECEIVER, str(PORT)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert receiver.stdout is not None
        assert receiver.stdout.readline().strip() == "ready"
        sent = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                client_ns,
                sys.executable,
                "-c",
                SENDER,
                address,
                str(PORT),
                str(seconds),
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=True,
        )
        received = int(receiver.stdout.readline())
        return received * 8 / float(sent.stdout)
    finally:
        receiver.kill()
        receiver.wait()


def measure_throughput(net: Net, manager: GatewayManager, seconds: float, streams: int) -> float:
    gateway = spec(net, 1)
    manager.apply(gateway)
    # The plain path: a namespace on node 1's external bridge, beside the internet.
    plain = net.add_vm("plain", 1, "ext", PLAIN, gateway=None)
    through: list[float] = []
    direct: list[float] = []
    for _ in range(streams):
        through.append(stream(net.vms["a1"].ns, net.internet, INTERNET, seconds))
        direct.append(stream(plain.ns, net.internet, INTERNET, seconds))
    manager.remove(gateway.id)
    g, p = statistics.median(through), statistics.median(direct)
    ratio = g / p
    print(f"single TCP stream (median of {streams} x {seconds:g} s, interleaved):")
    print(f"  through the gateway: {g / 1e9:6.2f} Gbit/s  ({', '.join(f'{x / 1e9:.2f}' for x in through)})")
    print(f"  plain veth path:     {p / 1e9:6.2f} Gbit/s  ({', '.join(f'{x / 1e9:.2f}' for x in direct)})")
    print(f"  ratio: {ratio:.2f} (target >= {TARGET})")
    return ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="applies of each size")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one stream")
    parser.add_argument("--streams", type=int, default=3, help="streams on each path")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("benchmarks.gateway needs root (network namespaces, nftables)", file=sys.stderr)
        return 2
    net = Net().build()
    try:
        with tempfile.TemporaryDirectory() as kept:
            manager = GatewayManager("n1", Path(kept), host=net.node(1))
            measure_apply(net, manager, args.rounds)
            ratio = measure_throughput(net, manager, args.seconds, args.streams)
    finally:
        net.destroy()
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
