"""``flexplane-agent bootstrap``: enroll this Proxmox node into flex.plane with one command.

    flexplane-agent bootstrap --orchestrator https://flexplane.example.com --token <join token>

Run as root on the node, with a join token an admin made (``createHostJoinToken``); the token
names the zone and the host, so nothing else is needed. In order, it

1. sets up the agent's Proxmox user, role and permission, and this node's API token
   (``agent.pveadmin``: least privilege for what the agent forwards);
2. makes the node's private key (it never leaves the node) and sends a CSR, the token and the
   agent's endpoint to the orchestrator's enrollment endpoint over HTTPS; the answer is the
   certificate, the platform CA bundle and the agent's settings;
3. when those settings offer self-update (the release channel's URL and the platform's release
   public key), installs the channel's release as ``flexplane-agent release install`` would
   (``--install-dir``, default ``/opt/flexplane-agent``: ``versions/<version>``, ``current``),
   downloaded and verified by the code the agent updates itself with (``agent.update``);
4. writes, under ``--root`` (default ``/``): ``/etc/flexplane/agent.key`` (0600), ``agent.crt``,
   ``platform-ca.crt``, ``proxmox-token`` (0600), ``orchestrator-ca.crt`` (with ``--ca-file``),
   ``release-public.pem`` (with self-update), ``agent.toml`` (0640, last), and
   ``/etc/systemd/system/flexplane-agent.service``, whose ExecStart runs ``current``'s release
   (self-update needs that), or this agent's own code when the channel publishes none;
5. enables and starts the service (``agent.service``), or leaves that to others (``--no-start``).

Nothing is written before the orchestrator has answered, so an unreachable orchestrator leaves
no half-written configuration: run the same command again while the token is valid. A release
the channel serves that does not verify (unsigned, tampered, partial) stops the bootstrap before
any file is written, as the agent's own update would refuse it. Files are
staged in a folder beside their destination and renamed into place; a file already as it should
be is left alone. Running it again on an enrolled node (with a new token) is safe, and each step
says what it did: unchanged, written or renewed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import ipaddress
import json
import os
import shutil
import socket
import ssl
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import requests
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agent import __version__
from agent.certs import CertificateRefused, check_issued, discard_pending, key_pem, make_csr, new_key
from agent.config import (
    DEFAULT_IMAGE_CACHE,
    DEFAULT_INSTALL_DIR,
    DEFAULT_PROXMOX_URL,
    DEFAULT_SNIPPETS_DIR,
    UPDATE_STATE_FILE,
)
from agent.pveadmin import (
    AGENT_USER,
    ApiAdmin,
    Change,
    ProxmoxAdmin,
    ProxmoxAdminError,
    PveumAdmin,
    token_id,
    token_name,
)
from agent.release import (
    ARTIFACT,
    CURRENT,
    Installation,
    Manifest,
    ReleaseError,
    ReleaseRefused,
    file_sha256,
    public_key_from_pem,
    verify,
)
from agent.service import UNIT_DIR, UNIT_NAME, ServiceError, ServiceManager, Systemd, UnitOnly, unit_text
from agent.update import (
    LOCK_WAIT,
    NoRelease,
    StateFile,
    UpdateFailed,
    fetch_channel,
    install_release,
    refuses,
    update_lock,
)
from agentclient.enrollment import JOIN_PATH, JoinTokenParts, parse_join_token
from agentclient.identity import host_identity

DEFAULT_PORT = 7443
ETC = Path("etc/flexplane")
PROXMOX_ROOT_CA = Path("etc/pve/pve-root-ca.pem")
REQUEST_TIMEOUT = 30.0
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
    def unit_path(self) -> Path:
        return self.root / UNIT_DIR / UNIT_NAME

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
            f"until {_at(self.token.expires_at)}."
        )


def _at(moment: datetime.datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def say(what: str, change: Change | str) -> None:
    print(f"  {what}: {change}", flush=True)


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


def _options(args: argparse.Namespace) -> Options:
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
            f"this join token expired at {_at(token.expires_at)}",
            "Ask an admin for a new one (createHostJoinToken) and run the command with it.",
        )
    default_ca = root / PROXMOX_ROOT_CA
    return Options(
        orchestrator=url,
        token=token,
        root=root,
        endpoint=_endpoint(args.address, url),
        ca_file=_readable(args.ca_file, "--ca-file"),
        proxmox_url=args.proxmox_url.rstrip("/"),
        proxmox_ca=_readable(args.proxmox_ca, "--proxmox-ca")
        or (default_ca if default_ca.is_file() else None),
        image_cache=Path(args.image_cache)
        if args.image_cache
        else root / DEFAULT_IMAGE_CACHE.relative_to("/"),
        snippets_dir=Path(args.snippets_dir)
        if args.snippets_dir
        else root / DEFAULT_SNIPPETS_DIR.relative_to("/"),
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


def _admin(args: argparse.Namespace, proxmox_ca: Path | None) -> ProxmoxAdmin:
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


# ------------------------------------------------------------------------------------- the steps


def setup_proxmox(admin: ProxmoxAdmin, opts: Options) -> tuple[str, Change]:
    """The agent's role, user and permission, and this node's token: its secret, and what was done to it."""
    known = opts.secret_path.read_text(encoding="utf-8").strip() if opts.secret_path.is_file() else None
    try:
        say("proxmox role FlexPlaneAgent", admin.ensure_role())
        say("proxmox user flexplane@pve", admin.ensure_user())
        say("proxmox permission / for flexplane@pve", admin.ensure_grant())
        change, secret = admin.ensure_token(opts.token.host, known)
    except ProxmoxAdminError as exc:
        raise BootstrapError(str(exc), opts.retry_plan()) from None
    say(f"proxmox token {token_id(opts.token.host)}", change)
    return secret, change


def enroll(opts: Options, csr: str) -> dict[str, Any]:
    """POST the CSR with the token; the orchestrator's answer, or BootstrapError with a plan."""
    url = opts.orchestrator + JOIN_PATH
    body = {"token": str(opts.token), "csr": csr, "endpoint": opts.endpoint}
    try:
        response = requests.post(
            url,
            json=body,
            timeout=REQUEST_TIMEOUT,
            verify=str(opts.ca_file) if opts.ca_file else True,
            allow_redirects=False,
        )
    except requests.exceptions.SSLError as exc:
        raise BootstrapError(
            f"TLS with the orchestrator at {url} failed: {exc}",
            opts.retry_plan() + " If its certificate is from a private CA, pass that CA with --ca-file.",
        ) from None
    except requests.RequestException as exc:
        raise BootstrapError(f"cannot reach the orchestrator at {url}: {exc}", opts.retry_plan()) from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code == 200 and isinstance(answer, dict):
        return answer
    error = answer.get("error") if isinstance(answer, dict) else None
    message = error.get("message") if isinstance(error, dict) else f"{response.status_code} {response.reason}"
    plan = {
        401: "Nothing was written. Ask an admin for a new join token (createHostJoinToken), run this again.",
        503: opts.retry_plan(),
    }.get(response.status_code, "Nothing was written.")
    raise BootstrapError(f"the orchestrator refused the enrollment: {message}", plan)


