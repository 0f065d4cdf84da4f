"""The node's side of the WireGuard mesh: its interface, dialling the hub, nothing inbound.

``flexplane-agent bootstrap`` makes the node's WireGuard key here (only its public key is sent with
the enrollment) and writes ``/etc/flexplane/mesh.toml`` with what the orchestrator answered: the
node's mesh address, the hub's key and public endpoint. ``flexplane-agent serve`` brings the mesh up
(:func:`up`) before it listens, on the mesh address only, when that file is there.

The node dials the hub, and keeps alive every ``keepalive`` seconds: its NAT's mapping stays open,
so the orchestrator reaches it through the hub while nothing reaches the node from outside. A
restarted hub is found again within that interval.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.certs import write_atomically
from agentclient.wireguard import (
    Interface,
    Peer,
    WireGuardError,
    check_public_key,
    new_private_key,
    public_key,
)

CONFIG_NAME = "mesh.toml"
KEY_NAME = "mesh.key"
DEFAULT_INTERFACE = "fpmesh0"
# After a key rotation: how long to help the handshake along, and how often.
ROTATION_WAIT = 10.0
ROTATION_RETRY = 0.5


class MeshConfigError(Exception):
    """The mesh's configuration cannot be used; the message says which key and why."""


@dataclass(frozen=True)
class MeshConfig:
    """``/etc/flexplane/mesh.toml``: this node's place in the mesh and how to reach the hub."""

    interface: str
    private_key_file: Path
    address: str  # CIDR: the node's mesh address and the mesh's prefix
    hub_public_key: str
    hub_endpoint: str
    hub_address: str
    network: str
    keepalive: int

    @property
    def ip(self) -> str:
        return str(ipaddress.ip_interface(self.address).ip)

    def private_key(self) -> str:
        try:
            key = self.private_key_file.read_text(encoding="ascii").strip()
            public_key(key)
        except (OSError, ValueError) as exc:
            raise MeshConfigError(f"the mesh key {self.private_key_file} cannot be used: {exc}") from None
        return key


def settings_values(
    mesh: dict[str, Any], key_file: Path, interface: str = DEFAULT_INTERFACE
) -> dict[str, Any]:
    """The ``mesh.toml`` values from the orchestrator's ``mesh`` settings (checked by :func:`validate`)."""
    values = {
        "interface": interface,
        "private_key_file": str(key_file),
        "address": mesh.get("address"),
        "hub_public_key": mesh.get("hub_public_key"),
        "hub_endpoint": mesh.get("hub_endpoint"),
        "hub_address": mesh.get("hub_address"),
        "network": mesh.get("network"),
        "keepalive": mesh.get("keepalive", 15),
    }
    validate(values)
    return values


def validate(raw: dict[str, Any]) -> MeshConfig:
    def text(key: str) -> str:
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise MeshConfigError(f"mesh: {key} is required")
        return value.strip()

    try:
        address = str(ipaddress.ip_interface(text("address")))
        network = str(ipaddress.ip_network(text("network")))
        hub_address = str(ipaddress.ip_address(text("hub_address")))
        hub_key = check_public_key(text("hub_public_key"))
    except ValueError as exc:
        raise MeshConfigError(f"mesh: {exc}") from None
    endpoint = text("hub_endpoint")
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise MeshConfigError(f"mesh: hub_endpoint {endpoint!r} must be host:port")
    keepalive = raw.get("keepalive", 15)
    if isinstance(keepalive, bool) or not isinstance(keepalive, int) or not 1 <= keepalive <= 3600:
        raise MeshConfigError("mesh: keepalive must be whole seconds from 1 to 3600")
    return MeshConfig(
        interface=text("interface"),
        private_key_file=Path(text("private_key_file")),
        address=address,
        hub_public_key=hub_key,
        hub_endpoint=endpoint,
        hub_address=hub_address,
        network=network,
        keepalive=keepalive,
    )


def load(path: Path) -> MeshConfig:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MeshConfigError(f"cannot read the mesh configuration {path}: {exc}") from None
    return validate(raw)


