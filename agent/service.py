"""The agent as a systemd service: who turns it on, and the drop-in that says what it runs.

The package owns the unit (packaging/deb/flexplane-agent.service, with its sandbox); the bootstrap writes
only a drop-in beside it, :data:`DROPIN`, whose ``ExecStart`` runs the installed self-update release (or
the package's agent), so that a new package's unit, hardening included, reaches every enrolled node. A
:class:`ServiceManager` then makes it run. :class:`Systemd` is the real thing on a node;
:class:`UnitOnly` leaves it for whoever starts it: an image build, or the devstack, which runs the
drop-in's ``ExecStart`` itself as a stand-in for systemd.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

UNIT_NAME = "flexplane-agent.service"
UNIT_DIR = Path("etc/systemd/system")
# Under the root: the bootstrap's drop-in, and the whole unit bootstraps before it wrote (which shadows the
# package's: the bootstrap and the package's postinst take it away).
DROPIN = UNIT_DIR / f"{UNIT_NAME}.d" / "bootstrap.conf"
LEGACY_UNIT = UNIT_DIR / UNIT_NAME
WRITTEN_BY_BOOTSTRAP = "# Written by flexplane-agent bootstrap"
# Where dpkg puts the package's unit (Debian 12 and 13 merge /lib into /usr/lib; either names it).
PACKAGED_UNITS = (Path("lib/systemd/system") / UNIT_NAME, Path("usr/lib/systemd/system") / UNIT_NAME)
COMMAND_TIMEOUT = 60.0


class ServiceError(Exception):
    """systemd refused or could not be reached; the message names the command."""


def packaged_unit(root: Path) -> Path | None:
    """The package's unit under ``root``; None where the agent was installed without it (pip), which the
    bootstrap's drop-in cannot complete."""
    return next((root / path for path in PACKAGED_UNITS if (root / path).is_file()), None)


def dropin_text(exec_start: Sequence[str]) -> str:
    """The bootstrap's drop-in: the package's unit with this node's command (an empty ``ExecStart=`` first
    clears the package's, as systemd.unit(5) says a drop-in replaces a list)."""
    return f"""\
{WRITTEN_BY_BOOTSTRAP}; run it again rather than editing this file.
# What this node's agent runs: the installed self-update release, or the package's agent. Everything else,
# its sandbox included, is the package's unit, /lib/systemd/system/{UNIT_NAME}.
[Service]
ExecStart=
ExecStart={shlex.join(exec_start)}
"""


# The [Service] settings that make systemd run a service in a mount namespace of its own: every mount
# point is made a slave of the host's first, so that nothing the service mounts ever reaches the host
# (systemd.exec(5), PrivateMounts= and MountFlags=; exec_needs_mount_namespace() in systemd's source).
# ``ip netns add`` pins a network namespace by a bind mount in /run/netns: from such a service it would
# be pinned there only, and go when the service stops. So the agent's unit has none of them. Each maps
# to the values that leave it off.
_OFF = frozenset({"", "no", "false", "off", "0"})
MOUNT_NAMESPACING: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            "PrivateMounts",
            "PrivateTmp",
            "PrivateDevices",
            "PrivateNetwork",
            "PrivateIPC",
            "ProtectSystem",
            "ProtectHome",
            "ProtectKernelTunables",
            "ProtectKernelModules",
            "ProtectKernelLogs",
            "ProtectControlGroups",
            "DynamicUser",
        ),
        _OFF,
    ),
    # Paths, images and namespaces to join: any value but the empty one (a reset).
    **dict.fromkeys(
        (
            "ReadWritePaths",
            "ReadOnlyPaths",
            "InaccessiblePaths",
            "ExecPaths",
            "NoExecPaths",
            "ReadWriteDirectories",
            "ReadOnlyDirectories",
            "InaccessibleDirectories",
            "BindPaths",
            "BindReadOnlyPaths",
            "TemporaryFileSystem",
            "RootDirectory",
            "RootImage",
            "MountImages",
            "ExtensionImages",
            "ExtensionDirectories",
            "NetworkNamespacePath",
            "IPCNamespacePath",
            "LogNamespace",
        ),
        frozenset({""}),
    ),
    "ProtectProc": frozenset({"", "default"}),
    "ProcSubset": frozenset({"", "all"}),
    "MountFlags": frozenset({"", "shared"}),
}


def service_settings(unit: str) -> list[tuple[str, str]]:
    """The unit's [Service] settings, in order (``Key=value`` lines; comments and other sections skipped)."""
    found: list[tuple[str, str]] = []
    section = ""
    for raw in unit.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif section == "Service" and "=" in line:
            key, _, value = line.partition("=")
            found.append((key.strip(), value.strip()))
    return found


def mount_namespacing(unit: str) -> list[str]:
    """The unit's settings that give the service a mount namespace of its own (``Key=value``; empty: none,
    it runs in the host's). An empty value resets a setting, so the last one of a key counts."""
    found = []
    for key, value in dict(service_settings(unit)).items():
        off = MOUNT_NAMESPACING.get(key)
        if off is not None and value not in off:
            found.append(f"{key}={value}")
    return found


def exec_start(unit: str) -> list[str]:
    """The command of a unit's (or drop-in's) ExecStart, what the devstack runs in systemd's place: the
    last one set, as an empty ``ExecStart=`` clears those before it."""
    commands = [value for key, value in service_settings(unit) if key == "ExecStart"]
    if not commands or not commands[-1]:
        raise ValueError("the unit has no ExecStart line")
    return shlex.split(commands[-1])


class ServiceManager(Protocol):
    def activate(self, unit_changed: bool, config_changed: bool) -> str:
        """Make the service run the unit and configuration now in place; answers what it did."""
        ...


class Systemd:
    """systemctl on the node: reload units, enable and start the agent, restart it if its files changed."""

    def __init__(self, systemctl: str = "systemctl") -> None:
        self.systemctl = systemctl

    def _run(self, *args: str, check: bool = True) -> int:
        argv = [self.systemctl, *args]
        try:
            done = subprocess.run(  # noqa: S603 - fixed program and arguments
                argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServiceError(f"cannot run {' '.join(argv)}: {exc}") from None
        if check and done.returncode != 0:
            detail = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
            raise ServiceError(f"{' '.join(argv)} failed: {detail}")
        return done.returncode

    def activate(self, unit_changed: bool, config_changed: bool) -> str:
        if unit_changed:
            self._run("daemon-reload")
        was_running = self._run("is-active", "--quiet", UNIT_NAME, check=False) == 0
        self._run("enable", "--now", UNIT_NAME)
        if was_running and (unit_changed or config_changed):
            self._run("restart", UNIT_NAME)
            return "restarted"
        return "unchanged (running)" if was_running else "enabled and started"


class UnitOnly:
    """Writes nothing more and starts nothing (``--no-start``)."""

    def activate(self, unit_changed: bool, config_changed: bool) -> str:
        return "not started (--no-start): start the unit's ExecStart"
