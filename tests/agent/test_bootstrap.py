"""``flexplane-agent bootstrap`` end to end: a node added to a fake zone enrolls against the world's real
enrollment endpoint over HTTPS into a scratch root, installs the release channel's agent, starts it
from the written unit, serves mTLS, and the host shows online in the API. Then the faults: an
unreachable orchestrator, a used token, an expired one. Last, self-update through enrollment: an
orchestrator replica with a release channel of its own (out of the world's agents' sight) serves
no release, then a tampered one, then real ones, to which an enrolled node updates itself.
"""

from __future__ import annotations

import datetime
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from packaging.version import Version

from agent import __version__
from agent.config import load_config
from agent.release import BuiltRelease, build, load_private_key
from agent.service import DROPIN, LEGACY_UNIT, WRITTEN_BY_BOOTSTRAP, packaged_unit
from agentclient import AgentInfo
from agentclient.enrollment import parse_join_token
from agentclient.errors import AgentError
from devstack.net import free_port
from devstack.processes import Process
from devstack.world import World
from tests.apikit import GraphQL
from tests.enrollkit import Node, added_node, info, join_token, peer_certificate

ZONE = "zone-a"
HOSTS = "{ zones { id hosts { id online endpoint } } }"
INSTALL_DIR = "opt/flexplane-agent"
# A check of the channel every second; then a download, a restart by the world and a health check.
UPDATE_TIMEOUT = 90.0


