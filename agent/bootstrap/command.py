"""``flexplane-agent bootstrap``: every step in order (:func:`bootstrap`), and the command's parser."""

from __future__ import annotations

import argparse
import sys
from contextlib import suppress

from agent.bootstrap.channel import install_channel_release, offered_updates, report_release
from agent.bootstrap.doctor import blocking, examine, say_findings
from agent.bootstrap.enroll import enroll, issued, setup_proxmox
from agent.bootstrap.files import (
    Planned,
    config_text,
    config_values,
    exec_start,
    install,
    mesh_files,
    registry_file,
)
from agent.bootstrap.options import (
    DEFAULT_PORT,
    EXIT_FAILED,
    EXIT_USAGE,
    BootstrapError,
    Options,
    add_proxmox_admin_options,
    at,
    parse_options,
    proxmox_admin,
    say,
)
from agent.certs import discard_pending, key_pem, make_csr, new_key
from agent.config import DEFAULT_IMAGE_CACHE, DEFAULT_INSTALL_DIR, DEFAULT_SNIPPETS_DIR
from agent.pveadmin import AGENT_USER, Change, ProxmoxAdmin, ProxmoxAdminError, token_name
from agent.service import (
    DROPIN,
    PACKAGED_UNITS,
    UNIT_NAME,
    WRITTEN_BY_BOOTSTRAP,
    ServiceError,
    ServiceManager,
    Systemd,
    UnitOnly,
    dropin_text,
    packaged_unit,
)
from agentclient.wireguard import new_private_key, public_key


def remove_legacy_unit(opts: Options) -> Change:
    """The whole unit an earlier bootstrap wrote to /etc/systemd/system, which shadows the package's (and
    its sandbox): removed once the drop-in is in place. A unit of the operator's own is left, and said."""
    path = opts.legacy_unit_path
    if not path.is_file():
        return Change.UNCHANGED
    what = f"systemd unit /{path.relative_to(opts.root)}"
    if not path.read_text(encoding="utf-8", errors="replace").startswith(WRITTEN_BY_BOOTSTRAP):
        say(what, "kept: not the bootstrap's; it overrides the package's")
        return Change.UNCHANGED
    path.unlink()
    say(what, "removed: the package's unit runs with the drop-in")
    return Change.REMOVED


def bootstrap(opts: Options, admin: ProxmoxAdmin, service: ServiceManager) -> None:
    """Every step, in order; BootstrapError says which one stopped and what to do."""
    print(
        f"flexplane-agent bootstrap: enrolling {opts.token.host} of zone {opts.token.zone} at "
        f"{opts.endpoint} (token valid until {at(opts.token.expires_at)})",
        flush=True,
    )
    preflight(opts, admin)
    secret, token_change = setup_proxmox(admin, opts)
    key = new_key()
    mesh_key = new_private_key()  # the node's WireGuard key: only its public half is sent
    try:
        answer = enroll(opts, make_csr(key, opts.identity), public_key(mesh_key))
        cert, ca, settings = issued(opts, answer, key)
        updates = offered_updates(settings)
        installed = install_channel_release(opts, updates) if updates else None
    except BootstrapError:
        if token_change is not Change.UNCHANGED:  # leave no token nobody holds the secret of
            with suppress(ProxmoxAdminError):
                admin.remove_token(AGENT_USER, token_name(opts.token.host))
        raise
    self_update = report_release(opts, updates, installed)
    etc = opts.etc
    files = [
        Planned("key /etc/flexplane/agent.key", etc / "agent.key", key_pem(key), 0o600, Change.RENEWED),
        Planned("certificate /etc/flexplane/agent.crt", etc / "agent.crt", cert, 0o644, Change.RENEWED),
        Planned("platform CA /etc/flexplane/platform-ca.crt", etc / "platform-ca.crt", ca, 0o644),
        Planned(
            "proxmox token secret /etc/flexplane/proxmox-token",
            opts.secret_path,
            secret.encode() + b"\n",
            0o600,
        ),
    ]
    if opts.ca_file:
        files.append(
            Planned(
                "orchestrator CA /etc/flexplane/orchestrator-ca.crt",
                etc / "orchestrator-ca.crt",
                opts.ca_file.read_bytes(),
                0o644,
            )
        )
    if self_update is not None:
        files.append(
            Planned(
                "release public key /etc/flexplane/release-public.pem",
                opts.release_key_path,
                self_update.public_key_pem,
                0o644,
            )
        )
        if self_update.registry is not None:
            files.append(registry_file(opts, self_update.registry))
    mesh = settings.get("mesh")
    if isinstance(mesh, dict):  # the platform reaches this node over its WireGuard mesh
        files += mesh_files(opts, mesh, mesh_key)
    unit = Planned(
        f"systemd drop-in /{DROPIN}",
        opts.dropin_path,
        dropin_text(exec_start(opts.config_path, opts.install_dir)).encode(),
        0o644,
    )
    config = Planned(
        "configuration /etc/flexplane/agent.toml",
        opts.config_path,
        config_text(config_values(opts, settings, self_update)).encode(),
        0o640,
    )
    # A renewal a crash interrupted must not be finished over the pair written now.
    discard_pending(etc / "agent.crt", etc / "agent.key")
    changes = install([*files, unit, config], opts.root)
    legacy = remove_legacy_unit(opts)
    release_changed = installed is not None and installed.change in (Change.WRITTEN, Change.RENEWED)
    try:
        started = service.activate(
            unit_changed=changes[unit.path] is not Change.UNCHANGED or legacy is Change.REMOVED,
            config_changed=release_changed
            or any(changes[f.path] is not Change.UNCHANGED for f in [*files, config]),
        )
    except ServiceError as exc:
        raise BootstrapError(
            f"the files are in place, but the service did not start: {exc}",
            f"Fix that, then: systemctl enable --now {UNIT_NAME}",
        ) from None
    say(f"service {UNIT_NAME}", started)
    print(
        f"flexplane-agent bootstrap: {opts.identity} is enrolled; the host shows online in `hosts` once its "
        "agent answers.",
        flush=True,
    )


