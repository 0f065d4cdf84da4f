"""``manage.py mesh_hub``: run the mesh control server (the WireGuard hub) until stopped.

Needs CAP_NET_ADMIN (root, or the capability in its pod) and FLEXPLANE_MESH_RANGE; the chart runs it
as its own Deployment (one replica: the hub is one key and one UDP endpoint). With ``--proxy-listen``
it also serves the CONNECT proxy the orchestrator's pods reach the agents through
(:mod:`orchestrator.mesh.proxy`; the chart listens on the pod's own address).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agentclient.wireguard import WireGuardError
from orchestrator.errors import FlexPlaneError
from orchestrator.mesh.hub import DEFAULT_INTERVAL, DEFAULT_PORT, MeshHub
from orchestrator.services import mesh


class Command(BaseCommand):
    help = "Run the WireGuard mesh's hub: its interface kept equal to the hosts' recorded peers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--interface", default="fpmesh0", help="the hub's WireGuard interface")
        parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="the UDP port nodes dial")
        parser.add_argument("--netns", default=None, help="run the interface in this network namespace")
        parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL, help="seconds between passes")
        parser.add_argument(
            "--proxy-listen",
            default="",
            metavar="HOST:PORT",
            help="serve the CONNECT proxy to the agents here (the pod's address); empty: no proxy",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not mesh.enabled():
            raise CommandError("FLEXPLANE_MESH_RANGE is not set: there is no mesh to run")
        hub = MeshHub(
            options["interface"],
            options["port"],
            netns=options["netns"],
            interval=options["interval"],
            proxy_listen=options["proxy_listen"] or None,
        )
        stopped = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stopped.set())
        try:
            key = hub.up()
        except (FlexPlaneError, WireGuardError, OSError, ValueError) as exc:
            raise CommandError(f"the mesh hub cannot start: {exc}") from exc
        if hub.proxy is not None and hub.proxy.address is not None:
            host, port = hub.proxy.address
            self.stdout.write(f"mesh proxy listening on TCP {host}:{port} (CONNECT to the agents)")
        self.stdout.write(f"mesh hub listening on UDP {options['port']} ({options['interface']}), key {key}")
        self.stdout.flush()
        runner = threading.Thread(target=hub.run, name="mesh-hub", daemon=True)
        runner.start()
        stopped.wait()
        hub.stop()
