"""The ``flexplane-agent`` command.

    flexplane-agent serve --config /etc/flexplane/agent.toml
    python -m agent serve --config PATH
    flexplane-agent --config PATH            # serve is the default command
    flexplane-agent bootstrap --orchestrator URL --token TOKEN   # enroll this node (agent.bootstrap)
    flexplane-agent remove [--node NAME]     # delete this node's Proxmox token (agent.bootstrap.remove)
    flexplane-agent doctor                   # check the node before enrolling it (agent.bootstrap.doctor)
    flexplane-agent release keygen|build|install|push ...   # signed releases (agent.release_command)
    flexplane-agent update-apply --plan PATH # self-update's detached apply step (agent.update)
    flexplane-agent update now               # check the release channel now (agent.update.now)
    flexplane-agent mesh up|down|status      # this node's WireGuard mesh interface (agent.mesh)

Exit status: 0 after a clean shutdown, 2 for a configuration or startup problem.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from agent import __version__
from agent.bootstrap import add_bootstrap, add_doctor, add_remove
from agent.config import ConfigError, load_config
from agent.mesh import MeshConfigError, add_mesh, config_beside, up
from agent.mesh import load as load_mesh
from agent.release_command import add_release
from agentclient.wireguard import WireGuardError

DEFAULT_CONFIG = "/etc/flexplane/agent.toml"
DEFAULT_COMMAND = "serve"
EXIT_CONFIG = 2

log = logging.getLogger("agent")

Handler = Callable[[argparse.Namespace], int]


def _configure_logging(level: int) -> None:
    """The agent's own lines at level, other libraries' warnings and errors, all to stderr."""
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.getLogger("agent").setLevel(level)


def _run(main: Coroutine[Any, Any, None]) -> None:
    """The server on uvloop's event loop: about an eighth less of the agent's CPU per proxied call than
    on asyncio's own (grpc.aio and aiohttp run on any asyncio loop). A release's zipapp may run on a node
    whose package predates uvloop (releases run on the package's libraries): asyncio's loop then."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def run_serve(args: argparse.Namespace) -> int:
    """Load the configuration and serve until SIGTERM or SIGINT."""
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"flexplane-agent: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    _configure_logging(config.log_level_number)
    mesh_config = config_beside(args.config)
    if mesh_config.is_file():  # enrolled on a mesh: its interface up before listening on its address
        try:
            up(load_mesh(mesh_config))
        except (MeshConfigError, WireGuardError) as exc:
            print(f"flexplane-agent: the mesh cannot come up: {exc}", file=sys.stderr)
            return EXIT_CONFIG
    # Imported here: grpc and aiohttp take a while to load, and only serving needs them.
    from agent.server import StartupError, serve

    try:
        _run(serve(config))
    except StartupError as exc:
        log.error("%s", exc)
        print(f"flexplane-agent: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return 0


def add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("serve", help="serve the control plane (the default command)")
    parser.add_argument(
        "--config",
        default=os.environ.get("FLEXPLANE_AGENT_CONFIG", DEFAULT_CONFIG),
        help=f"TOML configuration file (default: $FLEXPLANE_AGENT_CONFIG or {DEFAULT_CONFIG})",
    )
    parser.set_defaults(handler=run_serve)


def run_update_apply(args: argparse.Namespace) -> int:
    """Switch to the planned release, restart the agent, roll back unless it answers (agent.update)."""
    _configure_logging(logging.INFO)
    from agent.update import apply_plan

    return apply_plan(args.plan)


def add_update_apply(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("update-apply", help="apply a downloaded update (started by the agent)")
    parser.add_argument("--plan", type=Path, required=True, help="the update plan the agent wrote")
    parser.set_defaults(handler=run_update_apply)


def run_update_now(args: argparse.Namespace) -> int:
    """Check the release channel now, through the serving agent's updater (agent.update.now)."""
    from agent.update import now  # aiohttp and the updater load only for this command

    return now.run_update_now(args)


def add_update_now(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("update", help="self-update: ask for it now")
    actions = parser.add_subparsers(dest="update_command", metavar="ACTION", required=True)
    now = actions.add_parser("now", help="check the release channel now; update if it offers another version")
    now.add_argument(
        "--config",
        type=Path,
        default=Path(os.environ.get("FLEXPLANE_AGENT_CONFIG", DEFAULT_CONFIG)),
        help=f"the agent's configuration (default: {DEFAULT_CONFIG})",
    )
    now.add_argument("--no-wait", dest="wait", action="store_false", help="do not wait for the apply step")
    now.set_defaults(handler=run_update_now)


# Each command adds its parser and sets its handler; add new commands here.
COMMANDS: tuple[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None], ...] = (
    add_serve,
    add_bootstrap,
    add_remove,
    add_doctor,
    add_release,
    add_update_apply,
    add_update_now,
    lambda commands: add_mesh(commands, os.environ.get("FLEXPLANE_AGENT_CONFIG", DEFAULT_CONFIG)),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flexplane-agent", description="The flex.plane agent of a Proxmox node."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the flexplane-agent console script and of ``python -m agent``."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help", "--version")):
        args_list.insert(0, DEFAULT_COMMAND)
    args = parser.parse_args(args_list)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
