"""Loopback addresses and ports for the devstack's servers."""

from __future__ import annotations

import socket


def free_port(host: str) -> int:
    """A port free on ``host`` now (for servers whose URL must be known before they bind)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host.strip("[]"), 0))
        port: int = probe.getsockname()[1]
        return port
