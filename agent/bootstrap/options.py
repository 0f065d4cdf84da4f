"""The bootstrap's command line, checked: its options, and how it says what it did."""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import socket
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from agent.config import (
    DEFAULT_IMAGE_CACHE,
    DEFAULT_INSTALL_DIR,
    DEFAULT_PROXMOX_URL,
    DEFAULT_SNIPPETS_DIR,
    DEFAULT_SNIPPETS_STORAGE,
)
from agent.pveadmin import ApiAdmin, Change, ProxmoxAdmin, ProxmoxAdminError, PveumAdmin
from agent.service import DROPIN, LEGACY_UNIT
from agentclient.enrollment import JoinTokenParts, parse_join_token
from agentclient.identity import host_identity

DEFAULT_PORT = 7443
ETC = Path("etc/flexplane")
PROXMOX_ROOT_CA = Path("etc/pve/pve-root-ca.pem")
EXIT_FAILED = 1
EXIT_USAGE = 2


class BootstrapError(Exception):
    """The bootstrap stopped: what happened, and what to do now (``plan``)."""

    def __init__(self, message: str, plan: str = "") -> None:
        super().__init__(message)
        self.plan = plan


@dataclass(frozen=True)
class Options:
    orchestrator: str
    token: JoinTokenParts
    root: Path
    endpoint: str
    ca_file: Path | None
    proxmox_url: str
    proxmox_ca: Path | None
    image_cache: Path
    snippets_dir: Path
    install_dir: Path
    # The WireGuard interface this node's mesh runs on, when the platform has a mesh (agent.mesh).
    mesh_interface: str = "fpmesh0"
    # The storage whose snippets folder snippets_dir is; the bootstrap gives it the snippets content
    # type, unless the operator keeps storage settings to themselves (--no-storage-changes).
    snippets_storage: str = DEFAULT_SNIPPETS_STORAGE
    storage_changes: bool = True

    @property
    def identity(self) -> str:
        return host_identity(self.token.zone, self.token.host)

    @property
    def etc(self) -> Path:
        return self.root / ETC

    @property
    def config_path(self) -> Path:
        return self.etc / "agent.toml"

    @property
    def dropin_path(self) -> Path:
        return self.root / DROPIN

    @property
    def legacy_unit_path(self) -> Path:
        return self.root / LEGACY_UNIT

    @property
    def secret_path(self) -> Path:
        return self.etc / "proxmox-token"

    @property
    def release_key_path(self) -> Path:
        return self.etc / "release-public.pem"

    def shown(self, path: Path) -> str:
        """A path as the node will know it: relative to --root, written from /."""
        return f"/{path.relative_to(self.root)}" if path.is_relative_to(self.root) else str(path)

    def retry_plan(self) -> str:
        return (
            "Nothing was written. Run the same command again once that is fixed: the token stays valid "
            f"until {at(self.token.expires_at)}."
        )


def at(moment: datetime.datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def say(what: str, change: Change | str) -> None:
    print(f"  {what}: {change}", flush=True)


def say_error(command: str, error: BootstrapError | str) -> None:
    """Why ``flexplane-agent <command>`` stops, on stderr as every subcommand says it; then what to do
    now, when the error says (its ``plan``)."""
    print(f"flexplane-agent {command}: {error}", file=sys.stderr)
    if isinstance(error, BootstrapError) and error.plan:
        print(error.plan, file=sys.stderr)


# ---------------------------------------------------------------------------------------- options


def _endpoint(address: str | None, orchestrator: str) -> str:
    """``ip:port`` the orchestrator dials: --address (ip, or ip:port), else this node's primary address."""
    if not address:
        return f"{primary_address(orchestrator)}:{DEFAULT_PORT}"
    text = address.strip()
    host, port = text, str(DEFAULT_PORT)
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":") or port
    elif text.count(":") == 1:
        host, port = text.split(":")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise BootstrapError(f"--address {address!r} is not an IP address (ip or ip:port)") from None
    if not port.isdigit() or not 0 < int(port) <= 65535:
        raise BootstrapError(f"--address {address!r}: the port must be 1 to 65535")
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def primary_address(orchestrator: str) -> str:
    """The address this node reaches the orchestrator from: the one it can be reached at, usually."""
    parts = urllib.parse.urlsplit(orchestrator)
    try:
        family, _, _, _, target = socket.getaddrinfo(
            parts.hostname, parts.port or 443, type=socket.SOCK_DGRAM
        )[0]
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect(target)
            return str(probe.getsockname()[0])
    except OSError as exc:
        raise BootstrapError(f"cannot tell this node's address ({exc}): give it with --address") from None


