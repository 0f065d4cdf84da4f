"""Step 4 of the bootstrap: the files it puts in place (configuration, unit, key, certificates),
staged whole and renamed into place, a file already as it should be left alone."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.bootstrap.channel import Updates
from agent.bootstrap.options import BootstrapError, Options, say
from agent.mesh import CONFIG_NAME as MESH_CONFIG_NAME
from agent.mesh import KEY_NAME as MESH_KEY_NAME
from agent.mesh import MeshConfigError
from agent.mesh import settings_values as mesh_values
from agent.pveadmin import Change, token_id
from agent.release import ARTIFACT, CURRENT
from agent.update.registry import CREDENTIALS_NAME, Access

# Where an enrolled agent serves its metrics (loopback only; agent.config refuses anything else).
METRICS_LISTEN = "127.0.0.1:9464"


def config_values(opts: Options, settings: dict[str, Any], updates: Updates | None) -> dict[str, Any]:
    """The agent's configuration: the platform's settings and this node's paths; with self-update's
    when the service runs an installed release (``updates``)."""
    mesh = settings.get("mesh")
    values: dict[str, Any] = {
        # On a mesh, the agent listens on its mesh address only (as the orchestrator answered it).
        "listen": str(settings.get("listen")) if isinstance(mesh, dict) else opts.endpoint,
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
        # Prometheus metrics on the node's loopback (agent.metrics), for the node's own scraper.
        "metrics_listen": METRICS_LISTEN,
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
        if updates.registry is not None:
            values["update_registry_credentials"] = str(opts.etc / CREDENTIALS_NAME)
    return values


def registry_file(opts: Options, access: Access) -> Planned:
    """The registry's read-only credentials (renewed with the certificate, agent.renewal)."""
    return Planned(
        f"registry credentials /etc/flexplane/{CREDENTIALS_NAME} ({access.registry})",
        opts.etc / CREDENTIALS_NAME,
        json.dumps(access.to_settings(), indent=2).encode() + b"\n",
        0o600,
        Change.RENEWED,
    )


def mesh_files(opts: Options, mesh: dict[str, Any], private_key: str) -> list[Planned]:
    """The node's WireGuard key (made here, never sent) and the mesh's configuration (agent.mesh)."""
    key_path = opts.etc / MESH_KEY_NAME
    try:
        values = mesh_values(mesh, key_path, opts.mesh_interface)
    except MeshConfigError as exc:
        raise BootstrapError(f"the orchestrator's mesh settings cannot be used: {exc}") from None
    return [
        Planned(
            f"mesh key /etc/flexplane/{MESH_KEY_NAME}",
            key_path,
            private_key.encode() + b"\n",
            0o600,
            Change.RENEWED,
        ),
        Planned(
            f"mesh configuration /etc/flexplane/{MESH_CONFIG_NAME} ({values['address']})",
            opts.etc / MESH_CONFIG_NAME,
            config_text(values).encode(),
            0o640,
        ),
    ]


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
