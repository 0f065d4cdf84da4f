"""The embedded default: ``python -m devstack`` brings the world up; ``python -m devstack token alice``.

python -m devstack [up]        start everything on loopback; Ctrl-C stops it all
python -m devstack token USER  print an access token for a devstack user
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from devstack import seed
from devstack.identity.client import password_token
from devstack.meshnet import mesh_possible
from devstack.world import World, WorldConfig
from devstack.world.config import ROOT

SCRATCH = ROOT / ".devstack"
STATE = SCRATCH / "state.json"


def releases_line(world: World) -> str:
    """Where the agents' releases are published: the devstack's registry (or, without one, the folder)."""
    if world.registry is None:
        return f"the folder {world.releases}"
    return (
        f"registry {world.registry.repository} (publisher's password in "
        f"{world.registry.data_dir / 'accounts.json'})"
    )


def up() -> int:
    stop = threading.Event()
    # Both, explicitly: a devstack started in the background inherits an ignored SIGINT.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    no_mesh = mesh_possible()  # the mesh needs root (namespaces, WireGuard): else direct loopback
    world = World(
        WorldConfig(
            scratch=SCRATCH, identity_port=9000, enrollment_port=8443, mesh=no_mesh is None, providers=True
        )
    )
    try:
        print(
            "flex.plane devstack: starting (fake Proxmox zones, Kubernetes emulator, identity, "
            "orchestrator, then each node enrolls and starts its agent, then the Cluster API providers)...",
            flush=True,
        )
        world.start()
        STATE.write_text(json.dumps(world.describe(), indent=2))
        users = "\n".join(
            f"    {u['username']:<6} password {u['password']:<6} roles {', '.join(u['roles'])}"
            for u in seed.USERS
        )
        print(
            f"\nflex.plane is up at {world.url}\n"
            f"  GraphQL:  {world.url}/graphql\n"
            f"  enroll:   {world.https_url} (nodes join here; its CA: {world.pki / 'ca' / 'ca.crt'})\n"
            f"  identity: {world.describe()['issuer']}\n"
            f"  users:\n{users}\n"
            f"  a token:  .venv/bin/python -m devstack token alice\n"
            f"  releases: {releases_line(world)}\n"
            f"  logs:     {SCRATCH / 'logs'}\n"
            f"  mesh:     {mesh_line(world, no_mesh)}\n"
            f"  gateways: {gateways_line(world, no_mesh)}\n"
            "  clusters: the Cluster API providers run (python -m providers); Cluster API core and the\n"
            "            tenant API servers are stand-ins (devstack/capi_core.py, hosted_control_plane.py)\n"
            "Press Ctrl-C to stop.",
            flush=True,
        )
        stop.wait()
    finally:
        print("\nflex.plane devstack: stopping...", flush=True)
        world.stop()
        STATE.unlink(missing_ok=True)
    return 0


def gateways_line(world: World, no_mesh: str | None) -> str:
    """The banner's word on edge gateways: run in namespaces on each node, or skipped, and why."""
    if world.gateway_bridges is None:
        return (
            f"SKIPPED ({no_mesh}): the agents cannot make namespaces, so applying an edge gateway "
            "fails on the node (run `make dev` as root to run them)"
        )
    return (
        "on: each node's agent runs its edge gateways in namespaces fpgw-<vdc>.<zone>, their legs on "
        "bridges of the node's namespace (vmbr0 and the zone's applied VNets)"
    )


def mesh_line(world: World, no_mesh: str | None) -> str:
    """The banner's word on the mesh: on, and where; or off, and why."""
    if world.mesh is None:
        return f"off ({no_mesh}): the orchestrator dials each agent directly on loopback"
    net = world.mesh.topology
    return (
        f"on: hub {net.hub_public}:51820 (namespace {net.hub}), nodes in namespaces {net.node(1)}.."
        f"{net.node(net.nodes)} (the last behind NAT), addresses from {net.mesh_range}"
    )


def token(username: str, state_file: Path = STATE) -> int:
    if not state_file.exists():
        print("the devstack is not running: start it with `make dev`", file=sys.stderr)
        return 1
    state = json.loads(state_file.read_text())
    if username not in state["users"]:
        print(f"no devstack user {username!r}; users: {', '.join(state['users'])}", file=sys.stderr)
        return 1
    print(password_token(state["issuer"], username, state["users"][username]))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devstack", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("up", help="start the devstack (the default)")
    token_parser = commands.add_parser("token", help="print an access token for a devstack user")
    token_parser.add_argument("user")
    args = parser.parse_args(argv)
    if args.command == "token":
        return token(args.user)
    return up()


if __name__ == "__main__":
    sys.exit(main())
