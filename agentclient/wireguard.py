"""WireGuard for the mesh, shared by the agent (a node's interface) and the mesh control server (the hub's).

Keys are Curve25519, base64 as ``wg`` writes them (:func:`new_private_key`, :func:`public_key`,
:func:`check_public_key`). An :class:`Interface` is configured with the ``ip`` and ``wg`` commands,
each run as an argument list (never a shell): the kernel's WireGuard where the kernel has it, else
the userspace ``wireguard-go``. A private key reaches ``wg`` on its standard input, never a file.

``netns`` runs every command inside that network namespace (``ip netns exec``): the tests' and the
devstack's topologies; production runs in the host's (or the pod's) own namespace.
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

KEY_BYTES = 32
COMMAND_TIMEOUT = 10.0
# wireguard-go refuses to start on a kernel that has WireGuard unless told this (and prints a banner).
USERSPACE_ENV = {"WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD": "1"}
# Interface names are at most 15 characters (IFNAMSIZ - 1).
MAX_NAME = 15


class WireGuardError(Exception):
    """A WireGuard or netlink command failed; the message says which and why."""


# ------------------------------------------------------------------------------------------- keys


def new_private_key() -> str:
    """A fresh private key, base64 (what ``wg genkey`` prints)."""
    raw = X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base64.b64encode(raw).decode("ascii")


def public_key(private_key: str) -> str:
    """The public key of a base64 private key (what ``wg pubkey`` prints)."""
    raw = _decode(private_key, "private key")
    public = X25519PrivateKey.from_private_bytes(raw).public_key()
    return base64.b64encode(
        public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    ).decode("ascii")


def check_public_key(value: object) -> str:
    """``value`` as a WireGuard public key (44 characters of base64, 32 bytes); ValueError saying why not."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            "a WireGuard public key is required (44 characters of base64, as `wg pubkey` prints)"
        )
    text = value.strip()
    raw = _decode(text, "public key")
    if raw == bytes(KEY_BYTES):
        raise ValueError("the WireGuard public key is all zeros: not a key")
    return base64.b64encode(raw).decode("ascii")


def _decode(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != KEY_BYTES:
        raise ValueError(f"the WireGuard {what} is not 32 bytes of base64 (as `wg genkey`/`wg pubkey` print)")
    return raw


# -------------------------------------------------------------------------------------- interface


@dataclass(frozen=True)
class Peer:
    """A peer as configured: its key, the addresses it may send from, where to reach it."""

    public_key: str
    allowed_ips: tuple[str, ...]
    endpoint: str | None = None
    keepalive: int | None = None


@dataclass(frozen=True)
class PeerState:
    """A peer as the interface reports it: its last handshake (Unix seconds, 0: never) and endpoint."""

    public_key: str
    allowed_ips: tuple[str, ...]
    endpoint: str | None
    latest_handshake: int


def userspace_available() -> bool:
    return shutil.which("wireguard-go") is not None


class Interface:
    """A WireGuard interface ``name`` (in namespace ``netns`` if given)."""

    def __init__(self, name: str, netns: str | None = None) -> None:
        if not name or len(name) > MAX_NAME or "/" in name or name.strip() != name:
            raise ValueError(f"interface name {name!r} must be 1 to {MAX_NAME} characters, no '/' or spaces")
        self.name = name
        self.netns = netns
        self.userspace = False

    def __str__(self) -> str:
        return f"{self.name} (namespace {self.netns})" if self.netns else self.name

    def _argv(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv] if self.netns else list(argv)

    def _run(self, argv: Sequence[str], stdin: str | None = None, *, check: bool = True) -> str:
        command = self._argv(argv)
        try:
            done = subprocess.run(  # noqa: S603 - an argument list, no shell
                command,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                env={**os.environ, **USERSPACE_ENV},
                check=False,
            )
        except FileNotFoundError:
            raise WireGuardError(
                f"{command[0]} is not installed: install wireguard-tools (and wireguard-go where the "
                "kernel has no WireGuard)"
            ) from None
        except subprocess.TimeoutExpired:
            raise WireGuardError(f"{' '.join(argv)} took over {COMMAND_TIMEOUT:.0f} s") from None
        if check and done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise WireGuardError(
                f"{' '.join(argv[:4])} on {self}: {detail[-1] if detail else done.returncode}"
            )
        return done.stdout

    def exists(self) -> bool:
        return bool(self._run(["ip", "-o", "link", "show", "dev", self.name], check=False).strip())

    def create(self) -> None:
        """Create the interface: the kernel's WireGuard, else ``wireguard-go``. Nothing if it exists."""
        if self.exists():
            return
        kernel = subprocess.run(  # noqa: S603
            self._argv(["ip", "link", "add", "dev", self.name, "type", "wireguard"]),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        if kernel.returncode == 0:
            return
        if not userspace_available():
            raise WireGuardError(
                f"cannot create {self}: the kernel has no WireGuard ({kernel.stderr.strip()}) and "
                "wireguard-go is not installed"
            )
        self._run(["wireguard-go", self.name])  # forks into the background, holding the interface
        self.userspace = True
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while not self.exists():
            if time.monotonic() > deadline:
                raise WireGuardError(f"wireguard-go did not create {self}")
            time.sleep(0.05)

    def configure(self, private_key: str, listen_port: int | None = None) -> None:
        """Set the interface's private key (on wg's stdin) and, for a hub, its UDP port."""
        argv = ["wg", "set", self.name, "private-key", "/dev/stdin"]
        if listen_port is not None:
            argv += ["listen-port", str(listen_port)]
        self._run(argv, stdin=private_key + "\n")

    def set_address(self, cidr: str) -> None:
        """Give the interface ``cidr`` (replacing whatever it had) and bring it up."""
        self._run(["ip", "address", "flush", "dev", self.name])
        self._run(["ip", "address", "add", cidr, "dev", self.name])
        self._run(["ip", "link", "set", "dev", self.name, "up"])

    def set_peer(self, peer: Peer) -> None:
        argv = ["wg", "set", self.name, "peer", peer.public_key, "allowed-ips", ",".join(peer.allowed_ips)]
        if peer.endpoint:
            argv += ["endpoint", peer.endpoint]
        if peer.keepalive is not None:
            argv += ["persistent-keepalive", str(peer.keepalive)]
        self._run(argv)

    def remove_peer(self, key: str) -> None:
        self._run(["wg", "set", self.name, "peer", key, "remove"])

    def private_key_public(self) -> str:
        """The public key the interface presents ("": none set)."""
        out = self._run(["wg", "show", self.name, "public-key"]).strip()
        return "" if out == "(none)" else out

    def peers(self) -> dict[str, PeerState]:
        """Every peer, from ``wg show <if> dump``."""
        peers = {}
        for line in self._run(["wg", "show", self.name, "dump"]).splitlines()[1:]:
            fields = line.split("\t")
            if len(fields) < 8:
                continue
            key, _psk, endpoint, allowed, handshake = fields[:5]
            peers[key] = PeerState(
                public_key=key,
                allowed_ips=tuple(a for a in allowed.split(",") if a and a != "(none)"),
                endpoint=None if endpoint == "(none)" else endpoint,
                latest_handshake=int(handshake) if handshake.isdigit() else 0,
            )
        return peers

    def delete(self) -> None:
        """Remove the interface (a wireguard-go holding it exits); nothing if it is gone."""
        if self.exists():
            self._run(["ip", "link", "del", "dev", self.name], check=False)