def _issued(
    opts: Options, answer: dict[str, Any], key: ec.EllipticCurvePrivateKey
) -> tuple[bytes, bytes, dict[str, Any]]:
    """The certificate, CA bundle and settings answered, checked against what was asked for."""
    try:
        certificate = check_issued(str(answer.get("certificate", "")), key, opts.identity)
    except CertificateRefused as exc:
        raise BootstrapError(str(exc)) from None
    settings = answer.get("settings")
    ca = answer.get("ca")
    if not isinstance(settings, dict) or not isinstance(ca, str) or not ca.strip():
        raise BootstrapError("the orchestrator's answer lacks the CA bundle or the settings")
    if (settings.get("zone"), settings.get("node")) != (opts.token.zone, opts.token.host):
        raise BootstrapError(
            f"the orchestrator enrolled {settings.get('node')} of {settings.get('zone')}, not this host"
        )
    say(f"certificate for {opts.identity}", f"issued, valid until {_at(certificate.not_valid_after_utc)}")
    return answer["certificate"].encode("ascii"), ca.encode("ascii"), settings


# ------------------------------------------------------------------------------------ the release


@dataclass(frozen=True)
class Updates:
    """Self-update as the orchestrator offers it: the release channel, and the key releases verify with."""

    channel_url: str
    public_key_pem: bytes

    @property
    def public_key(self) -> Ed25519PublicKey:
        return public_key_from_pem(self.public_key_pem, "the orchestrator's release_public_key")


