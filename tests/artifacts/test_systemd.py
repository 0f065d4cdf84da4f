"""The agent under systemd, in the package's sandbox: a Debian 12 root shaped as a Proxmox VE node, with
systemd and the built package, booted by ``systemd-nspawn`` (sharing the host's network, so that the
world's orchestrator and fake Proxmox on loopback are reached as in tests/artifacts/joining.py). The join
command's bootstrap enables and starts the agent through the real systemctl, and systemd runs it with the
package's unit and the bootstrap's drop-in: it serves mTLS with only the capabilities, system calls and
namespaces the unit grants. Then the things the agent does on a node for gateways and the mesh (``ip
netns`` pins, nftables in a namespace, a wireguard-go interface), run by a service with the unit's own
sandbox, work, and their network namespace stays when that service stops.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.sandbox import PACKAGED_BOUNDING_SET
from devstack.world import World
from devstack.world.config import AGENT_PORT
from tests.apikit import GraphQL
from tests.artifacts.chroot import BUILD, COMMAND_TIMEOUT, Chroot
from tests.artifacts.conftest import field
from tests.artifacts.joining import ZONE, answering, host_of, join_command, playing
from tests.artifacts.node import PVE_OF_SUITE
from tests.enrollkit import added_node

UNIT = "flexplane-agent.service"
PACKAGED_UNIT = f"lib/systemd/system/{UNIT}"
BOOT_TIMEOUT = 60.0
NODE, LAST_OCTET = "pve12", 32
# What the smoke service does, as the agent does it for a gateway and for the mesh.
SMOKE_NETNS = "fpsmoke"
SMOKE = f"""#!/bin/sh
set -e
ip netns add {SMOKE_NETNS}
ip netns exec {SMOKE_NETNS} nft add table inet fpsmoke
ip netns exec {SMOKE_NETNS} nft add chain inet fpsmoke forward '{{ type filter hook forward priority 0; }}'
ip netns exec {SMOKE_NETNS} wireguard-go fpwgsmoke
"""


class Booted:
    """A root booted by systemd-nspawn: commands run in it as root (nsenter into its PID 1's namespaces)."""

    def __init__(self, root: Chroot, nspawn: subprocess.Popen[bytes]) -> None:
        self.root = root
        self.nspawn = nspawn

    @property
    def init(self) -> int:
        children = Path(f"/proc/{self.nspawn.pid}/task/{self.nspawn.pid}/children").read_text().split()
        assert children, "systemd-nspawn has not started the root's init"
        return int(children[0])

    def run(self, command: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["nsenter", "-t", str(self.init), "-a", "/bin/sh", "-c", command],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        if check:
            assert done.returncode == 0, f"in the booted root, {command!r} failed:\n{done.stdout}"
        return done


@pytest.fixture(scope="module")
def booted(deb: Path) -> Iterator[Booted]:
    root = Chroot.copy_of("bookworm", BUILD / "scratch" / "systemd-node")
    nspawn = None
    try:
        root.run(
            "apt-get update -qq && apt-get install -y -q --no-install-recommends systemd systemd-sysv dbus "
            "wireguard-go"
        )
        version = PVE_OF_SUITE[root.suite]
        root.put("/usr/bin/pveversion", f"#!/bin/sh\necho pve-manager/{version}/2a5fa54a8503f96d\n", 0o755)
        (root.path / "etc" / "pve").mkdir(parents=True, exist_ok=True)
        root.install(deb)
        nspawn = subprocess.Popen(
            [
                "systemd-nspawn",
                "--quiet",
                "--directory",
                str(root.path),
                "--boot",
                "--register=no",
                "--keep-unit",
                # The container itself keeps every capability: the sandbox under test is the unit's.
                "--capability=all",
                "--machine",
                "fpsystemd",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        node = Booted(root, nspawn)
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            with contextlib.suppress(AssertionError, FileNotFoundError):
                state = node.run("systemctl is-system-running", check=False).stdout.strip()
                if state in ("running", "degraded"):
                    break
            assert nspawn.poll() is None, "systemd-nspawn stopped"
            assert time.monotonic() < deadline, "the root's systemd did not finish booting"
            time.sleep(0.5)
        yield node
    finally:
        if nspawn is not None:
            with contextlib.suppress(ProcessLookupError):
                nspawn.send_signal(signal.SIGTERM)  # nspawn powers the container off
            try:
                nspawn.wait(30)
            except subprocess.TimeoutExpired:
                nspawn.kill()
                nspawn.wait()
        subprocess.run(["ip", "netns", "del", SMOKE_NETNS], capture_output=True, check=False)
        root.remove()


def status(node: Booted, pid: str) -> dict[str, str]:
    lines = node.run(f"cat /proc/{pid}/status").stdout.splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def test_the_bootstrap_starts_the_agent_through_systemd_in_the_packages_sandbox(
    world: World, api: GraphQL, booted: Booted, deb: Path
) -> None:
    address = f"127.{world.cfg.subnet}.1.{LAST_OCTET}"
    with added_node(world, ZONE, NODE, address), playing(world, PVE_OF_SUITE["bookworm"]):
        done = booted.run(join_command(world, api, booted.root, NODE, address), check=False)
        assert done.returncode == 0, done.stdout
        assert f"service {UNIT}: enabled and started" in done.stdout, done.stdout

        def stopped() -> str | None:
            if booted.run(f"systemctl is-active --quiet {UNIT}", check=False).returncode == 0:
                return None
            return booted.run(f"journalctl -u {UNIT} --no-pager -n 40", check=False).stdout

        about = answering(world, NODE, f"{address}:{AGENT_PORT}", stopped)
        assert about.package_version == field(deb, "Version")
        assert host_of(api, NODE)["online"] is True

        shown = booted.run(f"systemctl show {UNIT} -p MainPID -p DropInPaths -p FragmentPath").stdout
        settings = dict(line.split("=", 1) for line in shown.splitlines())
        assert settings["FragmentPath"] == f"/{PACKAGED_UNIT}"
        assert settings["DropInPaths"] == f"/etc/systemd/system/{UNIT}.d/bootstrap.conf"
        sandbox = status(booted, settings["MainPID"])
        assert int(sandbox["CapBnd"], 16) == PACKAGED_BOUNDING_SET, sandbox
        assert sandbox["NoNewPrivs"].strip() == "1"
        assert sandbox["Seccomp"].strip() == "2", "a system call filter"
        booted.run(f"systemctl stop {UNIT}")


def test_a_service_in_the_units_sandbox_pins_namespaces_for_the_host_and_runs_nft_and_wireguard_go(
    booted: Booted,
) -> None:
    """A oneshot service with the package's unit's [Service] settings (the agent's sandbox), whose command
    does what the agent does for a gateway and the mesh: what it pins in /run/netns is the host's (no
    mount namespace), so it stays when the service stops, as a gateway outlives an agent restart."""
    unit = (booted.root.path / PACKAGED_UNIT).read_text(encoding="utf-8")
    service = re.search(r"^\[Service\]\n(.*?)(?=^\[)", unit, re.MULTILINE | re.DOTALL)
    assert service is not None
    sandbox = [
        line
        for line in service.group(1).splitlines()
        if line and not line.startswith(("#", "ExecStart=", "Type=", "Restart"))
    ]
    smoke = "\n".join(
        [
            "[Service]",
            "Type=oneshot",
            "RemainAfterExit=yes",
            "ExecStart=/usr/local/sbin/fpsmoke",
            *sandbox,
            "",
        ]
    )
    booted.root.put("/usr/local/sbin/fpsmoke", SMOKE, 0o755)
    booted.root.put("/etc/systemd/system/fpsmoke.service", smoke)
    booted.run("systemctl daemon-reload")

    done = booted.run("systemctl start fpsmoke.service", check=False)
    journal = booted.run("journalctl -u fpsmoke.service --no-pager -n 30", check=False).stdout
    assert done.returncode == 0, journal
    links = booted.run(f"ip netns exec {SMOKE_NETNS} ip -o link show fpwgsmoke").stdout
    assert "fpwgsmoke" in links, links

    booted.run("systemctl stop fpsmoke.service")

    assert SMOKE_NETNS in booted.run("ip netns list").stdout, "the pin outlives the service"
    ruleset = booted.run(f"ip netns exec {SMOKE_NETNS} nft list ruleset").stdout
    assert "table inet fpsmoke" in ruleset, ruleset
    booted.run(f"ip netns del {SMOKE_NETNS}")
