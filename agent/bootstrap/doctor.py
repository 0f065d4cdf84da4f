"""``flexplane-agent doctor``: what a node needs before it can run the agent, each finding with what to do.

    flexplane-agent doctor [--orchestrator URL] [--no-storage-changes] [--proxmox-admin api ...]

The bootstrap runs the same checks (:func:`examine`) before it changes anything, and stops on a
blocking finding; the others are said and left to the operator, since the node works without them
until the feature that needs them is used (a mesh, an edge gateway, an image import):

- the Proxmox VE version, and so the privilege names the agent's roles are written in (blocking);
- the snippets storage allows snippets, or the bootstrap may enable it (blocking with
  ``--no-storage-changes``);
- the image staging storage takes ``import`` or ``iso`` content (image imports upload there);
- SDN answers (tenant networks are SDN zones and VNets);
- WireGuard: the kernel's module, or ``wireguard-go`` (the platform's mesh);
- ``nft`` (edge gateways' rules);
- the clock, against the orchestrator's (certificates are checked against it; a clock minutes off
  makes a fresh certificate "not yet valid").
"""

from __future__ import annotations

import argparse
import datetime
import email.utils
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from agent.bootstrap.options import (
    EXIT_FAILED,
    BootstrapError,
    add_proxmox_admin_options,
    proxmox_admin,
    proxmox_ca_of,
    say_error,
)
from agent.config import DEFAULT_IMAGE_STAGING_STORAGE, DEFAULT_SNIPPETS_STORAGE
from agent.pveadmin import SNIPPETS, ProxmoxAdmin, ProxmoxAdminError, snippets_plan

CLOCK_TOLERANCE = datetime.timedelta(seconds=60)
REQUEST_TIMEOUT = 10.0
IMPORT_CONTENT = ("import", "iso")  # agent.images uploads as the first of these the storage takes


@dataclass(frozen=True)
class Finding:
    """One check: what was found, and when it is not well, what to do; a blocking one stops the bootstrap."""

    check: str
    ok: bool
    detail: str
    fix: str = ""
    blocking: bool = False

    def lines(self) -> list[str]:
        said = [f"  {'ok  ' if self.ok else 'FAIL' if self.blocking else 'warn'} {self.check}: {self.detail}"]
        return said + ([f"       do: {self.fix}"] if not self.ok and self.fix else [])


@dataclass(frozen=True)
class Host:
    """Where the node's own tools are looked for: ``PATH`` and ``/sys`` (a test's folders instead)."""

    path: str | None = field(default_factory=lambda: os.environ.get("PATH"))
    sys_dir: Path = Path("/sys")


def examine(
    admin: ProxmoxAdmin,
    *,
    orchestrator: str | None = None,
    ca_file: Path | None = None,
    storage_changes: bool = True,
    snippets_storage: str = DEFAULT_SNIPPETS_STORAGE,
    staging_storage: str = DEFAULT_IMAGE_STAGING_STORAGE,
    host: Host | None = None,
) -> list[Finding]:
    """Every check, in the order the module names them."""
    host = host or Host()
    findings = [
        proxmox_version(admin),
        snippets(admin, snippets_storage, storage_changes),
        staging(admin, staging_storage),
        sdn(admin),
        wireguard(host),
        nftables(host),
    ]
    if orchestrator:
        findings.append(clock(orchestrator, ca_file))
    return findings


def proxmox_version(admin: ProxmoxAdmin) -> Finding:
    try:
        version = admin.version().strip()
        major = admin.major()
    except ProxmoxAdminError as exc:
        return Finding(
            "proxmox version",
            False,
            str(exc),
            "run the agent on Proxmox VE 8 or 9 (upgrade older nodes first: pve7to8, then pve8to9)",
            blocking=True,
        )
    return Finding(
        "proxmox version", True, f"{version} (the agent's roles use Proxmox VE {major}'s privileges)"
    )


def snippets(admin: ProxmoxAdmin, storage: str, may_change: bool) -> Finding:
    check = f"storage {storage} content {SNIPPETS}"
    try:
        content = admin.storage_content(storage)
    except ProxmoxAdminError as exc:
        return Finding(check, False, str(exc), f"make storage {storage} (the agent's snippets storage)", True)
    if SNIPPETS in content:
        return Finding(check, True, "allowed")
    if may_change:
        return Finding(
            check, True, f"not allowed yet; the bootstrap enables it ({snippets_plan(storage, content)})"
        )
    return Finding(
        check,
        False,
        "not allowed (the agent writes cloud-init files there)",
        snippets_plan(storage, content),
        True,
    )


