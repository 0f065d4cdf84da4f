"""The mesh control server's loop: the hub's WireGuard interface kept equal to the recorded peers.

On start it makes (or reads) the hub's key in the management cluster, brings up its interface with
the range's first address and listens on its UDP port. Then, every ``interval`` seconds, one pass:

- a peer is configured when its host is in the catalog: its key, allowed to send from its mesh
  address only (``/32``); the node dials in, its keepalives keeping its NAT's mapping open. Where
  the hub last saw it is recorded, so that a restarted hub dials it back at once;
- every other peer on the interface is removed: a host removed (``removeHost`` deletes its peer),
  a key rotated away, a key nobody recorded. Its packets are dropped from then on;
- a peer's handshake that moved on, or its new endpoint, is written back to its record (the
  hosts query shows the handshake);
- with a proxy (``proxy_listen``), the agents' endpoints of the configured peers are what its
  tunnels may reach (:mod:`orchestrator.mesh.proxy`): the orchestrator's pods dial through it.

The hub keeps nothing itself: restarted, it rebuilds the interface from the cluster, and the nodes,
keeping alive every FLEXPLANE_MESH_KEEPALIVE seconds, handshake again within that interval.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from dataclasses import dataclass, field

from django.conf import settings

from agentclient.wireguard import Interface, Peer, WireGuardError
from orchestrator.errors import FlexPlaneError
from orchestrator.mesh.proxy import MeshProxy
from orchestrator.services import mesh
from orchestrator.sources.kube import kube
from orchestrator.sources.protocols import KubeApi

logger = logging.getLogger(__name__)

DEFAULT_PORT = 51820
DEFAULT_INTERVAL = 1.0
# A handshake is written back when it moved on by this much (WireGuard re-handshakes every 2 minutes).
HANDSHAKE_WRITE_STEP = 60


@dataclass
class PassResult:
    """What one pass changed on the interface."""

    configured: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


class MeshHub:
    """The hub's interface ``interface`` (in ``netns`` if given), listening on UDP ``port``; with
    ``proxy_listen`` (host:port) its CONNECT proxy too, in the same namespace."""

    def __init__(
        self,
        interface: str,
        port: int = DEFAULT_PORT,
        *,
        netns: str | None = None,
        source: KubeApi | None = None,
        interval: float = DEFAULT_INTERVAL,
        proxy_listen: str | None = None,
    ) -> None:
        self.interface = Interface(interface, netns)
        self.port = port
        self.proxy_listen = proxy_listen
        self.proxy: MeshProxy | None = None
        self.source = source
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def kube(self) -> KubeApi:
        """The management cluster: ``source``, else the process's."""
        return self.source or kube()

    def up(self) -> str:
        """Make or read the hub's key, bring the interface up; the hub's public key."""
        net = mesh.network()
        private, public = mesh.ensure_hub_key(self.kube)
        self.interface.create()
        self.interface.configure(private, self.port)
        self.interface.set_address(f"{mesh.hub_address(net)}/{net.prefixlen}")
        if self.proxy_listen and self.proxy is None:
            proxy = MeshProxy(self.proxy_listen, net, netns=self.interface.netns)
            proxy.start()
            self.proxy = proxy
        logger.info("mesh hub %s up: %s on UDP %d, key %s", self.interface, net, self.port, public)
        return public

    def reconcile(self) -> PassResult:
        """One pass: the interface's peers made equal to the recorded peers of hosts in the catalog."""
        source = self.kube
        present = mesh.hosts_present(source)
        wanted = {p.public_key: p for p in mesh.peers(source) if p.host_key in present}
        configured = self.interface.peers()
        result = PassResult()
        if self.proxy is not None:
            endpoints = (mesh.agent_endpoint(p, present[p.host_key]) for p in wanted.values())
            self.proxy.allow(e for e in endpoints if e is not None)
        for key in configured.keys() - wanted.keys():
            self.interface.remove_peer(key)
            result.removed.append(key)
        for key, peer in wanted.items():
            allowed = (str(ipaddress.ip_network(peer.address)),)
            state = configured.get(key)
            if state is None or state.allowed_ips != allowed:
                # Where it was last seen, kept alive from here too: after a restart the hub dials it
                # at once, through the mapping its NAT keeps open, instead of waiting for its rekey.
                keepalive = settings.FLEXPLANE_MESH_KEEPALIVE if peer.endpoint else None
                self.interface.set_peer(Peer(key, allowed, peer.endpoint or None, keepalive))
                result.configured.append(peer.host_key)
            elif state.latest_handshake and (
                state.endpoint != (peer.endpoint or None)
                or state.latest_handshake >= peer.last_handshake + HANDSHAKE_WRITE_STEP
            ):
                mesh.record_handshake(source, peer, state.latest_handshake, state.endpoint)
        if result.configured or result.removed:
            logger.info(
                "mesh hub: configured %s; removed %d peer(s)",
                ", ".join(result.configured) or "none",
                len(result.removed),
            )
        return result

    def run(self) -> None:
        """Pass after pass until :meth:`stop`; a failed pass is logged and the next one tries again."""
        while not self._stop.is_set():
            try:
                self.reconcile()
            except (FlexPlaneError, WireGuardError) as exc:
                logger.warning("mesh hub: this pass failed, the next one tries again: %s", exc)
            self._stop.wait(self.interval)

    def start(self) -> MeshHub:
        """:meth:`up`, one pass, then the loop in a thread."""
        self.up()
        self.reconcile()
        self._thread = threading.Thread(target=self.run, name="mesh-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, remove_interface: bool = False) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if remove_interface:
            self.interface.delete()
