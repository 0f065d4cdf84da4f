"""A Debian root joins the world's zone as docs/install.md's "Adding a node" walks it: shared by the
enrollment from the package (test_enroll.py) and the agent under systemd (test_systemd.py).

The orchestrator, the Proxmox API and the identity provider are the world's, on loopback: the root shares
the host's network. What the node gives the join command beyond the walkthrough's is what a stand-in node
differs in: the world's private CA (``--ca-file``, which the walkthrough names for a private CA), the
address its agent listens on, and Proxmox reached through its API with root's password (``--proxmox-admin
api``: the root has no ``pveum``), at the fake zone's address and CA.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentclient import AgentInfo
from agentclient.errors import AgentUnavailable
from devstack.world import World
from devstack.world.config import AGENT_PORT
from tests.apikit import GraphQL
from tests.artifacts.chroot import Chroot
from tests.enrollkit import CREATE_TOKEN, info

ZONE = "zone-a"
HOSTS = "{ zones { id hosts { id online endpoint } } }"
START_TIMEOUT = 60.0


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


def join_command(world: World, api: GraphQL, root: Chroot, name: str, address: str) -> str:
    """Step 1 of the walkthrough, a join token whose answer holds the command for the node; that command
    with what this stand-in node differs in, to run on the node as root (step 2)."""
    answer = api(CREATE_TOKEN, user="admin", variables={"zone": ZONE, "host": name})
    token = answer.data["createHostJoinToken"]
    assert token["errors"] == [], token
    command: str = token["joinToken"]["command"]
    assert shlex.split(command)[:3] == ["flexplane-agent", "bootstrap", "--orchestrator"], command
    fake = world.fakes[ZONE]
    assert world.ca is not None
    password = "/root/pve-password"
    root.put(password, fake.pve.password, 0o600)
    here = [
        f"--ca-file {copied_in(root, world.ca.cert_path, 'flexplane-ca.pem')}",
        f"--address {address}:{AGENT_PORT}",
        "--proxmox-admin api",
        f"--proxmox-url {fake.url(next(iter(fake.node_addresses)))}",
        f"--proxmox-password-file {password}",
        f"--proxmox-ca {copied_in(root, world.fakes.certfile, 'pve-ca.pem')}",
    ]
    return " ".join([command, *here])


def answering(world: World, name: str, endpoint: str, stopped: Callable[[], str | None]) -> AgentInfo:
    """What the agent says about itself over mTLS (GetInfo, as the orchestrator asks it), once it serves;
    ``stopped`` says why the agent is gone (what it printed), or None while it runs."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            return info(world, ZONE, name, endpoint)
        except AgentUnavailable:
            gone = stopped()
            if gone is not None or time.monotonic() > deadline:
                pytest.fail(f"the agent of {name} did not serve:\n{gone or 'still starting'}")
            time.sleep(0.5)


def host_of(api: GraphQL, node: str) -> dict:
    zones = {z["id"]: z for z in api(HOSTS, user="admin").data["zones"]}
    return next((h for h in zones[ZONE]["hosts"] if h["id"] == f"{ZONE}/{node}"), {})