def staging(admin: ProxmoxAdmin, storage: str) -> Finding:
    check = f"storage {storage} content import or iso"
    try:
        content = admin.storage_content(storage)
    except ProxmoxAdminError as exc:
        return Finding(check, False, f"{exc}: images cannot be imported", "make a file storage named so")
    takes = [c for c in IMPORT_CONTENT if c in content]
    if takes:
        return Finding(check, True, f"images are uploaded as {takes[0]}")
    return Finding(
        check,
        False,
        f"takes neither (content: {','.join(sorted(content)) or 'none'}): images cannot be imported",
        f"pvesm set {storage} --content {','.join(sorted(content | {'import'}))}",
    )


def sdn(admin: ProxmoxAdmin) -> Finding:
    try:
        zones = admin.sdn_zones()
    except ProxmoxAdminError as exc:
        return Finding(
            "sdn",
            False,
            f"Proxmox's SDN does not answer ({exc}): tenant networks cannot be made",
            "install libpve-network-perl (part of Proxmox VE 8.1 and later) and reload pveproxy",
        )
    return Finding("sdn", True, f"answers ({len(zones)} zones)")


def wireguard(host: Host) -> Finding:
    if (host.sys_dir / "module" / "wireguard").is_dir():
        return Finding("wireguard", True, "the kernel's module is loaded")
    if shutil.which("wireguard-go", path=host.path):
        return Finding("wireguard", True, "wireguard-go (the kernel has no module loaded)")
    return Finding(
        "wireguard",
        False,
        "neither the kernel's module nor wireguard-go: the node cannot join the platform's mesh",
        "modprobe wireguard (and add it to /etc/modules), or apt install wireguard-go",
    )


def nftables(host: Host) -> Finding:
    found = shutil.which("nft", path=host.path)
    if found:
        return Finding("nftables", True, found)
    return Finding(
        "nftables", False, "nft is not installed: edge gateways cannot run here", "apt install nftables"
    )


def clock(orchestrator: str, ca_file: Path | None) -> Finding:
    """This node's clock against the Date the orchestrator answers with."""
    try:
        answer = requests.head(
            orchestrator,
            timeout=REQUEST_TIMEOUT,
            verify=str(ca_file) if ca_file else True,
            allow_redirects=False,
        )
    except requests.RequestException as exc:
        return Finding("clock", False, f"cannot ask the orchestrator at {orchestrator} for its time: {exc}")
    now = datetime.datetime.now(datetime.UTC)
    try:
        theirs = email.utils.parsedate_to_datetime(answer.headers["Date"])
    except (KeyError, TypeError, ValueError):
        return Finding("clock", False, f"the orchestrator at {orchestrator} answered no Date to compare with")
    skew = now - theirs
    if abs(skew) <= CLOCK_TOLERANCE:
        return Finding("clock", True, f"within {CLOCK_TOLERANCE.seconds} s of the orchestrator's")
    ahead = "ahead of" if skew.total_seconds() > 0 else "behind"
    return Finding(
        "clock",
        False,
        f"{abs(int(skew.total_seconds()))} s {ahead} the orchestrator's: certificates may not be valid yet",
        "timedatectl set-ntp true (or configure chrony), then check timedatectl status",
    )


def say_findings(findings: Sequence[Finding]) -> None:
    for finding in findings:
        for line in finding.lines():
            print(line, flush=True)


def blocking(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if not f.ok and f.blocking]


# ----------------------------------------------------------------------------------- the command


def run_doctor(args: argparse.Namespace) -> int:
    try:
        admin = proxmox_admin(args, proxmox_ca_of(args))
    except BootstrapError as exc:
        say_error("doctor", exc)
        return EXIT_FAILED
    findings = examine(
        admin,
        orchestrator=args.orchestrator,
        ca_file=Path(args.ca_file) if args.ca_file else None,
        storage_changes=not args.no_storage_changes,
    )
    say_findings(findings)
    stopped = blocking(findings)
    if stopped:
        names = ", ".join(f.check for f in stopped)
        say_error("doctor", f"the bootstrap would stop here ({names})")
        return EXIT_FAILED
    return 0


def add_doctor(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "doctor",
        help="check this node before (or after) enrolling it",
        description="Check what the agent needs on this node; each finding says what to do.",
    )
    parser.add_argument("--orchestrator", help="the orchestrator's https:// URL, to compare clocks with")
    parser.add_argument(
        "--ca-file", help="a CA to trust for the orchestrator's HTTPS (default: the system's)"
    )
    parser.add_argument(
        "--no-storage-changes",
        action="store_true",
        help="as the bootstrap's option: a snippets storage without snippets is a failure",
    )
    add_proxmox_admin_options(parser, "read Proxmox")
    parser.set_defaults(handler=run_doctor)