def preflight(opts: Options, admin: ProxmoxAdmin) -> None:
    """``flexplane-agent doctor``'s checks, said before anything changes; BootstrapError on a blocking one."""
    print("flexplane-agent bootstrap: checking the node (flexplane-agent doctor)", flush=True)
    findings = examine(
        admin,
        orchestrator=opts.orchestrator,
        ca_file=opts.ca_file,
        storage_changes=opts.storage_changes,
        snippets_storage=opts.snippets_storage,
    )
    say_findings(findings)
    stopped = blocking(findings)
    if stopped:
        raise BootstrapError(
            "the node is not ready: " + "; ".join(f"{f.check}: {f.detail} (do: {f.fix})" for f in stopped),
            opts.retry_plan(),
        )


# ----------------------------------------------------------------------------------- the command


def run_bootstrap(args: argparse.Namespace) -> int:
    try:
        opts = parse_options(args)
    except BootstrapError as exc:
        _report(exc)
        return EXIT_USAGE
    try:
        if not args.no_start and packaged_unit(opts.root) is None:
            raise BootstrapError(
                f"the flexplane-agent package's systemd unit is not installed (/{PACKAGED_UNITS[0]}), "
                "which the bootstrap's drop-in completes; nothing was changed",
                "Install the Debian package (docs/install.md), or run the bootstrap with --no-start and "
                "start the agent with the drop-in's ExecStart yourself.",
            )
        admin = proxmox_admin(args, opts.proxmox_ca)
        bootstrap(opts, admin, UnitOnly() if args.no_start else Systemd())
    except BootstrapError as exc:
        _report(exc)
        return EXIT_FAILED
    return 0


def _report(exc: BootstrapError) -> None:
    print(f"flexplane-agent bootstrap: {exc}", file=sys.stderr)
    if exc.plan:
        print(exc.plan, file=sys.stderr)


def add_bootstrap(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "bootstrap",
        help="enroll this Proxmox node with a join token",
        description="Enroll this Proxmox node: Proxmox API token, certificate, configuration, service.",
    )
    parser.add_argument("--orchestrator", required=True, help="the orchestrator's https:// URL")
    parser.add_argument("--token", required=True, help="the join token (createHostJoinToken)")
    parser.add_argument(
        "--root", default="/", help="install under this folder as if it were / (needs --no-start)"
    )
    parser.add_argument(
        "--address",
        "--listen",
        dest="address",
        help=f"the IP (or IP:port, default port {DEFAULT_PORT}) the orchestrator dials; "
        "default: this node's address towards the orchestrator",
    )
    parser.add_argument(
        "--ca-file", help="a CA to trust for the orchestrator's HTTPS (default: the system's)"
    )
    add_proxmox_admin_options(parser, "set up the agent's Proxmox token")
    parser.add_argument("--image-cache", help=f"where images are downloaded (default: {DEFAULT_IMAGE_CACHE})")
    parser.add_argument(
        "--snippets-dir", help=f"the snippets folder of storage local (default: {DEFAULT_SNIPPETS_DIR})"
    )
    parser.add_argument(
        "--no-storage-changes",
        action="store_true",
        help="refuse, naming the command to run, instead of enabling the snippets content type on the "
        "snippets storage",
    )
    parser.add_argument(
        "--install-dir",
        help=f"where the agent's releases are installed, for self-update (default: {DEFAULT_INSTALL_DIR})",
    )
    parser.add_argument(
        "--mesh-interface", default="fpmesh0", help="the WireGuard interface of the mesh (default: fpmesh0)"
    )
    parser.add_argument(
        "--no-start", action="store_true", help="write the systemd drop-in but do not start the service"
    )
    parser.set_defaults(handler=run_bootstrap)
