"""A node joins as docs/install.md's "Adding a node" walks it, from what the operator installs: the built
.deb in a Debian root shaped as a Proxmox VE 8 node (bookworm) and as a 9 node (trixie), the command the
API answers for the join token run there as root, then the unit the bootstrap wrote started from that
root, until the host shows online in the API.

The orchestrator, the Proxmox API and the identity provider are the world's, on loopback: the root shares
the host's network (tests/artifacts/chroot.py). What this node gives the command beyond the walkthrough's
is what a stand-in node differs in: the world's private CA (``--ca-file``, which the walkthrough names for
a private CA), the address its agent listens on, and Proxmox reached through its API with root's password
(``--proxmox-admin api``: the root has no ``pveum``), at the fake zone's address and CA.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.service import exec_start
from agentclient import AgentInfo
from agentclient.errors import AgentUnavailable
from devstack.world import World
from devstack.world.config import AGENT_PORT
from tests.apikit import GraphQL
from tests.artifacts.chroot import BUILD, Chroot
from tests.artifacts.conftest import field
from tests.artifacts.node import PVE_OF_SUITE, make_proxmox_node, systemctl_calls
from tests.enrollkit import CREATE_TOKEN, added_node, info

ZONE = "zone-a"
# One node of the zone per Debian release, each on an address of the world's subnet no agent uses.
NODES = {"bookworm": ("pve8", 28), "trixie": ("pve9", 29)}
HOSTS = "{ zones { id hosts { id online endpoint } } }"
START_TIMEOUT = 60.0
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


@contextlib.contextmanager
def playing(world: World, version: str) -> Iterator[None]:
    """The world's fake zone plays this Proxmox VE version for the block (its roles as that version's)."""
    pve = world.fakes[ZONE].pve
    before = world.fakes.on_loop(lambda: pve.version)
    world.fakes.on_loop(setattr, pve, "version", version)
    try:
        yield
    finally:
        world.fakes.on_loop(setattr, pve, "version", before)


def copied_in(root: Chroot, source: Path | str, name: str) -> str:
    """A file of the test's put into the root's /root (root's only): its path there."""
    inside = f"/root/{name}"
    target = root.path / inside.lstrip("/")
    shutil.copyfile(source, target)
    target.chmod(0o600)
    return inside


def answering(world: World, name: str, endpoint: str, agent: subprocess.Popen[str]) -> AgentInfo:
    """What the agent says about itself over mTLS (GetInfo, as the orchestrator asks it), once it serves."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            return info(world, ZONE, name, endpoint)
        except AgentUnavailable:
            if agent.poll() is not None or time.monotonic() > deadline:
                os.killpg(agent.pid, signal.SIGKILL)  # the group: the root's processes hold its output
                pytest.fail(f"the agent of {name} did not serve:\n{agent.communicate()[0][-4000:]}")
            time.sleep(0.5)


def host_of(api: GraphQL, node: str) -> dict:
    zones = {z["id"]: z for z in api(HOSTS, user="admin").data["zones"]}
    return next((h for h in zones[ZONE]["hosts"] if h["id"] == f"{ZONE}/{node}"), {})


def test_a_node_enrolls_from_the_package_with_the_command_the_api_answers_and_comes_online(
    world: World, api: GraphQL, node_root: Chroot, deb: Path
) -> None:
    name, last_octet = NODES[node_root.suite]
    version = PVE_OF_SUITE[node_root.suite]
    address = f"127.{world.cfg.subnet}.1.{last_octet}"
    fake = world.fakes[ZONE]
    assert world.ca is not None
    with added_node(world, ZONE, name, address), playing(world, version):
        # Step 1 of the walkthrough: a join token, whose answer holds the command for the node.
        answer = api(CREATE_TOKEN, user="admin", variables={"zone": ZONE, "host": name})
        token = answer.data["createHostJoinToken"]
        assert token["errors"] == [], token
        command = token["joinToken"]["command"]
        assert shlex.split(command)[:3] == ["flexplane-agent", "bootstrap", "--orchestrator"], command
        # Step 2, on the node as root: that command, with what this stand-in node differs in.
        password = "/root/pve-password"
        node_root.put(password, fake.pve.password, 0o600)
        here = [
            f"--ca-file {copied_in(node_root, world.ca.cert_path, 'flexplane-ca.pem')}",
            f"--address {address}:{AGENT_PORT}",
            "--proxmox-admin api",
            f"--proxmox-url {fake.url(next(iter(fake.node_addresses)))}",
            f"--proxmox-password-file {password}",
            f"--proxmox-ca {copied_in(node_root, world.fakes.certfile, 'pve-ca.pem')}",
        ]
        done = node_root.run(" ".join([command, *here]), check=False)
        assert done.returncode == 0, done.stdout

        assert "enable --now flexplane-agent.service" in systemctl_calls(node_root), done.stdout
        roles = world.fakes.on_loop(lambda: dict(fake.pve.access["roles"]))
        held = {privilege for privileges in roles.values() for privilege in privileges}
        assert GUEST_AGENT_PRIVILEGE[version[0]] in held, roles
        config = (node_root.path / "etc/flexplane/agent.toml").read_text(encoding="utf-8")
        assert f'node = "{name}"' in config, config

        # What systemd would start: the unit's ExecStart, in the root; it serves, and (step 3) the host
        # is online.
        unit = (node_root.path / "etc/systemd/system/flexplane-agent.service").read_text(encoding="utf-8")
        with node_root.started(shlex.join(exec_start(unit))) as agent:
            about = answering(world, name, f"{address}:{AGENT_PORT}", agent)
            assert host_of(api, name) == {
                "id": f"{ZONE}/{name}",
                "online": True,
                "endpoint": f"{address}:{AGENT_PORT}",
            }
        assert about.package_version == field(deb, "Version")
        assert about.proxmox_version.startswith(version), about
