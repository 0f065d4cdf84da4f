"""The flex.plane agent: runs on every Proxmox node and serves the control plane over mutual TLS.

It proxies an allowlist of requests to the node's own Proxmox API with the node's API
token, which never leaves the node. See :mod:`agent.config` for its configuration.
"""

from importlib import metadata, resources


def _version() -> str:
    """The version a release artifact is stamped with (agent.release), else the installed package's."""
    stamp = resources.files(__name__).joinpath("RELEASE")
    if stamp.is_file():
        return stamp.read_text(encoding="utf-8").strip()
    try:
        return metadata.version("flexplane")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0+source"


__version__ = _version()