@dataclass(frozen=True)
class Installed:
    """The release the service runs from install_dir/current, and what the bootstrap did to it."""

    version: str
    change: Change | str


def offered_updates(settings: dict[str, Any]) -> Updates | None:
    """Self-update's settings in the orchestrator's answer, checked; None when it offers none."""
    url, pem = settings.get("update_channel_url"), settings.get("release_public_key")
    if url is None and pem is None:
        return None
    if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme != "https" or not isinstance(pem, str):
        raise BootstrapError(
            "the orchestrator's answer offers self-update without an https:// channel URL and a release key"
        )
    updates = Updates(url, pem.encode("ascii", "replace"))
    try:
        _ = updates.public_key
    except ReleaseError as exc:
        raise BootstrapError(str(exc)) from None
    return updates


def install_channel_release(opts: Options, updates: Updates) -> Installed | None:
    """The channel's release, verified and installed under install_dir with ``current`` pointing at
    it; None when the channel publishes none. BootstrapError when it is refused or unreachable."""
    plan = (
        "No file was written, but the join token is used: fix the release channel (or ask its admin), "
        "then run this again with a new join token (createHostJoinToken)."
    )
    try:
        with update_lock(opts.install_dir, wait=LOCK_WAIT) as locked:
            if not locked:
                raise BootstrapError(
                    f"an agent update is being applied in {opts.shown(opts.install_dir)}", plan
                )
            return asyncio.run(_install_channel_release(opts, updates))
    except NoRelease as exc:
        say("agent release", f"none published ({exc})")
        return None
    except ReleaseRefused as exc:
        raise BootstrapError(f"the release channel's agent release was refused: {exc}", plan) from None
    except (UpdateFailed, ReleaseError, OSError) as exc:
        raise BootstrapError(f"cannot install the release channel's agent release: {exc}", plan) from None


async def _install_channel_release(opts: Options, updates: Updates) -> Installed:
    """Fetch and verify as the agent's own update does (agent.update), then install and point current."""
    installation = Installation(opts.install_dir)
    cafile = str(opts.ca_file) if opts.ca_file else None
    connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=cafile))
    async with aiohttp.ClientSession(connector=connector) as session:
        offered = await fetch_channel(session, updates.channel_url)
        manifest = verify(offered.envelope, updates.public_key)
        running = installation.pointed(CURRENT)
        if running and (kept := _keeps(opts, running, manifest, offered.pinned)):
            return Installed(running, kept)
        artifact = installation.artifact(manifest.version)
        fetched = not artifact.is_file() or file_sha256(artifact) != manifest.sha256
        if fetched:
            await install_release(
                session, updates.channel_url, manifest, offered.envelope_bytes, installation
            )
    if running != manifest.version:
        installation.make_current(manifest.version)
        return Installed(manifest.version, Change.WRITTEN)
    return Installed(manifest.version, Change.RENEWED if fetched else Change.UNCHANGED)


