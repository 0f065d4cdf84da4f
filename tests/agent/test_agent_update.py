"""Self-update end to end: real agents under a systemd stand-in, releases from the orchestrator over HTTPS.

Each test installs release 1.0.0 into a scratch install_dir (``flexplane-agent release install``),
runs it from ``install_dir/current`` under devstack's supervisor (service_restart_command points
at ``supervisor.py restart``), and publishes releases in the orchestrator's release folder. The
agent checks the channel every second; the test reads what happened through GetInfo over mTLS,
the install_dir's symlinks and the supervisor's main pid.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.release import BuiltRelease
from agent.update import AGENT_SERVICE
from agentclient import AgentInfo, AgentPool, AgentTarget
from agentclient.errors import AgentError, ClientNotAllowed
from devstack.net import free_port
from devstack.supervisor import MAIN_PID, read_pid
from tests import addresses
from tests.agent.conftest import IDENTITY, ROOT, AgentProcess, Pki, agent_env, write_config
from tests.apikit import eventually
from tests.releasekit import (
    ReleasePlatform,
    Releases,
    build_releases,
    die_with_parent,
    release_files,
    stop_pid,
)

AGENT_HOST = addresses.address(addresses.AGENT_SUITE, 1)
SUPERVISOR = ROOT / "devstack" / "supervisor.py"
HEALTH_DEADLINE = 10
# Long enough for a check, a download, a restart and a health check on a busy machine.
UPDATE_TIMEOUT = HEALTH_DEADLINE + 60
PIN_VERSION = """mutation($version: String!) {
  pinAgentVersion(version: $version) { pin { version } errors { field message code } } }"""


@pytest.fixture(scope="module")
def platform(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReleasePlatform]:
    """The orchestrator over HTTPS (a certificate of the agents' CA), serving the release channel."""
    with ReleasePlatform(tmp_path_factory.mktemp("update-platform"), pki.ca) as running:
        yield running


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Releases:
    return build_releases(tmp_path_factory.mktemp("built-releases"))


@pytest.fixture
def channel(platform: ReleasePlatform) -> ReleasePlatform:
    """The platform with an empty folder and no pin."""
    platform.publish()
    platform.remove_pin()
    return platform


class Node:
    """A Proxmox node's agent, installed from releases and run by the systemd stand-in."""

    def __init__(self, directory: Path, configuration: Path, pki: Pki) -> None:
        self.directory = directory
        self.install = directory / "install"
        self.unit = directory / "unit"
        self.log = self.unit / "agent.log"
        self.pki = pki
        self.target = AgentTarget(IDENTITY, _listen(configuration))
        self.unit.mkdir()
        command = [sys.executable, str(self.install / "current" / "flexplane-agent.pyz"), "serve"]
        self.supervisor = subprocess.Popen(
            [
                sys.executable,
                str(SUPERVISOR),
                "run",
                "--state-dir",
                str(self.unit),
                "--log",
                str(self.log),
                "--",
                *command,
                "--config",
                str(configuration),
            ],
            cwd=directory,
            env=agent_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        self.wait_for(lambda info: info.version == "1.0.0", timeout=30)
        self.first_pid = self.main_pid()

    def info(self) -> AgentInfo:
        # A new pool each time: a pooled channel would back off while the agent restarts.
        with AgentPool(self.pki.client_tls(), timeout=5.0) as pool:
            return pool.info(self.target)

    def wait_for(self, done: Callable[[AgentInfo], bool], timeout: float) -> AgentInfo:
        deadline = time.monotonic() + timeout
        last: AgentInfo | str = "no answer"
        while time.monotonic() < deadline:
            try:
                last = self.info()
                if done(last):
                    return last
            except AgentError as exc:
                last = str(exc)
            time.sleep(0.3)
        pytest.fail(f"the agent did not get there in {timeout} s; last: {last}\n{self.output()}")

    def main_pid(self) -> int | None:
        return read_pid(self.unit / MAIN_PID)

    def pointed(self, link: str) -> str:
        return (self.install / link).readlink().name

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads((self.install / "update-state.json").read_text())
        return state

    def output(self) -> str:
        apply_log = self.install / "update-apply.log"
        tail = apply_log.read_text()[-4000:] if apply_log.exists() else ""
        return f"--- agent\n{self.log.read_text()[-8000:]}\n--- update-apply\n{tail}"

    def restart(self) -> None:
        subprocess.run(
            [sys.executable, str(SUPERVISOR), "restart", "--state-dir", str(self.unit)],
            check=True,
            timeout=60,
        )

    def stop(self) -> None:
        """Let an apply step in progress finish, then stop the supervisor (and so the agent) by pid."""
        deadline = time.monotonic() + UPDATE_TIMEOUT
        while (self.install / "update-plan.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        stop_pid(self.supervisor, grace=20)


def _listen(configuration: Path) -> str:
    line = next(x for x in configuration.read_text().splitlines() if x.startswith("listen = "))
    return str(json.loads(line.split("=", 1)[1]))


def updating_config(
    directory: Path,
    pki: Pki,
    pve: tuple[Any, str],
    channel: ReleasePlatform,
    releases: Releases,
    **settings: Any,
) -> Path:
    """The configuration of a node's agent in front of ``pve`` (the fake Proxmox and its CA file) that
    updates itself from the channel, trusting the releases' key and installing under ``directory``/install;
    restarted by the systemd stand-in, whose state is under ``directory``. ``settings``: more keys, or
    other values (the update_apply_launcher is none)."""
    proxmox, cafile = pve
    restart = [sys.executable, str(SUPERVISOR), "restart", "--state-dir", str(directory / "unit")]
    return write_config(
        directory,
        pki,
        listen=f"{AGENT_HOST}:{free_port(AGENT_HOST)}",
        proxmox_url=proxmox.url,
        proxmox_ca=cafile,
        update_channel_url=channel.channel_url,
        update_channel_ca=str(pki.ca.cert_path),
        release_public_key=str(releases.keys.public),
        install_dir=str(directory / "install"),
        service_restart_command=restart,
        **{"update_apply_launcher": [], **settings},
    )


@pytest.fixture
def node_settings() -> dict[str, Any]:
    """Configuration keys a test changes (parametrize it to change them)."""
    return {}


@pytest.fixture
def node(
    node_settings: dict[str, Any],
    pki: Pki,
    proxmox: Any,
    fakepve_cafile: str,
    channel: ReleasePlatform,
    releases: Releases,
    tmp_path: Path,
    run_agent: Callable[..., subprocess.CompletedProcess[str]],
) -> Iterator[Node]:
    """An agent running release 1.0.0 from install_dir/current, checking the channel every second."""
    install = tmp_path / "install"
    installed = run_agent(
        "release",
        "install",
        *release_files(releases.base),
        "--public-key",
        str(releases.keys.public),
        "--install-dir",
        str(install),
    )
    assert installed.returncode == 0, installed.stderr
    settings = {"update_interval": 1, "health_deadline": HEALTH_DEADLINE, **node_settings}
    configuration = updating_config(tmp_path, pki, (proxmox, fakepve_cafile), channel, releases, **settings)
    running = Node(tmp_path, configuration, pki)
    yield running
    running.stop()


def wait_for_result(
    node: Node, result: str, timeout: float = UPDATE_TIMEOUT, *, to_version: str | None = None
) -> AgentInfo:
    """The agent's info once its last update says ``result`` (about ``to_version``, when given: on a
    busy machine a channel fetch that timed out is a failure too, about no version, and is retried)."""
    return node.wait_for(
        lambda info: (
            info.update.result == result and (to_version is None or info.update.to_version == to_version)
        ),
        timeout,
    )


# -------------------------------------------------------------------------------------- updates


def test_an_agent_updates_to_a_newer_signed_release_and_says_so_after_restarts(
    node: Node, channel: ReleasePlatform, releases: Releases
) -> None:
    channel.publish(releases.base, releases.newer)
    info = wait_for_result(node, "updated")
    assert info.version == "1.1.0"
    assert (info.update.from_version, info.update.to_version) == ("1.0.0", "1.1.0")
    assert "1.1.0 answered after" in info.update.message
    assert node.main_pid() != node.first_pid
    assert (node.pointed("current"), node.pointed("previous")) == ("1.1.0", "1.0.0")
    assert node.state()["last"]["result"] == "updated"

    node.restart()
    after = node.wait_for(lambda i: i.version == "1.1.0", timeout=30)
    assert after.update == info.update  # loaded from the state file at startup


def test_an_admin_pin_downgrades_an_agent_that_refused_the_older_release_without_it(
    node: Node, channel: ReleasePlatform, releases: Releases
) -> None:
    channel.publish(releases.older)
    refused = wait_for_result(node, "refused")
    assert refused.version == "1.0.0"
    assert refused.update.to_version == "0.9.0"
    assert "downgrade from 1.0.0 to 0.9.0 refused" in refused.update.message
    assert node.main_pid() == node.first_pid

    answer = channel.graphql(PIN_VERSION, user="admin", variables={"version": "0.9.0"})
    assert answer["data"]["pinAgentVersion"]["errors"] == []
    info = wait_for_result(node, "updated")
    assert info.version == "0.9.0"
    assert (info.update.from_version, info.update.to_version) == ("1.0.0", "0.9.0")
    assert node.pointed("current") == "0.9.0"


def test_a_release_that_fails_its_health_check_is_rolled_back_and_not_tried_again(
    node: Node, channel: ReleasePlatform, releases: Releases
) -> None:
    channel.publish(releases.base, releases.broken)
    info = wait_for_result(node, "rolled-back")
    assert info.version == "1.0.0"
    assert (info.update.from_version, info.update.to_version) == ("1.0.0", "1.2.0")
    assert "1.2.0 failed its health check" in info.update.message
    assert "rolled back to 1.0.0" in info.update.message
    assert node.pointed("current") == "1.0.0"
    assert "this release is broken on purpose" in node.log.read_text()

    serving = node.main_pid()
    # Several checks of the channel, which still offers 1.2.0 (the agent checks every second).
    eventually(lambda: node.log.read_text().count("not trying 1.2.0 again") >= 3, 30, "three checks")
    assert node.main_pid() == serving
    assert node.info().update == info.update
    assert "not trying 1.2.0 again" in node.log.read_text()


# ------------------------------------------------------------------------------------- refusals


def tampered(release: BuiltRelease, platform: ReleasePlatform, change: Callable[[bytes], bytes]) -> None:
    """Publish the release with its artifact's bytes changed (the signed manifest untouched)."""
    platform.publish(release)
    path = platform.published(release.artifact.name)
    path.write_bytes(change(path.read_bytes()))


def unsigned(release: BuiltRelease, platform: ReleasePlatform) -> None:
    """Publish the release with its envelope's signature emptied."""
    platform.publish(release)
    envelope = platform.published(release.envelope.name)
    envelope.write_text(json.dumps({**json.loads(envelope.read_text()), "signature": ""}))


def assert_refused_and_still_serving(node: Node, to_version: str, reason: str) -> AgentInfo:
    """Once the agent's last update is a refusal for ``reason``: it names ``to_version``, and 1.0.0 serves
    on, never restarted. The agent's info."""
    info = node.wait_for(
        lambda i: i.update.result == "refused" and reason in i.update.message, UPDATE_TIMEOUT
    )
    assert info.version == "1.0.0"
    assert info.update.to_version == to_version
    assert node.main_pid() == node.first_pid  # never restarted
    assert node.pointed("current") == "1.0.0"
    assert not (node.install / "versions" / "1.1.0").exists()
    assert node.state()["last"]["result"] == "refused"
    assert "self-update refused" in node.log.read_text()
    return info


def test_a_tampered_artifact_a_partial_download_another_key_and_no_signature_are_each_refused(
    node: Node, channel: ReleasePlatform, releases: Releases
) -> None:
    """Each bad release in turn on one agent (an agent each would only start another process): refused for
    its own reason, while the old agent keeps serving."""
    tampered(releases.newer, channel, lambda data: data[:-100] + bytes(b ^ 0xFF for b in data[-100:]))
    assert_refused_and_still_serving(node, "1.1.0", "tampered or corrupt")

    tampered(releases.newer, channel, lambda data: data[: len(data) // 2])
    size = releases.newer.manifest.size
    partial = assert_refused_and_still_serving(node, "1.1.0", f"partial download of {channel.url}")
    assert f"got {size // 2} of {size} bytes" in partial.update.message

    channel.publish(releases.stranger)
    assert_refused_and_still_serving(node, "", "does not verify against release_public_key")

    unsigned(releases.newer, channel)
    assert_refused_and_still_serving(node, "", "the release is not signed")


# ------------------------------------------------------------------- the node's own certificate


def test_the_nodes_own_certificate_may_ask_health_and_getinfo_and_nothing_else(
    agent: AgentProcess, pki: Pki
) -> None:
    """What the apply step's probe needs (agent.auth), and no more."""
    with AgentPool(pki.client_tls(pki.agent), timeout=5.0) as pool:
        assert pool.check_health(agent.target(), service=AGENT_SERVICE)
        assert pool.info(agent.target()).identity == IDENTITY
        with pytest.raises(ClientNotAllowed):
            pool.proxmox(agent.target(), "GET", "/version")


def test_another_nodes_certificate_may_not_ask_health(agent: AgentProcess, pki: Pki) -> None:
    with (
        AgentPool(pki.client_tls(pki.other_host_agent), timeout=5.0) as pool,
        pytest.raises(ClientNotAllowed),
    ):
        pool.check_health(agent.target(), service=AGENT_SERVICE)


@pytest.mark.parametrize("node_settings", [{"update_apply_launcher": ["false"]}])
def test_an_apply_step_that_cannot_start_is_reported_and_the_agent_keeps_serving(
    node: Node, channel: ReleasePlatform, releases: Releases
) -> None:
    channel.publish(releases.newer)
    info = wait_for_result(node, "failed", to_version="1.1.0")
    assert info.version == "1.0.0"
    assert "false did not start the apply step (exit 1)" in info.update.message
    assert node.main_pid() == node.first_pid
    assert node.pointed("current") == "1.0.0"
    assert not (node.install / "update-plan.json").exists()