def lines(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The bootstrap's report: each step and what it did."""
    steps = (line.strip().partition(": ") for line in done.stdout.splitlines() if line.startswith("  "))
    return {what: change for what, _, change in steps}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def fresh(world: World, api: GraphQL) -> Iterator[tuple[Node, subprocess.CompletedProcess[str]]]:
    """Node pve4 joins zone-a: bootstrapped into its scratch root, its agent started from the unit."""
    with added_node(world, ZONE, "pve4", f"127.{world.cfg.subnet}.1.9") as node:
        done = node.bootstrap(api)
        assert done.returncode == 0, done.stdout + done.stderr
        node.start_agent()
        yield node, done


def test_a_fresh_node_enrolls_and_its_agent_serves_mtls_and_shows_online(
    fresh: tuple[Node, Any], world: World, api: GraphQL
) -> None:
    node, done = fresh
    report = lines(done)
    assert report["proxmox token flexplane@pve!agent-pve4"] == "written"
    assert report["configuration /etc/flexplane/agent.toml"] == "written"
    assert report["certificate for pve4.zone-a.agents.flexplane"].startswith("issued, valid until")
    assert report[f"agent release {__version__} /{INSTALL_DIR}/current"] == "written"
    assert report["self-update"] == f"on, from {world.https_url}/agent/releases/channel.json"
    assert report["service flexplane-agent.service"].startswith("not started (--no-start)")

    written = x509.load_pem_x509_certificate((node.root / "etc/flexplane/agent.crt").read_bytes())
    assert peer_certificate(world, node.endpoint) == written
    about = info(world, ZONE, "pve4", node.endpoint)
    assert (about.zone, about.node, about.identity) == (ZONE, "pve4", node.identity)
    assert about.certificate_not_after == int(written.not_valid_after_utc.timestamp())
    assert about.proxmox_version  # it reached the fake Proxmox with its own token

    zones = {z["id"]: z for z in api(HOSTS, user="admin").data["zones"]}
    hosts = {h["id"]: h for h in zones[ZONE]["hosts"]}
    assert hosts[f"{ZONE}/pve4"] == {"id": f"{ZONE}/pve4", "online": True, "endpoint": node.endpoint}


def test_the_node_keeps_its_own_proxmox_token_and_files_with_safe_modes(
    fresh: tuple[Node, Any], world: World
) -> None:
    node, _ = fresh
    etc = node.root / "etc/flexplane"
    assert mode(etc) == 0o750
    assert mode(etc / "agent.key") == 0o600
    assert mode(etc / "proxmox-token") == 0o600
    assert mode(etc / "agent.toml") == 0o640
    assert mode(etc / "agent.crt") == 0o644
    assert mode(node.root / DROPIN) == 0o644
    assert not list((node.root / "etc").glob(".flexplane-bootstrap-*"))  # no staging left behind

    config = load_config(etc / "agent.toml", environ={})
    assert (config.zone, config.node, config.listen) == (ZONE, "pve4", node.endpoint)
    assert config.proxmox_token_id == "flexplane@pve!agent-pve4"
    assert config.orchestrator_url == world.https_url
    tokens = world.fakes.on_loop(dict, world.fakes[ZONE].pve.apitokens)
    assert tokens["flexplane@pve!agent-pve4"] == config.proxmox_token_secret


def test_the_node_runs_the_channels_release_and_is_set_up_to_update_itself(
    fresh: tuple[Node, Any], world: World
) -> None:
    node, _ = fresh
    etc, install = node.root / "etc/flexplane", node.root / INSTALL_DIR
    assert world.release is not None
    assert (install / "current").readlink() == Path("versions") / __version__
    assert (install / "current/flexplane-agent.pyz").read_bytes() == world.release.artifact.read_bytes()
    unit = (node.root / DROPIN).read_text()
    release = install / "current/flexplane-agent.pyz"
    assert f"ExecStart={sys.executable} {release} serve --config {etc / 'agent.toml'}" in unit

    update = load_config(etc / "agent.toml", environ={}).update
    assert update is not None
    assert update.channel_url == f"{world.https_url}/agent/releases/channel.json"
    assert update.channel_ca == etc / "orchestrator-ca.crt"
    assert update.public_key == etc / "release-public.pem"
    assert update.public_key.read_bytes() == world.release_keys[1].read_bytes()
    assert update.install_dir == install
    assert mode(update.public_key) == 0o644
    log = node.agent.output() if node.agent else ""
    assert "self-update is off" not in log


def test_running_it_again_with_a_new_token_renews_the_certificate_and_keeps_the_rest(
    fresh: tuple[Node, Any], api: GraphQL
) -> None:
    node, _ = fresh
    secret = (node.root / "etc/flexplane/proxmox-token").read_text()
    # The whole unit an earlier bootstrap wrote, which shadowed the package's: it goes now.
    legacy = node.root / LEGACY_UNIT
    legacy.write_text(f"{WRITTEN_BY_BOOTSTRAP}; run it again rather than editing this file.\n[Service]\n")
    again = node.bootstrap(api)
    assert again.returncode == 0, again.stdout + again.stderr
    report = lines(again)
    assert report["proxmox token flexplane@pve!agent-pve4"] == "unchanged"
    assert report["key /etc/flexplane/agent.key"] == "renewed"
    assert report["certificate /etc/flexplane/agent.crt"] == "renewed"
    assert report["platform CA /etc/flexplane/platform-ca.crt"] == "unchanged"
    assert report["proxmox token secret /etc/flexplane/proxmox-token"] == "unchanged"
    assert report[f"agent release {__version__} /{INSTALL_DIR}/current"] == "unchanged"
    assert report["release public key /etc/flexplane/release-public.pem"] == "unchanged"
    assert report[f"systemd drop-in /{DROPIN}"] == "unchanged"
    assert report[f"systemd unit /{LEGACY_UNIT}"] == "removed: the package's unit runs with the drop-in"
    assert not legacy.exists()
    assert report["configuration /etc/flexplane/agent.toml"] == "unchanged"
    assert (node.root / "etc/flexplane/proxmox-token").read_text() == secret


def test_a_used_token_is_refused_and_changes_nothing(fresh: tuple[Node, Any], api: GraphQL) -> None:
    node, _ = fresh
    token = join_token(api, ZONE, "pve4")
    assert node.bootstrap(api, token=token).returncode == 0
    before = {p: p.read_bytes() for p in (node.root / "etc/flexplane").iterdir()}
    used = node.bootstrap(api, token=token)
    assert used.returncode == 1
    assert "already used" in used.stderr
    assert "Ask an admin for a new join token" in used.stderr
    assert {p: p.read_bytes() for p in (node.root / "etc/flexplane").iterdir()} == before


def test_an_unreachable_orchestrator_leaves_nothing_written(world: World, api: GraphQL) -> None:
    with added_node(world, ZONE, "pve5", f"127.{world.cfg.subnet}.1.10") as node:
        host = world.cfg.orchestrator_host
        token = join_token(api, ZONE, "pve5")
        done = node.bootstrap(api, token=token, orchestrator_url=f"https://{host}:{free_port(host)}")
        assert done.returncode == 1
        assert "cannot reach the orchestrator" in done.stderr
        expiry = f"{parse_join_token(token).expires_at:%Y-%m-%d %H:%M:%S} UTC"
        assert f"Run the same command again once that is fixed: the token stays valid until {expiry}" in (
            done.stderr
        )
        assert not node.root.exists()
        tokens = world.fakes.on_loop(dict, world.fakes[ZONE].pve.apitokens)
        assert "flexplane@pve!agent-pve5" not in tokens  # the token made for it was taken back


def test_an_expired_token_is_refused_before_anything_is_done(tmp_path: Path) -> None:
    past = int((datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)).timestamp())
    token = f"{ZONE}.pve6.{past}.0123456789abcdef.{'s' * 43}"
    argv = ["--orchestrator", "https://127.0.0.9:1", "--token", token, "--root", str(tmp_path / "root")]
    done = subprocess.run(
        [sys.executable, "-m", "agent", "bootstrap", *argv, "--no-start"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "this join token expired at" in done.stderr
    assert not (tmp_path / "root").exists()


def test_without_the_packages_unit_the_bootstrap_refuses_before_anything_is_done() -> None:
    """A pip install of the agent carries no unit for the drop-in to complete: on such a node (this test
    machine's own root, which has no flexplane-agent package) the bootstrap stops first and says so."""
    assert packaged_unit(Path("/")) is None, "this machine has the package's unit: the test would enroll it"
    future = int((datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).timestamp())
    token = f"{ZONE}.pve7.{future}.0123456789abcdef.{'s' * 43}"
    argv = ["--orchestrator", "https://127.0.0.9:1", "--token", token]
    done = subprocess.run(
        [sys.executable, "-m", "agent", "bootstrap", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the flexplane-agent package's systemd unit is not installed" in done.stderr
    assert "--no-start" in done.stderr


# ------------------------------------------------------------------- self-update through enrollment


@dataclass
class Channel:
    """An orchestrator replica whose release channel is a folder of this module's own."""

    url: str
    folder: Path
    replica: Process

    def publish(self, *releases: BuiltRelease) -> None:
        """Make the channel serve exactly these releases."""
        for old in self.folder.iterdir():
            old.unlink()
        for release in releases:
            shutil.copy2(release.artifact, self.folder / release.artifact.name)
            shutil.copy2(release.envelope, self.folder / release.envelope.name)


@pytest.fixture(scope="module")
def channel(world: World) -> Iterator[Channel]:
    host = world.cfg.orchestrator_host
    port, https_port = free_port(host), free_port(host)
    folder = world.cfg.scratch / "own-channel"
    folder.mkdir()
    url = f"https://{host}:{https_port}"
    replica = world.spawn_orchestrator(
        "orchestrator-own-channel",
        port,
        https_port,
        # The folder, the channel's fallback: not the world's registry.
        {
            "FLEXPLANE_AGENT_RELEASES_DIR": str(folder),
            "FLEXPLANE_AGENT_REGISTRY": "",
            "FLEXPLANE_ENROLLMENT_URL": url,
        },
    )
    try:
        yield Channel(url, folder, replica)
    finally:
        replica.stop()


@pytest.fixture(scope="module")
def newer(world: World, tmp_path_factory: pytest.TempPathFactory) -> BuiltRelease:
    """This checkout again, as a later version, signed with the platform's release key."""
    version = f"{Version(__version__).base_version}.post1"
    return build(version, load_private_key(world.release_keys[0]), tmp_path_factory.mktemp("newer"))


def test_where_no_release_is_published_the_node_runs_its_own_agent_and_says_self_update_is_off(
    world: World, api: GraphQL, channel: Channel
) -> None:
    channel.publish()
    with added_node(world, ZONE, "pve6", f"127.{world.cfg.subnet}.1.11") as node:
        done = node.bootstrap(api, orchestrator_url=channel.url)
        assert done.returncode == 0, done.stdout + done.stderr
        report = lines(done)
        assert report["agent release"].startswith("none published (the release channel")
        assert report["self-update"].startswith(
            f"off: no release is installed, so the service runs this agent's own code ({__version__})"
        )
        etc = node.root / "etc/flexplane"
        unit = (node.root / DROPIN).read_text()
        assert f"ExecStart={sys.executable} -m agent serve --config {etc / 'agent.toml'}" in unit
        assert load_config(etc / "agent.toml", environ={}).update is None
        assert not (etc / "release-public.pem").exists()


def test_a_tampered_release_stops_the_bootstrap_before_any_file_is_written(
    world: World, api: GraphQL, channel: Channel
) -> None:
    assert world.release is not None
    channel.publish(world.release)
    artifact = channel.folder / world.release.artifact.name
    artifact.write_bytes(artifact.read_bytes()[:-64] + bytes(64))
    with added_node(world, ZONE, "pve7", f"127.{world.cfg.subnet}.1.12") as node:
        done = node.bootstrap(api, orchestrator_url=channel.url)
        assert done.returncode == 1
        assert "the release channel's agent release was refused" in done.stderr
        assert "tampered or corrupt" in done.stderr
        assert "No file was written, but the join token is used" in done.stderr
        assert not (node.root / "etc/flexplane").exists()
        assert not (node.root / INSTALL_DIR / "current").exists()
        assert list((node.root / INSTALL_DIR / "versions").iterdir()) == []
        tokens = world.fakes.on_loop(dict, world.fakes[ZONE].pve.apitokens)
        assert "flexplane@pve!agent-pve7" not in tokens


def until_info(world: World, node: Node, done: Any, what: str) -> AgentInfo:
    """GetInfo from the node's agent until done(info), across its restarts."""
    deadline = time.monotonic() + UPDATE_TIMEOUT
    last: Any = "no answer"
    while time.monotonic() < deadline:
        try:
            last = info(world, node.zone, node.name, node.endpoint)
            if done(last):
                return last
        except AgentError as exc:
            last = exc
        time.sleep(0.5)
    output = node.agent.output() if node.agent else ""
    raise AssertionError(f"{what} did not happen within {UPDATE_TIMEOUT} s; last: {last}\n{output[-4000:]}")


def test_an_enrolled_node_updates_itself_to_the_channels_newer_release(
    world: World, api: GraphQL, channel: Channel, newer: BuiltRelease
) -> None:
    assert world.release is not None
    channel.publish(world.release)
    with added_node(world, ZONE, "pve8", f"127.{world.cfg.subnet}.1.13") as node:
        done = node.bootstrap(api, orchestrator_url=channel.url)
        assert done.returncode == 0, done.stdout + done.stderr
        assert lines(done)["self-update"] == f"on, from {channel.url}/agent/releases/channel.json"
        first = node.start_agent({"FLEXPLANE_AGENT_UPDATE_INTERVAL": "1"})
        assert until_info(world, node, lambda i: True, "an answer").version == __version__

        channel.publish(world.release, newer)
        updated = until_info(world, node, lambda i: i.update.result == "updated", "the update")
        assert updated.version == newer.manifest.version
        assert (updated.update.from_version, updated.update.to_version) == (
            __version__,
            newer.manifest.version,
        )
        install = node.root / INSTALL_DIR
        assert (install / "current").readlink().name == newer.manifest.version
        assert (install / "previous").readlink().name == __version__
        assert node.agent is not first  # restarted by the world, as systemd would


def test_a_platform_whose_release_key_is_unusable_refuses_the_join_before_the_token_is_used(
    world: World, api: GraphQL
) -> None:
    host = world.cfg.orchestrator_host
    port, https_port = free_port(host), free_port(host)
    url = f"https://{host}:{https_port}"
    replica = world.spawn_orchestrator(
        "orchestrator-bad-release-key",
        port,
        https_port,
        {"FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY": str(world.release_keys[0]), "FLEXPLANE_ENROLLMENT_URL": url},
    )
    try:
        with added_node(world, ZONE, "pve9", f"127.{world.cfg.subnet}.1.14") as node:
            token = join_token(api, ZONE, "pve9")
            refused = node.bootstrap(api, token=token, orchestrator_url=url)
            assert refused.returncode == 1
            assert "is not an Ed25519 public key in PEM" in refused.stderr  # the private key, by mistake
            assert "the token stays valid until" in refused.stderr
            assert not (node.root / "etc/flexplane").exists()

            done = node.bootstrap(api, token=token)  # the same token, at a well-configured orchestrator
            assert done.returncode == 0, done.stdout + done.stderr
    finally:
        replica.stop()