def config_beside(agent_config: Path | str) -> Path:
    """Where the mesh's configuration is: beside the agent's."""
    return Path(agent_config).with_name(CONFIG_NAME)


def up(config: MeshConfig) -> Interface:
    """Bring the interface up (kernel WireGuard, else wireguard-go) with the node's key and address,
    its one peer the hub: the whole mesh routed through it, endpoint dialled, kept alive."""
    interface = Interface(config.interface)
    interface.create()
    interface.configure(config.private_key())
    for key in interface.peers().keys() - {config.hub_public_key}:
        interface.remove_peer(key)  # a hub key from before: only the configured hub may send here
    interface.set_peer(Peer(config.hub_public_key, (config.network,), config.hub_endpoint, config.keepalive))
    interface.set_address(config.address)
    return interface


def last_handshake(config: MeshConfig) -> int:
    """Unix seconds of the last handshake with the hub (0: none yet, or the interface is down)."""
    try:
        state = Interface(config.interface).peers().get(config.hub_public_key)
    except WireGuardError:
        return 0
    return state.latest_handshake if state else 0


# ------------------------------------------------------------------------------------ the command


def run_mesh(args: argparse.Namespace) -> int:
    path = Path(args.mesh_config) if args.mesh_config else config_beside(args.config)
    try:
        config = load(path)
        if args.action == "up":
            up(config)
            print(
                f"flexplane-agent mesh: {config.interface} up at {config.address}, hub {config.hub_endpoint}"
            )
        elif args.action == "down":
            Interface(config.interface).delete()
            print(f"flexplane-agent mesh: {config.interface} removed")
        else:
            seen = last_handshake(config)
            ago = f"{int(time.time()) - seen} s ago" if seen else "never"
            print(f"flexplane-agent mesh: {config.address} via {config.hub_endpoint}, last handshake {ago}")
    except (MeshConfigError, WireGuardError) as exc:
        print(f"flexplane-agent mesh: {exc}", file=sys.stderr)
        return 2
    return 0


def add_mesh(commands: argparse._SubParsersAction[argparse.ArgumentParser], default_config: str) -> None:
    parser = commands.add_parser("mesh", help="bring this node's mesh interface up or down, or show it")
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument(
        "--config", default=default_config, help="the agent's configuration (mesh.toml beside it)"
    )
    parser.add_argument("--mesh-config", help="the mesh's configuration (default: mesh.toml beside --config)")
    parser.set_defaults(handler=run_mesh)


# ------------------------------------------------------------------------------------- key rotation


def rotation_for(tls_cert: Path) -> tuple[Path, str] | None:
    """A certificate renewal's new WireGuard key when this node is on a mesh (mesh.toml beside its
    certificate): the configuration's path and the new private key; None off the mesh."""
    path = tls_cert.with_name(CONFIG_NAME)
    return (path, new_private_key()) if path.is_file() else None


def apply_rotation(path: Path, private_key: str) -> None:
    """The orchestrator took the new key: store it (atomically, 0600) and present it from now on.

    The hub swaps the node's key within its next pass; a call in flight meanwhile may fail once."""
    config = load(path)
    write_atomically(config.private_key_file, (private_key + "\n").encode("ascii"), 0o600)
    interface = Interface(config.interface)
    hub = Peer(config.hub_public_key, (config.network,), config.hub_endpoint, config.keepalive)
    since = int(time.time())
    interface.configure(private_key)
    # The hub takes the new key on its next pass (every second): until then the handshake this
    # started is refused, and WireGuard would wait 5 s to try again (setting the same key again
    # starts none). The hub's peer set anew does: a fresh peer with a keepalive handshakes at once.
    deadline = time.monotonic() + ROTATION_WAIT
    while time.monotonic() < deadline:
        time.sleep(ROTATION_RETRY)
        state = interface.peers().get(config.hub_public_key)
        if state is not None and state.latest_handshake >= since:
            return
        interface.remove_peer(config.hub_public_key)
        interface.set_peer(hub)
