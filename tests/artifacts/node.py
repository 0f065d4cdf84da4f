"""A Debian root made to look like a Proxmox VE node to the package and the bootstrap: ``/etc/pve``, a
``pveversion`` of the version it plays, and a ``systemctl`` that writes down what it is asked (the
maintainer scripts only call systemctl when /run/systemd/system exists, as on a booted node)."""

from __future__ import annotations

from tests.artifacts.chroot import Chroot

# Written by the fake systemctl: one line per call, its arguments.
CALLS = "/var/log/systemctl-calls"
SYSTEMCTL = f"""#!/bin/sh
echo "$*" >> {CALLS}
case "$1" in
is-enabled) [ -e /etc/systemd/system/multi-user.target.wants/flexplane-agent.service ] ;;
*) exit 0 ;;
esac
"""
# The Proxmox VE release each Debian release's root plays (PVE 8 is built on bookworm, 9 on trixie).
PVE_OF_SUITE = {"bookworm": "8.4.1", "trixie": "9.0.10"}


def make_proxmox_node(root: Chroot, *, enrolled: bool) -> None:
    version = PVE_OF_SUITE[root.suite]
    root.put("/usr/bin/pveversion", f"#!/bin/sh\necho pve-manager/{version}/2a5fa54a8503f96d\n", 0o755)
    root.put("/usr/bin/systemctl", SYSTEMCTL, 0o755)
    (root.path / "etc" / "pve").mkdir(parents=True, exist_ok=True)
    (root.path / "run" / "systemd" / "system").mkdir(parents=True, exist_ok=True)
    if enrolled:
        root.put("/etc/flexplane/agent.toml", 'zone = "zone-a"\nnode = "pve1"\n', 0o640)


def systemctl_calls(root: Chroot) -> list[str]:
    """What was asked of systemd about the agent (other packages' scripts, e.g. wireguard-tools', ask
    for daemon reloads and their own units)."""
    log = root.path / CALLS.lstrip("/")
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [call for call in calls if "flexplane-agent" in call]
