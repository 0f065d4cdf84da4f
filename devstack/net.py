"""Loopback addresses and ports for the devstack's servers."""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Ports handed out by this process and not yet seen bound: two calls before either server binds must not get
# the same port.
_handed_out: set[tuple[str, int]] = set()
_LOWEST = 20000


def _ephemeral_floor() -> int:
    """The lowest port the kernel gives outgoing connections (Linux's default range starts at 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str) -> int:
    """A port free on ``host`` now (for servers whose URL must be known before they bind).

    Chosen below the kernel's ephemeral range: a port the kernel handed out for ``bind(0)`` is one it also
    hands to outgoing connections, and a client connecting to any server on ``host`` (its source address is
    then ``host`` too) can take it between this call and the server's bind."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    address = host.strip("[]")
    ceiling = _ephemeral_floor()
    candidates = list(range(_LOWEST, ceiling)) if ceiling > _LOWEST + 1000 else []
    random.shuffle(candidates)
    for port in candidates[:200]:
        if (address, port) in _handed_out:
            continue
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((address, port))
            except OSError:
                continue
        _handed_out.add((address, port))
        return port
    with socket.socket(family, socket.SOCK_STREAM) as probe:  # no room below the ephemeral range
        probe.bind((address, 0))
        chosen: int = probe.getsockname()[1]
        return chosen