def parse_options(args: argparse.Namespace) -> Options:
    url = args.orchestrator.rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise BootstrapError(f"--orchestrator {args.orchestrator!r} must be an https:// URL")
    try:
        token = parse_join_token(args.token)
    except ValueError as exc:
        raise BootstrapError(f"--token: {exc}") from None
    root = Path(args.root).resolve()
    if root != Path("/") and not args.no_start:
        raise BootstrapError("--root other than / needs --no-start: systemd manages the real system only")
    if root == Path("/") and hasattr(os, "geteuid") and os.geteuid() != 0:
        raise BootstrapError("run it as root: it writes /etc/flexplane and sets up Proxmox and systemd")
    if datetime.datetime.now(datetime.UTC) >= token.expires_at:
        raise BootstrapError(
            f"this join token expired at {at(token.expires_at)}",
            "Ask an admin for a new one (createHostJoinToken) and run the command with it.",
        )
    return Options(
        orchestrator=url,
        token=token,
        root=root,
        endpoint=_endpoint(args.address, url),
        ca_file=_readable(args.ca_file, "--ca-file"),
        proxmox_url=args.proxmox_url.rstrip("/"),
        proxmox_ca=proxmox_ca_of(args, root),
        image_cache=Path(args.image_cache)
        if args.image_cache
        else root / DEFAULT_IMAGE_CACHE.relative_to("/"),
        snippets_dir=Path(args.snippets_dir)
        if args.snippets_dir
        else root / DEFAULT_SNIPPETS_DIR.relative_to("/"),
        mesh_interface=getattr(args, "mesh_interface", None) or "fpmesh0",
        storage_changes=not getattr(args, "no_storage_changes", False),
        install_dir=Path(args.install_dir).resolve()
        if args.install_dir
        else root / DEFAULT_INSTALL_DIR.relative_to("/"),
    )


def _readable(value: str | None, option: str) -> Path | None:
    if not value:
        return None
    path = Path(value).resolve()
    if not path.is_file() or not os.access(path, os.R_OK):
        raise BootstrapError(f"{option} {value}: not a readable file")
    return path


def add_proxmox_admin_options(parser: argparse.ArgumentParser, doing: str) -> None:
    """The options saying how a command works on Proxmox as its administrator: ``pveum`` on the node, or
    the Proxmox API as root (``doing``: what it does there, for the help)."""
    parser.add_argument(
        "--proxmox-admin",
        choices=("pveum", "api"),
        default="pveum",
        help=f"{doing} with pveum (default) or the Proxmox API as root",
    )
    parser.add_argument("--proxmox-url", default=DEFAULT_PROXMOX_URL, help="this node's Proxmox API")
    parser.add_argument("--proxmox-user", default="root@pam", help="with --proxmox-admin api: who logs in")
    parser.add_argument(
        "--proxmox-password-file", help="with --proxmox-admin api: a file holding the password"
    )
    parser.add_argument(
        "--proxmox-ca",
        help=f"the CA of the Proxmox API's certificate (default: /{PROXMOX_ROOT_CA} if present)",
    )


def proxmox_ca_of(args: argparse.Namespace, root: Path = Path("/")) -> Path | None:
    """--proxmox-ca, else the node's own Proxmox root CA where there is one."""
    default_ca = root / PROXMOX_ROOT_CA
    return _readable(args.proxmox_ca, "--proxmox-ca") or (default_ca if default_ca.is_file() else None)


def proxmox_admin(args: argparse.Namespace, proxmox_ca: Path | None) -> ProxmoxAdmin:
    if args.proxmox_admin == "pveum":
        return PveumAdmin()
    if not args.proxmox_password_file:
        raise BootstrapError("--proxmox-admin api needs --proxmox-password-file (root@pam's password)")
    try:
        password = Path(args.proxmox_password_file).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise BootstrapError(f"--proxmox-password-file: {exc}") from None
    try:
        return ApiAdmin(args.proxmox_url, args.proxmox_user, password, ca_file=proxmox_ca)
    except ProxmoxAdminError as exc:
        raise BootstrapError(
            str(exc), "Nothing was changed. Check the Proxmox URL and credentials."
        ) from None
