"""A test network for edge gateways, from namespaces (root only), removed whole afterwards.

::

    internet 203.0.113.1/24 (also the external network's router)
        |
      [ext] ----------- join ----------- [ext]
      node 1                             node 2
      [vnet-a] -------- join ---------- [vnet-a]       VDC A: 10.20.0.0/24
      [vnet-b] -------- join ---------- [vnet-b]       VDC B: 10.20.0.0/24 as well
        |  vm-a1 10.20.0.5                 |  vm-a2 10.20.0.6
        |  vm-b1 10.20.0.7 (VDC B)

Each "node" is a namespace holding the node's bridges (the joins stand in for VXLAN and the
external network's switch); each "VM" a namespace with one veth leg on a VNet bridge. Gateways are
made by :class:`agent.gateways.GatewayManager` with ``host`` the node's namespace. Every name carries
the run's random id; the gateways' ids too (their namespaces are global).

Sockets are made in a namespace by a thread that visits it (setns) and comes back: the socket stays
in that namespace, and the test uses it from anywhere. :func:`echo_server` answers each TCP
connection or UDP datagram with the address and port it came from, so a test sees the source
address that arrived. There is no ping binary: :func:`echoed` sends an ICMP echo request from a raw
socket and waits for its own reply.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from agent.gateways.net import NS_PREFIX
from agentclient.gateways import Leg, Uplink
from devstack.meshnet import socket_in

TIMEOUT = 15.0
INTERNET = "203.0.113.1"
EXTERNAL_NET = "203.0.113.0/24"
BRIDGES = ("ext", "vnet-a", "vnet-b")


def sh(*argv: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        list(argv), input=stdin, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done


@dataclass
class Vm:
    ns: str
    address: str
    node: int
    vnet: str


@dataclass
class Net:
    """The namespaces of one run; :meth:`build` makes them, :meth:`destroy` removes all."""

    rid: str = field(default_factory=lambda: secrets.token_hex(3))
    made: list[str] = field(default_factory=list)
    vms: dict[str, Vm] = field(default_factory=dict)

    def ns(self, role: str) -> str:
        return f"fgt-{self.rid}-{role}"

    def node(self, n: int) -> str:
        return self.ns(f"n{n}")

    @property
    def internet(self) -> str:
        return self.ns("inet")

    def gateway_id(self, name: str) -> str:
        return f"t{self.rid}-{name}"

    def uplink(self, address: str) -> Uplink:
        return Uplink("ext", None, f"{address}/24", INTERNET)

    @staticmethod
    def leg(vnet: str) -> Leg:
        return Leg(vnet, "10.20.0.1/24")

    def _add_ns(self, name: str) -> None:
        sh("ip", "netns", "add", name)
        self.made.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")

    def build(self) -> Net:
        try:
            for n in (1, 2):
                node = self.node(n)
                self._add_ns(node)
                for bridge in BRIDGES:
                    sh("ip", "-n", node, "link", "add", bridge, "type", "bridge")
                    sh("ip", "-n", node, "link", "set", bridge, "up")
            for bridge in BRIDGES:
                join = f"j-{bridge}"
                sh(
                    "ip",
                    "-n",
                    self.node(1),
                    "link",
                    "add",
                    join,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    join,
                    "netns",
                    self.node(2),
                )
                for n in (1, 2):
                    sh("ip", "-n", self.node(n), "link", "set", join, "master", bridge, "up")
            self._attach(self.internet, 1, "ext", f"{INTERNET}/24", None)
            sh("ip", "netns", "exec", self.internet, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            self.add_vm("a1", 1, "vnet-a", "10.20.0.5")
            self.add_vm("a2", 2, "vnet-a", "10.20.0.6")
            self.add_vm("b1", 1, "vnet-b", "10.20.0.7")
        except BaseException:
            self.destroy()
            raise
        return self

    def _attach(self, ns: str, node: int, bridge: str, address: str, gateway: str | None) -> None:
        self._add_ns(ns)
        outer = f"v{ns[-6:]}"[-15:]
        sh(
            "ip",
            "-n",
            self.node(node),
            "link",
            "add",
            outer,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            ns,
        )
        sh("ip", "-n", self.node(node), "link", "set", outer, "master", bridge, "up")
        sh("ip", "-n", ns, "address", "add", address, "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        if gateway:
            sh("ip", "-n", ns, "route", "add", "default", "via", gateway)

    def add_vm(self, name: str, node: int, vnet: str, address: str, gateway: str | None = "10.20.0.1") -> Vm:
        vm = Vm(self.ns(f"vm{name}"), address, node, vnet)
        self._attach(vm.ns, node, vnet, f"{address}/24", gateway)
        self.vms[name] = vm
        return vm

    def destroy(self) -> None:
        """Remove every namespace of the run, the gateways' included."""
        gateways = [
            name
            for name in sh("ip", "netns", "list").stdout.split()
            if name.startswith(f"{NS_PREFIX}t{self.rid}-")
        ]
        for name in [*gateways, *reversed(self.made)]:
            sh("ip", "netns", "delete", name, check=False)
        self.made.clear()


