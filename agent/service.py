"""The agent as a systemd service: its unit, and who turns it on.

The bootstrap writes the unit file itself (with the rest of its files, atomically); a
:class:`ServiceManager` then makes it run. :class:`Systemd` is the real thing on a node;
:class:`UnitOnly` leaves the unit for whoever starts it: an image build, or the devstack, which
runs the unit's ``ExecStart`` itself as a stand-in for systemd.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

UNIT_NAME = "flexplane-agent.service"
UNIT_DIR = Path("etc/systemd/system")
COMMAND_TIMEOUT = 60.0


class ServiceError(Exception):
    """systemd refused or could not be reached; the message names the command."""


def unit_text(exec_start: Sequence[str]) -> str:
    """The agent's unit: restarted on failure, after the network and Proxmox's own services."""
    return f"""\
# Written by flexplane-agent bootstrap; run it again rather than editing this file.
[Unit]
Description=flex.plane agent (control plane access to this Proxmox node)
Wants=network-online.target
After=network-online.target pve-cluster.service pveproxy.service

[Service]
Type=simple
ExecStart={shlex.join(exec_start)}
Restart=on-failure
RestartSec=5
NoNewPrivileges=yes
PrivateTmp=yes

[Install]
WantedBy=multi-user.target
"""


def exec_start(unit: str) -> list[str]:
    """The command of a unit file's ExecStart line (what the devstack runs in systemd's place)."""
    for line in unit.splitlines():
        if line.startswith("ExecStart="):
            return shlex.split(line.removeprefix("ExecStart="))
    raise ValueError("the unit has no ExecStart line")


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
