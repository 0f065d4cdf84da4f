"""``flexplane-agent remove``: take this node's Proxmox token back, and nothing any other node needs.

    flexplane-agent remove                 # the node named in /etc/flexplane/agent.toml
    flexplane-agent remove --node pve4     # a node that is gone: run it on any node of its cluster

Every node's agent calls Proxmox as the one user ``flexplane@pve``, through a token of its own
(``agent.pveadmin``). Deleting the user would cut off every other node of the cluster; this deletes
only the node's token, and Proxmox deletes the token's own permissions with it. The user, its roles
and its permissions stay while any node's token remains; when the last one is gone the command says
how to delete them too. The node's files and package are ``apt purge flexplane-agent``'s.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from agent.bootstrap.options import (
    EXIT_FAILED,
    EXIT_USAGE,
    BootstrapError,
    add_proxmox_admin_options,
    proxmox_admin,
    proxmox_ca_of,
    say,
    say_error,
)
from agent.pveadmin import AGENT_USER, ProxmoxAdmin, ProxmoxAdminError, agent_roles, token_id

DEFAULT_CONFIG = Path("/etc/flexplane/agent.toml")


def configured_node(config: Path) -> str:
    """The node the agent's configuration names (read as TOML only: a half-broken config still names it)."""
    try:
        node = tomllib.loads(config.read_text(encoding="utf-8")).get("node")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BootstrapError(
            f"cannot read the node's name from {config}: {exc}; give it with --node"
        ) from None
    if not isinstance(node, str) or not node:
        raise BootstrapError(f"{config} names no node; give it with --node")
    return node


def remove(admin: ProxmoxAdmin, node: str) -> None:
    """Delete the node's token; say what is left, and how to remove that once no node needs it."""
    try:
        say(f"proxmox token {token_id(node)}", admin.remove_node(node))
        left = sorted(admin.tokens(AGENT_USER))
    except ProxmoxAdminError as exc:
        raise BootstrapError(str(exc), "Run it again once that is fixed.") from None
    if left:
        others = ", ".join(f"{AGENT_USER}!{name}" for name in left)
        say(f"proxmox user {AGENT_USER}", f"kept: the tokens of other nodes use it ({others})")
        return
    roles = " ".join(f"&& pveum role delete {role}" for role in agent_roles(9))
    say(
        f"proxmox user {AGENT_USER}",
        f"kept, though no node's token is left; to remove it: pveum user delete {AGENT_USER} {roles}",
    )


def run_remove(args: argparse.Namespace) -> int:
    try:
        node = args.node or configured_node(Path(args.config))
    except BootstrapError as exc:
        say_error("remove", exc)
        return EXIT_USAGE
    try:
        remove(proxmox_admin(args, proxmox_ca_of(args)), node)
    except BootstrapError as exc:
        say_error("remove", exc)
        return EXIT_FAILED
    print(f"flexplane-agent remove: {node}'s Proxmox token is gone; other nodes are untouched.", flush=True)
    return 0


def add_remove(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "remove",
        help="delete this node's Proxmox token (other nodes keep theirs)",
        description="Delete a node's Proxmox API token; the shared user, roles and permissions stay.",
    )
    parser.add_argument("--node", help="the node whose token goes (default: the one --config names)")
    parser.add_argument(
        "--config", default=str(DEFAULT_CONFIG), help=f"the agent's configuration (default: {DEFAULT_CONFIG})"
    )
    add_proxmox_admin_options(parser, "delete the token")
    parser.set_defaults(handler=run_remove)