def _keeps(opts: Options, running: str, manifest: Manifest, pinned: bool) -> str | None:
    """Why the node keeps the release it runs rather than the channel's (as its update would), or None."""
    if running == manifest.version:
        return None
    if reason := refuses(running, manifest, pinned):
        return f"kept: {reason}"
    if StateFile(opts.install_dir / UPDATE_STATE_FILE).rolled_back().get(manifest.version) == manifest.sha256:
        return f"kept: {manifest.version} failed its health check on this node and was rolled back"
    return None


def report_release(opts: Options, updates: Updates | None, installed: Installed | None) -> Updates | None:
    """Say what runs and whether it updates itself; self-update's settings when it does.

    Self-update needs the service to run an installed release (agent.update), so without one the
    service runs this agent's own code, as before releases existed, and does not update.
    """
    if installed is not None:
        say(f"agent release {installed.version} {opts.shown(opts.install_dir / CURRENT)}", installed.change)
    runs_release = (opts.install_dir / CURRENT / ARTIFACT).is_file()
    if updates is None:
        say(
            "self-update",
            "off: the orchestrator offers no release channel (its FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY or "
            "FLEXPLANE_AGENT_RELEASES_DIR is not set); run this again once it does",
        )
        return None
    if not runs_release:
        say(
            "self-update",
            f"off: no release is installed, so the service runs this agent's own code ({__version__}); "
            "run this again once the channel publishes one",
        )
        return None
    say("self-update", f"on, from {updates.channel_url}")
    return updates


def config_values(opts: Options, settings: dict[str, Any], updates: Updates | None) -> dict[str, Any]:
    """The agent's configuration: the platform's settings and this node's paths; with self-update's
    when the service runs an installed release (``updates``)."""
    values: dict[str, Any] = {
        "listen": opts.endpoint,
        "zone": opts.token.zone,
        "node": opts.token.host,
        "tls_cert": str(opts.etc / "agent.crt"),
        "tls_key": str(opts.etc / "agent.key"),
        "ca": str(opts.etc / "platform-ca.crt"),
        "allowed_clients": [str(c) for c in settings.get("allowed_clients") or []],
        "proxmox_url": opts.proxmox_url,
        "proxmox_token_id": token_id(opts.token.host),
        "proxmox_token_secret_file": str(opts.secret_path),
        "image_allow_hosts": [str(h) for h in settings.get("image_allow_hosts") or []],
        "image_cache": str(opts.image_cache),
        "snippets_dir": str(opts.snippets_dir),
        "orchestrator_url": str(settings.get("orchestrator_url") or opts.orchestrator),
    }
    if opts.proxmox_ca:
        values["proxmox_ca"] = str(opts.proxmox_ca)
    if opts.ca_file:
        values["orchestrator_ca"] = str(opts.etc / "orchestrator-ca.crt")
    if not values["allowed_clients"]:
        del values["allowed_clients"]  # the agent's default
    if updates is not None:
        values["update_channel_url"] = updates.channel_url
        if opts.ca_file:  # the channel is the orchestrator's: the same CA
            values["update_channel_ca"] = values["orchestrator_ca"]
        values["release_public_key"] = str(opts.release_key_path)
        values["install_dir"] = str(opts.install_dir)
    return values


def config_text(values: dict[str, Any]) -> str:
    lines = ["# Written by flexplane-agent bootstrap; run it again rather than editing this file."]
    lines += [
        f"{key} = {json.dumps(value)}" for key, value in values.items()
    ]  # JSON strings are TOML strings
    return "\n".join(lines) + "\n"


def exec_start(config_path: Path, install_dir: Path) -> list[str]:
    """The service's command: the installed release if there is one (self-update needs it, see
    agent.release), else this Python running this agent; with the written configuration."""
    release = install_dir / CURRENT / ARTIFACT
    program = [str(release)] if release.is_file() else ["-m", "agent"]
    return [sys.executable, *program, "serve", "--config", str(config_path)]


