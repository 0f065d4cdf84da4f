"""The bridges the devstack's edge gateways plug into (root, a mesh world): kept in step with the fake SDN.

On a Proxmox node an edge gateway's legs go onto the node's bridges: the external network's (the
zone's ``vmbr0`` here) and each applied VNet's. The fake zones have no Linux bridges, so in a mesh
world, where every node's agent runs in a namespace of its own, this keeps in each node's namespace a
bridge for ``vmbr0`` and for every VNet its zone's SDN has applied (``FakeSdn.bridges()``), adding
and removing them every second. The agents then run their gateways for real: a namespace
``fpgw-<id>`` each, with its legs on these bridges and its nftables ruleset. The fake VMs send no
packets, so nothing flows through them; the gateways' tests do that (tests/gateway).
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

INTERVAL = 1.0
TIMEOUT = 10.0


def _ip(ns: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "-n", ns, *argv], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


class GatewayBridges:
    """Each node namespace's bridges made equal to its zone's (``wanted(zone)``), every second."""

    def __init__(self, namespaces: dict[tuple[str, str], str], wanted: Callable[[str], set[str]]) -> None:
        self.namespaces = namespaces
        self.wanted = wanted
        self._made: dict[str, set[str]] = {ns: set() for ns in namespaces.values()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sync(self) -> None:
        """One round: add the missing bridges, remove those made here that are no longer wanted."""
        for (zone, _node), ns in self.namespaces.items():
            wanted = self.wanted(zone)
            listed = _ip(ns, "-j", "link", "show", "type", "bridge")
            if listed.returncode != 0:
                continue  # the namespace is going (the world stops)
            present = {link["ifname"] for link in json.loads(listed.stdout or "[]")}
            for bridge in sorted(wanted - present):
                if _ip(ns, "link", "add", bridge, "type", "bridge").returncode == 0:
                    _ip(ns, "link", "set", bridge, "up")
                    self._made[ns].add(bridge)
            for bridge in sorted((self._made[ns] & present) - wanted):
                _ip(ns, "link", "delete", bridge)
                self._made[ns].discard(bridge)

    def start(self) -> None:
        self.sync()
        self._thread = threading.Thread(target=self._run, name="gateway bridges", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            with contextlib.suppress(Exception):  # a round that fails is tried again in a second
                self.sync()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(TIMEOUT)
