"""A network topology from namespaces for the mesh (root only): the tests', the benchmark's and the
devstack's, removed whole afterwards.

::

    this process (the orchestrator's side)
        | veth 10.<s>.250.1/30 - .2           route: the mesh range via the hub; the nodes' links unreachable
    hub: the mesh's hub (WireGuard, UDP), the "internet" router, its public address 10.<s>.0.1
        | 10.<s>.1.0/30     | 10.<s>.2.0/30     | 10.<s>.200.0/30 (WAN)
       n1                  n2                 router: masquerades outbound, drops every inbound
                                                | 10.<s>.3.0/30 (LAN)
                                               n3 (behind NAT)

With ``pod``, one more namespace hangs off the hub on 10.<s>.251.0/30 and nothing else: an
orchestrator's pod, which has no route to the mesh's range and reaches the agents only through the
hub's CONNECT proxy (on the hub's side of that link, :attr:`Topology.proxy_address`).

Every name carries the run's random id (interface names are at most 15 characters, and WireGuard's
userspace sockets are shared by all namespaces); every address is in 10.<s>.0.0/16, where ``s`` is
the caller's (a test worker's subnet, the devstack's). The root namespace gets one veth and two
routes, removed with it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyroute2 import netns

from devstack.processes import Process, spawn, wait_for_line

COMMAND_TIMEOUT = 15.0
# The third octet of the link between the hub and the customer's router (node n's link is n), and
# of the orchestrator's pod's link to the hub.
WAN = 200
POD = 251


def run(
    argv: Sequence[str], *, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        list(argv), input=stdin, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done


def in_ns(ns: str, *argv: str) -> list[str]:
    """A tool run in namespace ns (``ip netns exec``: also in a mount namespace of its own, which
    remounts /sys for ns; what it mounts, a network namespace it pins in /run/netns, stays in it)."""
    return ["ip", "netns", "exec", ns, *argv]


def on_node(ns: str, *argv: str) -> list[str]:
    """A node's program (its agent, its bootstrap) run in the node's namespace ns as on a node: the
    network namespace only (``nsenter``), in the host's mount namespace, as systemd starts a unit with no
    file system namespacing and as an operator's shell runs the bootstrap. The namespaces it pins in
    /run/netns (the edge gateways') are the host's: they outlive it, and a shell here enters them."""
    return ["nsenter", f"--net=/run/netns/{ns}", "--", *argv]


@dataclass
class Topology:
    """The namespaces' names and addresses; :meth:`cut` and :meth:`restore` a node's path."""

    rid: str = field(default_factory=lambda: secrets.token_hex(2))
    octet: int = 10
    nodes: int = 3
    behind_nat: tuple[int, ...] = (3,)
    pod: bool = False
    made_ns: list[str] = field(default_factory=list)
    root_links: list[str] = field(default_factory=list)
    routes: list[list[str]] = field(default_factory=list)

    def ns(self, role: str) -> str:
        return f"fpm-{self.rid}-{role}"

    def link(self, role: str) -> str:
        return f"fpm{self.rid}{role}"[:15]

    def ip(self, third: int, fourth: int) -> str:
        return f"10.{self.octet}.{third}.{fourth}"

    @property
    def mesh_range(self) -> str:
        return f"10.{self.octet}.100.0/24"

    @property
    def hub_public(self) -> str:
        return self.ip(0, 1)

    @property
    def hub(self) -> str:
        return self.ns("hub")

    @property
    def router(self) -> str:
        return self.ns("rt")

    def node(self, n: int) -> str:
        return self.ns(f"n{n}")

    @property
    def pod_ns(self) -> str:
        """The orchestrator's pod (with ``pod``): linked to the hub only, no route to the mesh."""
        return self.ns("pod")

    @property
    def proxy_address(self) -> str:
        """The hub's address on the pod's link: where its CONNECT proxy listens."""
        return self.ip(POD, 1)

    def node_direct(self, n: int) -> str:
        return self.ip(n, 2)

    # ----------------------------------------------------------------------------------- building

    def add_ns(self, name: str) -> None:
        run(["ip", "netns", "add", name])
        self.made_ns.append(name)
        run(["ip", "-n", name, "link", "set", "lo", "up"])

    def veth(self, a_ns: str | None, a: str, a_ip: str, b_ns: str, b: str, b_ip: str) -> None:
        """A veth pair: ``a`` in a_ns (None: this namespace), ``b`` in b_ns, each with its /30."""
        run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
        if a_ns is None:
            self.root_links.append(a)
        else:
            run(["ip", "link", "set", a, "netns", a_ns])
        run(["ip", "link", "set", b, "netns", b_ns])
        for ns, name, address in ((a_ns, a, a_ip), (b_ns, b, b_ip)):
            prefix = ["ip"] if ns is None else ["ip", "-n", ns]
            run([*prefix, "address", "add", f"{address}/30", "dev", name])
            run([*prefix, "link", "set", name, "up"])

    def build(self) -> Topology:
        hub, router = self.hub, self.router
        natted = [n for n in range(1, self.nodes + 1) if n in self.behind_nat]
        for name in (hub, *([router] if natted else []), *(self.node(n) for n in range(1, self.nodes + 1))):
            self.add_ns(name)
        run(["ip", "-n", hub, "address", "add", f"{self.hub_public}/32", "dev", "lo"])
        for ns in (hub, router) if natted else (hub,):
            run(in_ns(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"))
        # This process reaches the mesh through the hub, and nothing else of the test's addresses.
        self.veth(None, self.link("ma"), self.ip(250, 1), hub, self.link("mb"), self.ip(250, 2))
        # Only what it needs here: the mesh range through the hub; the nodes' own links (and the
        # router's) unreachable, so that a try fails at once and never leaves for the default route.
        links = [n for n in range(1, self.nodes + 1)] + ([WAN] if self.behind_nat else [])
        for route in [
            [self.mesh_range, "via", self.ip(250, 2)],
            *(["unreachable", f"{self.ip(third, 0)}/30"] for third in links),
        ]:
            run(["ip", "route", "add", *route])
            self.routes.append(route)
        # The hub speaks from its public address, as a hub behind one public IP does: a restarted hub
        # dialling a node behind NAT matches the mapping the node's keepalives keep open.
        hub_links = []
        for n in range(1, self.nodes + 1):
            if n in natted:
                continue  # straight on the hub's "internet"
            self.veth(hub, self.link(f"h{n}"), self.ip(n, 1), self.node(n), self.link(f"n{n}"), self.ip(n, 2))
            run(["ip", "-n", self.node(n), "route", "add", "default", "via", self.ip(n, 1)])
            hub_links.append((n, f"h{n}"))
        if natted:
            self._router(natted)
            hub_links.append((WAN, "hw"))
        if self.pod:
            # As a pod's network: its own link to the hub's pod, no default route, no mesh route.
            self.add_ns(self.pod_ns)
            self.veth(
                self.hub, self.link("hp"), self.ip(POD, 1), self.pod_ns, self.link("pp"), self.ip(POD, 2)
            )
        for third, link in hub_links:
            network = f"{self.ip(third, 0)}/30"
            run(
                ["ip", "-n", hub, "route", "replace", network, "dev", self.link(link), "src", self.hub_public]
            )
        return self

    def _router(self, natted: list[int]) -> None:
        """The customer's router: NAT'd nodes on its LAN side, masquerading out, dropping all inbound."""
        hub, router = self.hub, self.router
        wan = self.link("rw")
        self.veth(hub, self.link("hw"), self.ip(WAN, 1), router, wan, self.ip(WAN, 2))
        run(["ip", "-n", router, "route", "add", "default", "via", self.ip(WAN, 1)])
        for n in natted:
            self.veth(
                router, self.link(f"r{n}"), self.ip(n, 1), self.node(n), self.link(f"n{n}"), self.ip(n, 2)
            )
            run(["ip", "-n", self.node(n), "route", "add", "default", "via", self.ip(n, 1)])
        run(
            in_ns(router, "nft", "-f", "-"),
            stdin=f"""
table inet fprouter {{
  chain post {{
    type nat hook postrouting priority 100
    oifname "{wan}" masquerade
  }}
  chain forwarding {{
    type filter hook forward priority 0; policy drop
    ct state established,related accept
    iifname != "{wan}" accept
  }}
  chain incoming {{
    type filter hook input priority 0; policy drop
    ct state established,related accept
    iifname != "{wan}" accept
  }}
}}
""",
        )

    def masquerade_into(self, interface: str) -> None:
        """The hub hands the orchestrator's packets to the mesh as its own (nodes see the hub's address)."""
        run(
            in_ns(self.hub, "nft", "-f", "-"),
            stdin=f"""
table ip fphub {{
  chain post {{
    type nat hook postrouting priority 100
    oifname "{interface}" ip saddr {self.ip(250, 0)}/30 masquerade
  }}
  chain cut_in {{
    type filter hook input priority 0
  }}
  chain cut_out {{
    type filter hook output priority 0
  }}
}}
""",
        )

    def cut(self, n: int) -> None:
        """Drop, at the hub, every packet from and to node n's direct (or NAT'd) address: its path is gone."""
        source = self.ip(WAN, 2) if n in self.behind_nat else self.node_direct(n)
        run(in_ns(self.hub, "nft", "add", "rule", "ip", "fphub", "cut_in", "ip", "saddr", source, "drop"))
        run(in_ns(self.hub, "nft", "add", "rule", "ip", "fphub", "cut_out", "ip", "daddr", source, "drop"))

    def restore(self) -> None:
        for chain in ("cut_in", "cut_out"):
            run(in_ns(self.hub, "nft", "flush", "chain", "ip", "fphub", chain))

    def connect(self, ns: str | None, address: str, port: int, timeout: float = 1.0) -> str:
        """Try a TCP connection from ns (None: here): "connected", or the error it met."""
        code = (
            "import socket,sys\n"
            "s=socket.socket();s.settimeout(float(sys.argv[3]))\n"
            "try:\n s.connect((sys.argv[1],int(sys.argv[2])));print('connected')\n"
            "except OSError as e:print(type(e).__name__, e)\n"
        )
        argv = ["python3", "-c", code, address, str(port), str(timeout)]
        return run(in_ns(ns, *argv) if ns else argv).stdout.strip()

    def remove(self) -> None:
        """Everything built, whatever state it is in: WireGuard links first (their wireguard-go exits)."""
        for ns in self.made_ns:
            links = run(["ip", "-n", ns, "-o", "link", "show"], check=False).stdout
            for line in links.splitlines():
                name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
                if name.startswith(f"fpm{self.rid}"):
                    run(["ip", "-n", ns, "link", "del", name], check=False)
        for route in self.routes:
            run(["ip", "route", "del", *route], check=False)
        for link in self.root_links:
            run(["ip", "link", "del", link], check=False)
        for ns in reversed(self.made_ns):
            run(["ip", "netns", "del", ns], check=False)


@contextlib.contextmanager
def topology(
    octet: int, nodes: int = 3, behind_nat: tuple[int, ...] = (3,), *, pod: bool = False
) -> Iterator[Topology]:
    """The topology on 10.<octet>.0.0/16, removed afterwards (also when the block fails)."""
    built = Topology(octet=octet, nodes=nodes, behind_nat=behind_nat, pod=pod)
    try:
        yield built.build()
    finally:
        built.remove()


# ------------------------------------------------------------------------------ a namespace relay


def listen_in(ns: str, host: str, port: int) -> socket.socket:
    """A listening socket inside namespace ``ns`` (made from a thread that visits it, then returns)."""
    return socket_in(ns, lambda: socket.create_server((host, port)))


def connect_in(ns: str, host: str, port: int, timeout: float = 5.0) -> socket.socket:
    """A TCP connection made from inside namespace ``ns`` (it stays there, used from anywhere)."""
    return socket_in(ns, lambda: socket.create_connection((host, port), timeout=timeout))


def socket_in(ns: str, make: Callable[[], socket.socket]) -> socket.socket:
    """A socket made inside namespace ``ns`` (it stays there; use it from any thread)."""
    made: dict[str, socket.socket | BaseException] = {}

    def visit() -> None:
        # setns(2) moves the calling thread only; flags=0: never create the namespace.
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            netns.setns(ns, flags=0)
            try:
                made["socket"] = make()
            finally:
                netns.setns(own, flags=0)
        except BaseException as exc:
            made["error"] = exc
        finally:
            os.close(own)

    thread = threading.Thread(target=visit)
    thread.start()
    thread.join()
    error = made.get("error")
    if isinstance(error, BaseException):
        raise error
    result = made["socket"]
    assert isinstance(result, socket.socket)
    return result


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def relay(ns: str, host: str, port: int) -> socket.socket:
    """``host:port`` inside ``ns`` forwarded to the same address here: what the node reaches locally
    (its Proxmox API, the orchestrator's enrollment) stands in for what it would reach on its own."""
    server = listen_in(ns, host, port)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                inner, _ = server.accept()
                outer = socket.create_connection((host, port), timeout=10)
                outer.settimeout(None)
                for a, b in ((inner, outer), (outer, inner)):
                    threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return server


# -------------------------------------------------------------------------------- the devstack's


MESH_TOOLS = ("ip", "nft", "wg", "wireguard-go")
HUB_PORT = 51820


def mesh_possible() -> str | None:
    """None when this process can run the mesh (root, the tools installed); else why not."""
    if os.geteuid() != 0:
        return "not root"
    missing = [tool for tool in MESH_TOOLS if shutil.which(tool) is None]
    return f"{', '.join(missing)} not installed (make install)" if missing else None


class DevMesh:
    """The devstack's mesh: each node of the world in a namespace of its own (the last one behind a
    NAT router), the hub (``manage.py mesh_hub``) with its interface in the hub's namespace, and the
    node-local stand-ins (the node's Proxmox API, the orchestrator's HTTPS, the image server) relayed
    into each node's namespace at their usual addresses."""

    def __init__(self, octet: int, nodes: list[tuple[str, str]], keepalive: int = 5) -> None:
        self.topology = Topology(octet=octet, nodes=len(nodes), behind_nat=(len(nodes),))
        self.index = {key: n for n, key in enumerate(nodes, start=1)}
        self.keepalive = keepalive
        self.hub: Process | None = None
        self.relays: list[socket.socket] = []

    def env(self) -> dict[str, str]:
        """The mesh's settings, for the orchestrator and the hub."""
        return {
            "FLEXPLANE_MESH_RANGE": self.topology.mesh_range,
            "FLEXPLANE_MESH_HUB_ENDPOINT": f"{self.topology.hub_public}:{HUB_PORT}",
            "FLEXPLANE_MESH_HUB_SECRET": f"mesh-hub-{self.topology.rid}",
            "FLEXPLANE_MESH_KEEPALIVE": str(self.keepalive),
        }

    @property
    def hub_interface(self) -> str:
        return self.topology.link("hub")

    def interface(self, zone: str, node: str) -> str:
        return self.topology.link(f"w{self.index[(zone, node)]}")

    def namespace(self, zone: str, node: str) -> str:
        return self.topology.node(self.index[(zone, node)])

    def start(self, env: dict[str, str], log: Path) -> None:
        """The namespaces, then the hub, running once it listens."""
        self.topology.build()
        self.start_hub(env, log)
        self.topology.masquerade_into(self.hub_interface)

    def start_hub(self, env: dict[str, str], log: Path, *, append: bool = False) -> None:
        """The hub (``manage.py mesh_hub``), running once it listens: it reads its key from the management
        cluster (made there on its first start) and configures the peers recorded there."""
        self.hub = spawn(
            "mesh hub",
            [
                sys.executable,
                "manage.py",
                "mesh_hub",
                "--interface",
                self.hub_interface,
                "--netns",
                self.topology.hub,
                "--port",
                str(HUB_PORT),
                "--interval",
                "0.5",
            ],
            log,
            env={**env, **self.env()},
            append=append,
        )
        wait_for_line(self.hub, "mesh hub listening", 30)

    def stop_hub(self) -> None:
        """The hub stopped and its interface removed, as when its pod goes with a lost management cluster:
        the nodes' tunnels end at the hub until :meth:`start_hub` brings up a new interface."""
        if self.hub is not None:
            self.hub.stop()
            self.hub = None
        run(["ip", "-n", self.topology.hub, "link", "del", self.hub_interface], check=False)

    def relay(self, zone: str, node: str, addresses: list[str]) -> None:
        """Each ``host:port`` reachable inside the node's namespace, at the same address."""
        for address in addresses:
            host, _, port = address.rpartition(":")
            self.relays.append(relay(self.namespace(zone, node), host, int(port)))

    def wrap(self, zone: str, node: str, argv: list[str]) -> list[str]:
        """argv run on the node: in its network namespace, in the host's mount namespace (:func:`on_node`)."""
        return on_node(self.namespace(zone, node), *argv)

    def stop(self) -> None:
        if self.hub is not None:
            self.hub.stop()
        for server in self.relays:
            server.close()
        self.topology.remove()
