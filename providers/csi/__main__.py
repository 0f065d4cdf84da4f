"""``python -m providers.csi node|controller``: the CSI driver's node plugin on one worker, or its controller
beside a tenant cluster's hosted control plane, until SIGTERM (or SIGINT).

The node plugin serves the CSI Identity and Node services on a Unix socket, where kubelet's
node-driver-registrar finds it; the controller, the Identity and Controller services, where the sidecars
(external-provisioner, -attacher, -resizer, -snapshotter) find it. Settings, each an option or its variable:

- ``--endpoint`` / ``CSI_ENDPOINT``: ``unix:///csi/csi.sock`` (the sidecars' convention).

The node plugin's:

- ``--node-id`` / ``FLEXPLANE_CSI_NODE_ID``: the worker's Kubernetes node name (the DaemonSet's
  ``spec.nodeName``), which the controller attaches volumes to;
- ``--zone`` / ``FLEXPLANE_CSI_ZONE``: the worker's zone (a volume is reachable in its zone only);
- ``--devices`` / ``FLEXPLANE_CSI_DEVICES``: where disks are found by serial (``/dev/disk/by-id``).

The controller's: flex.plane's API as the cluster's service account (``providers.common.account``:
``--url``, ``--key`` / ``FLEXPLANE_CSI_KEY``, ``--identity-url``, ``--project``, ``--token-file`` /
``FLEXPLANE_CSI_TOKEN_FILE``, ``--ca``, ``--vdc`` / ``FLEXPLANE_CSI_VDC``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType

import grpc

from providers.common import account
from providers.csi.controller import ControllerService
from providers.csi.identity import IdentityService
from providers.csi.node import BY_ID, Devices, NodeService
from providers.csi.proto import csi_pb2_grpc

log = logging.getLogger("providers.csi")
GRACE = 10.0  # seconds calls in flight get to finish at SIGTERM


def serve(endpoint: str, services: Callable[[grpc.Server], None]) -> tuple[grpc.Server, threading.Event]:
    """A server of ``services`` (which add themselves to it) on ``endpoint`` (started), and the event
    that stops it."""
    if endpoint.startswith("unix://"):
        path = Path(endpoint.removeprefix("unix://"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # a socket left by a plugin that died
    server = grpc.server(ThreadPoolExecutor(max_workers=8, thread_name_prefix="csi"))
    services(server)
    if server.add_insecure_port(endpoint) == 0:
        raise SystemExit(f"cannot serve on {endpoint}")
    server.start()
    return server, threading.Event()


def node_services(node: NodeService) -> Callable[[grpc.Server], None]:
    def add(server: grpc.Server) -> None:
        csi_pb2_grpc.add_IdentityServicer_to_server(IdentityService(), server)
        csi_pb2_grpc.add_NodeServicer_to_server(node, server)

    return add


def controller_services(controller: ControllerService) -> Callable[[grpc.Server], None]:
    def add(server: grpc.Server) -> None:
        csi_pb2_grpc.add_IdentityServicer_to_server(IdentityService(controller=True), server)
        csi_pb2_grpc.add_ControllerServicer_to_server(controller, server)

    return add


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m providers.csi", description=__doc__.splitlines()[0])
    parser.add_argument("plugin", choices=["node", "controller"])
    parser.add_argument("--endpoint", default=os.environ.get("CSI_ENDPOINT", "unix:///csi/csi.sock"))
    parser.add_argument("--node-id", default=os.environ.get("FLEXPLANE_CSI_NODE_ID", ""))
    parser.add_argument("--zone", default=os.environ.get("FLEXPLANE_CSI_ZONE", ""))
    parser.add_argument("--devices", type=Path, default=Path(os.environ.get("FLEXPLANE_CSI_DEVICES", BY_ID)))
    account.add_arguments(parser, "FLEXPLANE_CSI")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.plugin == "node":
        if not args.node_id:
            parser.error("--node-id (FLEXPLANE_CSI_NODE_ID) is required: the worker's node name")
        services = node_services(NodeService(args.node_id, args.zone, Devices(args.devices)))
        what = f"CSI node plugin of {args.node_id}"
    else:
        lacking = account.missing(args)
        if lacking:
            parser.error(f"the controller needs {', '.join(lacking)}")
        services = controller_services(ControllerService(account.flexplane(args)))
        what = f"CSI controller of VDC {args.vdc}"
    server, stop = serve(args.endpoint, services)

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    log.info("%s serving on %s", what, args.endpoint)
    stop.wait()
    server.stop(GRACE).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
