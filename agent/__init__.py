"""The flex.plane agent: runs on every Proxmox node and serves the control plane over mutual TLS.

It proxies an allowlist of requests to the node's own Proxmox API with the node's API
token, which never leaves the node. See :mod:`agent.config` for its configuration.
"""

from importlib import metadata

try:
    __version__ = metadata.version("flexplane")
except metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
