"""A network topology from namespaces for the mesh's tests (root only), removed whole afterwards.

::

    this process (the orchestrator's side)
        | veth 10.<s>.250.1/30 - .2           route: the mesh range via the hub; 10.<s>/16 unreachable
    hub: the mesh's hub (WireGuard, UDP), the "internet" router, its public address 10.<s>.0.1
        | 10.<s>.1.0/30     | 10.<s>.2.0/30     | 10.<s>.4.0/30 (WAN)
       n1                  n2                 router: masquerades outbound, drops every inbound
                                                | 10.<s>.3.0/30 (LAN)
                                               n3 (behind NAT)

Every name carries the run's random id (interface names are at most 15 characters, and WireGuard's
userspace sockets are shared by all namespaces); every address is in 10.<s>.0.0/16, where ``s`` is
the worker's test subnet. The root namespace gets one veth and two routes, removed with it.
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tests import addresses

COMMAND_TIMEOUT = 15.0


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
    return ["ip", "netns", "exec", ns, *argv]


@dataclass
class Topology:
    """The namespaces' names and addresses; :meth:`cut` and :meth:`restore` a node's path."""

    rid: str = field(default_factory=lambda: secrets.token_hex(2))
    octet: int = addresses.WORLD
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
    def supernet(self) -> str:
        return f"10.{self.octet}.0.0/16"

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
        for name in (hub, router, self.node(1), self.node(2), self.node(3)):
            self.add_ns(name)
        run(["ip", "-n", hub, "address", "add", f"{self.hub_public}/32", "dev", "lo"])
        for ns in (hub, router):
            run(in_ns(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"))
        # This process reaches the mesh through the hub, and nothing else of the test's addresses.
        self.veth(None, self.link("ma"), self.ip(250, 1), hub, self.link("mb"), self.ip(250, 2))
        for route in (["unreachable", self.supernet], [self.mesh_range, "via", self.ip(250, 2)]):
            run(["ip", "route", "add", *route])
            self.routes.append(route)
        # n1, n2: straight on the hub's "internet".
        for n in (1, 2):
            self.veth(hub, self.link(f"h{n}"), self.ip(n, 1), self.node(n), self.link(f"n{n}"), self.ip(n, 2))
            run(["ip", "-n", self.node(n), "route", "add", "default", "via", self.ip(n, 1)])
        # n3: behind the customer's router.
        self.veth(hub, self.link("h4"), self.ip(4, 1), router, self.link("rw"), self.ip(4, 2))
        self.veth(router, self.link("rl"), self.ip(3, 1), self.node(3), self.link("n3"), self.ip(3, 2))
        run(["ip", "-n", router, "route", "add", "default", "via", self.ip(4, 1)])
        # The hub speaks from its public address, as a hub behind one public IP does: a restarted hub
        # dialling a node behind NAT matches the mapping the node's keepalives keep open.
        for third, link in ((1, "h1"), (2, "h2"), (4, "h4")):
            network = f"{self.ip(third, 0)}/30"
            run(
                ["ip", "-n", hub, "route", "replace", network, "dev", self.link(link), "src", self.hub_public]
            )
        run(["ip", "-n", self.node(3), "route", "add", "default", "via", self.ip(3, 1)])
        wan, lan = self.link("rw"), self.link("rl")
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
    iifname "{lan}" accept
  }}
  chain incoming {{
    type filter hook input priority 0; policy drop
    ct state established,related accept
    iifname "{lan}" accept
    iifname "lo" accept
  }}
}}
""",
        )
        return self

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
        source = self.ip(4, 2) if n == 3 else self.node_direct(n)
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
def topology(octet: int = addresses.WORLD) -> Iterator[Topology]:
    """The topology on 10.<octet>.0.0/16 (by default the worker's test subnet), removed afterwards."""
    built = Topology(octet=octet)
    try:
        yield built.build()
    finally:
        built.remove()
