"""A node joins as docs/install.md's "Adding a node" walks it, from what the operator installs: the built
.deb in a Debian root shaped as a Proxmox VE 8 node (bookworm) and as a 9 node (trixie), the command the
API answers for the join token run there as root (tests/artifacts/joining.py), then the package's unit
with the bootstrap's drop-in started from that root, until the host shows online in the API.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.service import DROPIN, exec_start
from devstack.world import World
from devstack.world.config import AGENT_PORT
from tests.apikit import GraphQL
from tests.artifacts.chroot import BUILD, Chroot
from tests.artifacts.conftest import field
from tests.artifacts.joining import ZONE, answering, host_of, join_command, playing
from tests.artifacts.node import PVE_OF_SUITE, make_proxmox_node, systemctl_calls
from tests.enrollkit import added_node

# One node of the zone per Debian release, each on an address of the world's subnet no agent uses.
NODES = {"bookworm": ("pve8", 28), "trixie": ("pve9", 29)}
# The guest agent's privilege as each Proxmox VE version names it (docs/install.md, node prerequisites).
GUEST_AGENT_PRIVILEGE = {"8": "VM.Monitor", "9": "VM.GuestAgent.Audit"}


@pytest.fixture(params=list(NODES))
def node_root(request: pytest.FixtureRequest, deb: Path) -> Iterator[Chroot]:
    """A fresh root of the suite, shaped as a Proxmox VE node of that release, with the package installed."""
    root = Chroot.copy_of(request.param, BUILD / "scratch" / f"enroll-{request.param}")
    try:
        make_proxmox_node(root, enrolled=False)
        root.install(deb)
        yield root
    finally:
        root.remove()


def stopped(agent: subprocess.Popen[str]) -> Callable[[], str | None]:
    """Why the agent started from the root is gone: what it printed (None while it runs)."""

    def why() -> str | None:
        if agent.poll() is None:
            return None
        os.killpg(agent.pid, signal.SIGKILL)  # the group: the root's processes hold its output
        return agent.communicate()[0][-4000:]

    return why


def test_a_node_enrolls_from_the_package_with_the_command_the_api_answers_and_comes_online(
    world: World, api: GraphQL, node_root: Chroot, deb: Path
) -> None:
    name, last_octet = NODES[node_root.suite]
    version = PVE_OF_SUITE[node_root.suite]
    address = f"127.{world.cfg.subnet}.1.{last_octet}"
    fake = world.fakes[ZONE]
    assert world.ca is not None
    with added_node(world, ZONE, name, address), playing(world, version):
        command = join_command(world, api, node_root, name, address)
        done = node_root.run(command, check=False)
        assert done.returncode == 0, done.stdout

        assert "enable --now flexplane-agent.service" in systemctl_calls(node_root), done.stdout
        roles = world.fakes.on_loop(lambda: dict(fake.pve.access["roles"]))
        held = {privilege for privileges in roles.values() for privilege in privileges}
        assert GUEST_AGENT_PRIVILEGE[version[0]] in held, roles
        config = (node_root.path / "etc/flexplane/agent.toml").read_text(encoding="utf-8")
        assert f'node = "{name}"' in config, config

        # What systemd would start: the unit's ExecStart, in the root; it serves, and (step 3) the host
        # is online.
        unit = "".join(
            (node_root.path / path).read_text(encoding="utf-8")
            for path in ("lib/systemd/system/flexplane-agent.service", DROPIN)
        )
        with node_root.started(shlex.join(exec_start(unit))) as agent:
            about = answering(world, name, f"{address}:{AGENT_PORT}", stopped(agent))
            assert host_of(api, name) == {
                "id": f"{ZONE}/{name}",
                "online": True,
                "endpoint": f"{address}:{AGENT_PORT}",
            }
        assert about.package_version == field(deb, "Version")
        assert about.proxmox_version.startswith(version), about