@dataclass
class RootNet:
    """A smaller network on this namespace's own bridges, for an agent process that runs here:
    an external bridge with the internet, a VNet bridge with one VM (10.20.0.5)."""

    rid: str = field(default_factory=lambda: secrets.token_hex(3))
    made: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    @property
    def ext(self) -> str:
        return f"fg{self.rid}e"

    @property
    def vnet(self) -> str:
        return f"fg{self.rid}a"

    @property
    def internet(self) -> str:
        return f"fgt-{self.rid}-inet"

    @property
    def vm(self) -> str:
        return f"fgt-{self.rid}-vm"

    def gateway_id(self, name: str) -> str:
        return f"t{self.rid}-{name}"

    def build(self) -> RootNet:
        try:
            for bridge in (self.ext, self.vnet):
                sh("ip", "link", "add", bridge, "type", "bridge")
                self.links.append(bridge)
                sh("ip", "link", "set", bridge, "up")
            for ns, bridge, address, gateway, tag in (
                (self.internet, self.ext, f"{INTERNET}/24", None, "i"),
                (self.vm, self.vnet, "10.20.0.5/24", "10.20.0.1", "v"),
            ):
                sh("ip", "netns", "add", ns)
                self.made.append(ns)
                outer = f"fg{self.rid}{tag}"
                sh("ip", "link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", ns)
                self.links.append(outer)
                sh("ip", "link", "set", outer, "master", bridge, "up")
                sh("ip", "-n", ns, "address", "add", address, "dev", "eth0")
                sh("ip", "-n", ns, "link", "set", "eth0", "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                if gateway:
                    sh("ip", "-n", ns, "route", "add", "default", "via", gateway)
        except BaseException:
            self.destroy()
            raise
        return self

    def destroy(self) -> None:
        gateways = [
            name
            for name in sh("ip", "netns", "list").stdout.split()
            if name.startswith(f"{NS_PREFIX}t{self.rid}-")
        ]
        for name in [*gateways, *self.made]:
            sh("ip", "netns", "delete", name, check=False)
        for link in self.links:
            sh("ip", "link", "delete", link, check=False)
        self.made.clear()
        self.links.clear()


def rules_of(gateway_id: str) -> str:
    """The gateway's ruleset as nft lists it, its counters' values left out."""
    text = sh(
        "ip", "netns", "exec", f"{NS_PREFIX}{gateway_id}", "nft", "list", "table", "inet", "flexplane"
    ).stdout
    return "\n".join(line for line in text.splitlines() if "packets" not in line)


def addresses_of(gateway_id: str) -> str:
    """The gateway namespace's interfaces and addresses, as ``ip -br address`` lists them."""
    return sh("ip", "-n", f"{NS_PREFIX}{gateway_id}", "-br", "address", "show").stdout


# ---------------------------------------------------------------------------------- sockets
# ``socket_in`` (a socket made inside a namespace) is the devstack's, ``devstack.meshnet``.


@contextlib.contextmanager
def echo_server(ns: str, port: int, protocol: str = "tcp", host: str = "0.0.0.0") -> Iterator[None]:  # noqa: S104
    """Inside ns, answer every connection (or datagram) on port with "<source address>:<port>"."""
    if protocol == "tcp":
        server = socket_in(ns, lambda: socket.create_server((host, port), reuse_port=False))
    else:

        def udp() -> socket.socket:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((host, port))
            return sock

        server = socket_in(ns, udp)
    stop = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            while not stop.is_set():
                if protocol == "tcp":
                    conn, peer = server.accept()
                    threading.Thread(target=_answer, args=(conn, peer), daemon=True).start()
                else:
                    _, peer = server.recvfrom(2048)
                    if peer is None:  # shut down
                        return
                    server.sendto(f"{peer[0]}:{peer[1]}".encode(), peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(5)


def _answer(conn: socket.socket, peer: tuple[str, int]) -> None:
    """Say where the connection came from, then echo lines until it closes."""
    with conn, contextlib.suppress(OSError):
        conn.sendall(f"{peer[0]}:{peer[1]}\n".encode())
        while data := conn.recv(65536):
            conn.sendall(data)


def ask(ns: str, host: str, port: int, protocol: str = "tcp", timeout: float = 2.0) -> str:
    """From inside ns: what the echo server at host:port says of us (OSError when nothing answers)."""
    if protocol == "tcp":
        with socket_in(ns, lambda: socket.create_connection((host, port), timeout=timeout)) as conn:
            conn.settimeout(timeout)
            return conn.makefile().readline().strip()

    def udp() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.settimeout(timeout)
        return sock

    with socket_in(ns, udp) as sock:
        sock.sendto(b"?", (host, port))
        return sock.recv(2048).decode()


def unanswered(ns: str, host: str, port: int, protocol: str = "tcp", timeout: float = 0.5) -> bool:
    """Whether nothing answers :func:`ask` within timeout (the packets are dropped)."""
    try:
        ask(ns, host, port, protocol, timeout)
    except OSError:
        return True
    return False


def source_address(answer: str) -> str:
    return answer.rsplit(":", 1)[0]


ICMP_ECHO_REPLY, ICMP_ECHO_REQUEST = 0, 8


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of data."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def echoed(ns: str, host: str, timeout: float = 2.0) -> bool:
    """Whether host answers an ICMP echo request sent from inside ns within timeout (a raw socket,
    which sees every ICMP packet of ns: only the reply from host with this request's id and sequence
    counts)."""
    ident, sequence = secrets.randbits(16), secrets.randbits(16)
    body = b"flexplane-probe"
    header = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, 0, ident, sequence)
    checksum = _checksum(header + body)
    request = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, checksum, ident, sequence) + body
    raw = socket_in(ns, lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
    with raw:
        raw.sendto(request, (host, 0))
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            raw.settimeout(left)
            try:
                packet, (source, _port) = raw.recvfrom(65535)
            except TimeoutError:
                return False
            reply = packet[(packet[0] & 0x0F) * 4 :]  # past the IP header
            if source == host and len(reply) >= 8:
                kind, _code, _sum, got_id, got_sequence = struct.unpack("!BBHHH", reply[:8])
                if (kind, got_id, got_sequence) == (ICMP_ECHO_REPLY, ident, sequence):
                    return True
    return False


def silent(ns: str, host: str, port: int, protocol: str = "tcp", timeout: float = 0.5) -> bool:
    """Whether nothing at all comes back from host:port to a TCP connect or a UDP datagram from ns
    within timeout: no answer, and no refusal either (a TCP reset, an ICMP port unreachable)."""

    def make() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM if protocol == "tcp" else socket.SOCK_DGRAM)
        sock.settimeout(timeout)
        return sock

    with socket_in(ns, make) as sock:
        try:
            sock.connect((host, port))  # UDP: connected, so that an ICMP error is reported on it
            if protocol == "tcp":
                return False
            sock.send(b"?")
            sock.recv(2048)
        except TimeoutError:
            return True
        except OSError:
            return False  # refused: something answered
    return False


def neighbour(ns: str, address: str) -> str | None:
    """The link-layer address ns has learnt for address (ARP), or None when it has none."""
    listed = sh("ip", "-n", ns, "-j", "neigh", "show", "to", address).stdout
    for entry in json.loads(listed or "[]"):
        if entry.get("lladdr") and "FAILED" not in entry.get("state", ()):
            return str(entry["lladdr"])
    return None
