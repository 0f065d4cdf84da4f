"""The flex.plane agent: runs on every Proxmox node and serves the control plane over mutual TLS.

It proxies an allowlist of requests to the node's own Proxmox API with the node's API
token, which never leaves the node. See :mod:`agent.config` for its configuration.
"""

import os
from importlib import metadata, resources

# The agent forks only to exec (ip, nft, wg, qemu-img...), never to run gRPC in a child, so gRPC's fork
# handlers serve it nothing, and with them a child forked while the server polls can restart gRPC's
# poller on descriptors being closed for the exec, which aborts (grpc/grpc#43055, grpcio 1.80 and
# later). Read when gRPC initialises: set before any module of the agent imports it.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

# The distributions that install the agent: its own (distributions/flexplane-agent, on a node),
# and the whole project's.
DISTRIBUTIONS = ("flexplane-agent", "flexplane")


def _version() -> str:
    """The version a release artifact is stamped with (agent.release), else the installed distribution's."""
    stamp = resources.files(__name__).joinpath("RELEASE")
    if stamp.is_file():
        return stamp.read_text(encoding="utf-8").strip()
    for distribution in DISTRIBUTIONS:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return "0.0.0+source"  # running from a source tree that is not installed


__version__ = _version()