@dataclass(frozen=True)
class Planned:
    """A file the bootstrap puts in place: what it is, its content and mode."""

    what: str
    path: Path
    content: bytes
    mode: int
    # What replacing a different file is called: certificates and keys are renewed, others written.
    replacing: Change = Change.WRITTEN

    def change(self) -> Change:
        if not self.path.is_file():
            return Change.WRITTEN
        same = self.path.read_bytes() == self.content and (self.path.stat().st_mode & 0o777) == self.mode
        return Change.UNCHANGED if same else self.replacing


@contextmanager
def staging(root: Path) -> Iterator[Path]:
    """A folder on the same filesystem as the destinations (renames are atomic), removed afterwards."""
    (root / "etc").mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".flexplane-bootstrap-", dir=root / "etc"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def install(files: list[Planned], root: Path) -> dict[Path, Change]:
    """Put every file in place, in order: staged whole first, then each renamed over its destination."""
    changes = {f.path: f.change() for f in files}
    with staging(root) as stage:
        staged = []
        for index, planned in enumerate(files):
            if changes[planned.path] is Change.UNCHANGED:
                continue
            temporary = stage / f"{index}-{planned.path.name}"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, planned.mode)
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), planned.mode)
                out.write(planned.content)
                out.flush()
                os.fsync(out.fileno())
            staged.append((temporary, planned))
        for temporary, planned in staged:
            planned.path.parent.mkdir(
                parents=True, exist_ok=True, mode=0o750 if planned.path.parent.name == "flexplane" else 0o755
            )
            temporary.replace(planned.path)
    for planned in files:
        say(planned.what, changes[planned.path])
    return changes


def bootstrap(opts: Options, admin: ProxmoxAdmin, service: ServiceManager) -> None:
    """Every step, in order; BootstrapError says which one stopped and what to do."""
    print(
        f"flexplane-agent bootstrap: enrolling {opts.token.host} of zone {opts.token.zone} at "
        f"{opts.endpoint} (token valid until {_at(opts.token.expires_at)})",
        flush=True,
    )
    secret, token_change = setup_proxmox(admin, opts)
    key = new_key()
    try:
        answer = enroll(opts, make_csr(key, opts.identity))
        cert, ca, settings = _issued(opts, answer, key)
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
    unit = Planned(
        f"systemd unit /{UNIT_DIR / UNIT_NAME}",
        opts.unit_path,
        unit_text(exec_start(opts.config_path, opts.install_dir)).encode(),
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
    release_changed = installed is not None and installed.change in (Change.WRITTEN, Change.RENEWED)
    try:
        started = service.activate(
            unit_changed=changes[unit.path] is not Change.UNCHANGED,
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


# ----------------------------------------------------------------------------------- the command


def run_bootstrap(args: argparse.Namespace) -> int:
    try:
        opts = _options(args)
    except BootstrapError as exc:
        _report(exc)
        return EXIT_USAGE
    try:
        admin = _admin(args, opts.proxmox_ca)
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
    parser.add_argument(
        "--proxmox-admin",
        choices=("pveum", "api"),
        default="pveum",
        help="set up the agent's Proxmox token with pveum (default) or the Proxmox API as root",
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
    parser.add_argument("--image-cache", help=f"where images are downloaded (default: {DEFAULT_IMAGE_CACHE})")
    parser.add_argument(
        "--snippets-dir", help=f"the snippets folder of storage local (default: {DEFAULT_SNIPPETS_DIR})"
    )
    parser.add_argument(
        "--install-dir",
        help=f"where the agent's releases are installed, for self-update (default: {DEFAULT_INSTALL_DIR})",
    )
    parser.add_argument("--no-start", action="store_true", help="write the systemd unit but do not start it")
    parser.set_defaults(handler=run_bootstrap)
