"""Agent releases through a real OCI registry: Debian's docker-registry on loopback, TLS and basic auth.

One registry, one relay in front of it (tests/releasekit.Proxy: slow, stalled or cut on demand) and
one orchestrator whose channel lists the registry's tags (FLEXPLANE_AGENT_REGISTRY) serve the whole
module. The first tests run the serving agent's updater in this process (what it does in its check
loop, minus the loop), with the node's read-only registry access; the last ones run real agents under
the systemd stand-in, as tests/agent/test_agent_update.py does for the orchestrator-served fallback.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.config import load_config
from agent.release import Installation, install_file
from agent.update import StateFile, Updater
from agent.update.registry import ARTIFACT_TYPE, Timeouts
from agentclient import AgentPool
from agentclient.errors import AgentError, ClientNotAllowed
from devstack.net import free_port
from devstack.registry import Registry
from tests.agent.conftest import AgentProcess, Pki, write_config
from tests.agent.test_agent_update import (
    AGENT_HOST,
    PIN_VERSION,
    Node,
    updating_config,
    wait_for_result,
)
from tests.apikit import eventually
from tests.releasekit import (
    Proxy,
    ReleasePlatform,
    Releases,
    address,
    build_releases,
    clear,
    get_manifest,
    node_access,
    publisher,
    push,
    put_manifest,
    registry_env,
    release_files,
)

CHANNEL = "{ agentReleaseChannel { versions servedVersion pin { version } } }"
# The broken release never answers: a rollback waits this long for it.
HEALTH_DEADLINE = 6
# More than the TLS handshake and the small documents before the artifact, less than the artifact.
MID_ARTIFACT = 100_000


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Releases:
    return build_releases(tmp_path_factory.mktemp("registry-releases"))


@pytest.fixture(scope="module")
def registry(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with Registry.start(tmp_path_factory.mktemp("registry"), pki.ca, host=address(10)) as running:
        yield running


@pytest.fixture(scope="module")
def proxy(registry: Registry) -> Iterator[Proxy]:
    relay = Proxy(registry.host, (registry.host, registry.port)).start()
    yield relay
    relay.stop()


@pytest.fixture(scope="module")
def platform(
    pki: Pki, registry: Registry, proxy: Proxy, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReleasePlatform]:
    """The orchestrator's channel on the registry's tags, through the relay as the nodes see it."""
    env = registry_env(f"{proxy.address}/flexplane/agent", registry)
    with ReleasePlatform(tmp_path_factory.mktemp("registry-platform"), pki.ca, env=env) as running:
        yield running


@pytest.fixture
def channel(platform: ReleasePlatform, registry: Registry, proxy: Proxy) -> ReleasePlatform:
    """An empty repository, no pin, a relay that relays."""
    if registry.process is None:
        registry.restart()
    clear(registry)
    platform.remove_pin()
    proxy.normal()
    return platform


def credentials(directory: Path, registry: Registry, proxy: Proxy) -> Path:
    """The node's registry access as enrollment writes it (for the relay's address: it pulls there)."""
    path = directory / "registry.json"
    path.write_text(json.dumps(node_access(registry, proxy.address).to_settings()))
    path.chmod(0o600)
    return path


@pytest.fixture
def updater(
    pki: Pki,
    channel: ReleasePlatform,
    registry: Registry,
    proxy: Proxy,
    releases: Releases,
    tmp_path: Path,
) -> Updater:
    """The serving agent's updater on a node running 1.0.0; its apply step is `true` (not run)."""
    return registry_updater(pki, channel, registry, proxy, releases, tmp_path)


def registry_updater(
    pki: Pki,
    channel: ReleasePlatform,
    registry: Registry,
    proxy: Proxy,
    releases: Releases,
    directory: Path,
    **settings: str,
) -> Updater:
    """An in-process updater of a node running 1.0.0 that pulls from ``registry`` through ``proxy``, its
    apply step `true` (not run); ``settings``: more of its configuration (its node's name, say)."""
    install = directory / "install"
    install_file(Installation(install), releases.base.artifact, releases.base.envelope, _public(releases))
    configuration = write_config(
        directory,
        pki,
        listen=f"{AGENT_HOST}:{free_port(AGENT_HOST)}",
        proxmox_url="https://127.0.0.1:8006",
        update_channel_url=channel.channel_url,
        update_channel_ca=str(pki.ca.cert_path),
        release_public_key=str(releases.keys.public),
        install_dir=str(install),
        update_registry_credentials=str(credentials(directory, registry, proxy)),
        update_apply_launcher=["true"],
        **settings,
    )
    config = load_config(configuration)
    assert config.update is not None
    return Updater(config, config.update, StateFile(config.update.state_file), running="1.0.0")


def _public(releases: Releases) -> Any:
    from agent.release import load_public_key

    return load_public_key(releases.keys.public)


def installed(updater: Updater) -> list[str]:
    versions = updater.installation.versions
    return sorted(p.name for p in versions.iterdir()) if versions.is_dir() else []


def last(updater: Updater) -> dict[str, Any]:
    recorded: dict[str, Any] = updater.state.read()["last"]
    return recorded


def assert_nothing_installed(updater: Updater) -> None:
    assert installed(updater) == ["1.0.0"]  # no partial download left either
    assert updater.installation.pointed("current") == "1.0.0"
    assert not (updater.installation.root / "update-plan.json").exists()


# ------------------------------------------------------------------------------------------ pull


async def test_a_release_pushed_with_the_cli_is_pulled_by_digest_verified_and_installed_beside(
    updater: Updater,
    channel: ReleasePlatform,
    registry: Registry,
    releases: Releases,
    run_agent: Callable[..., subprocess.CompletedProcess[str]],
    tmp_path: Path,
) -> None:
    push(registry, releases.base)
    access = tmp_path / "publisher.json"
    access.write_text(json.dumps(publisher(registry).to_settings()))
    pushed = run_agent(
        "release",
        "push",
        *release_files(releases.newer),
        "--registry",
        registry.repository,
        "--public-key",
        str(releases.keys.public),
        "--credentials",
        str(access),
    )
    assert pushed.returncode == 0, pushed.stderr
    digest = "sha256:" + hashlib.sha256(get_manifest(registry, "1.1.0")).hexdigest()
    assert f"pushed 1.1.0 to {registry.repository}:1.1.0 ({registry.repository}@{digest})" in pushed.stdout
    oci = json.loads(get_manifest(registry, digest))
    assert oci["artifactType"] == ARTIFACT_TYPE
    assert oci["layers"][1]["digest"] == f"sha256:{releases.newer.manifest.sha256}"

    document = channel.get("/agent/releases/channel.json").json()
    assert document["version"] == "1.1.0"
    assert document["registry"]["digest"] == digest
    assert "release" not in document
    assert channel.get(f"/agent/releases/{releases.newer.artifact.name}").status_code == 404

    said = await updater.check()
    assert said.startswith("1.1.0 installed beside 1.0.0")
    artifact = updater.installation.artifact("1.1.0")
    assert hashlib.sha256(artifact.read_bytes()).hexdigest() == releases.newer.manifest.sha256
    assert updater.installation.pointed("current") == "1.0.0"  # the apply step switches it
    plan = json.loads((updater.installation.root / "update-plan.json").read_text())
    assert (plan["from_version"], plan["to_version"]) == ("1.0.0", "1.1.0")


async def test_a_release_signed_by_another_key_is_refused(
    updater: Updater, channel: ReleasePlatform, registry: Registry, releases: Releases
) -> None:
    push(registry, releases.stranger)
    said = await updater.check()
    assert "does not verify against release_public_key" in said
    assert last(updater)["result"] == "refused"
    assert_nothing_installed(updater)


async def test_a_tampered_manifest_naming_another_artifact_is_refused(
    updater: Updater, channel: ReleasePlatform, registry: Registry, releases: Releases
) -> None:
    """The registry swaps the zipapp layer for another signed release's: the signature still verifies,
    but the signed manifest names other bytes."""
    push(registry, releases.base)
    genuine = json.loads(get_manifest(registry, push(registry, releases.newer)))
    genuine["layers"][1] = json.loads(get_manifest(registry, "1.0.0"))["layers"][1]
    put_manifest(registry, "1.1.0", json.dumps(genuine).encode())
    said = await updater.check()
    assert "is not the artifact the signed manifest names" in said
    assert "substituted" in last(updater)["message"]
    assert last(updater)["result"] == "refused"
    assert_nothing_installed(updater)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("artifactType", "application/vnd.example.something-else", "is not an agent release"),
        ("layer", "application/vnd.oci.image.layer.v1.tar+gzip", "has a layer of media type"),
    ],
)
async def test_an_artifact_of_another_media_type_is_refused(
    updater: Updater,
    channel: ReleasePlatform,
    registry: Registry,
    releases: Releases,
    field: str,
    value: str,
    reason: str,
) -> None:
    oci = json.loads(get_manifest(registry, push(registry, releases.newer)))
    if field == "layer":
        oci["layers"][1]["mediaType"] = value
    else:
        oci[field] = value
    put_manifest(registry, "1.1.0", json.dumps(oci).encode())
    said = await updater.check()
    assert reason in said
    assert last(updater)["result"] == "refused"
    assert_nothing_installed(updater)


async def test_a_registry_that_breaks_off_mid_pull_leaves_the_running_version_and_says_so(
    updater: Updater, channel: ReleasePlatform, registry: Registry, proxy: Proxy, releases: Releases
) -> None:
    push(registry, releases.newer)
    proxy.cut_after = MID_ARTIFACT
    await updater.check()
    recorded = last(updater)
    assert recorded["result"] == "refused"
    assert recorded["to_version"] == "1.1.0"
    assert "partial download of https://" in recorded["message"]
    assert "the transfer broke off" in recorded["message"]
    assert_nothing_installed(updater)

    proxy.normal()  # the registry is back: the next check updates
    assert (await updater.check()).startswith("1.1.0 installed beside 1.0.0")


async def test_a_registry_that_is_down_leaves_the_running_version_and_says_so(
    updater: Updater, channel: ReleasePlatform, registry: Registry, releases: Releases
) -> None:
    push(registry, releases.newer)
    registry.stop()  # the next test's channel fixture starts it again (from the main thread)
    await updater.check()
    recorded = last(updater)
    assert recorded["result"] == "failed"
    assert f"the agent registry {registry.host}" in recorded["message"]
    assert "did not answer" in recorded["message"]
    assert_nothing_installed(updater)


async def test_a_slow_registry_still_delivers_and_a_stalled_one_times_out_without_a_trace(
    updater: Updater, channel: ReleasePlatform, registry: Registry, proxy: Proxy, releases: Releases
) -> None:
    push(registry, releases.newer)
    updater.timeouts = Timeouts(connect=5.0, read=1.0)
    proxy.stall_after = MID_ARTIFACT
    await updater.check()
    recorded = last(updater)
    assert recorded["result"] == "refused"
    assert "partial download of https://" in recorded["message"]
    assert "Timeout on reading data from socket" in recorded["message"]
    assert_nothing_installed(updater)

    proxy.normal()
    proxy.delay = 0.02  # before each chunk the registry sends: slow, within the read timeout
    assert (await updater.check()).startswith("1.1.0 installed beside 1.0.0")
    assert proxy.connections > 0


async def test_an_older_release_is_refused_until_an_admin_pins_it_then_pulled(
    updater: Updater, channel: ReleasePlatform, registry: Registry, releases: Releases
) -> None:
    push(registry, releases.older)
    assert "downgrade from 1.0.0 to 0.9.0 refused" in await updater.check()
    assert_nothing_installed(updater)

    answer = channel.graphql(PIN_VERSION, user="admin", variables={"version": "0.9.0"})
    assert answer["data"]["pinAgentVersion"]["errors"] == []
    assert (await updater.check()).startswith("0.9.0 installed beside 1.0.0")
    assert updater.installation.artifact("0.9.0").is_file()

    answer = channel.graphql(PIN_VERSION, user="admin", variables={"version": "2.0.0"})
    assert "not published" in answer["data"]["pinAgentVersion"]["errors"][0]["message"]
    listed = channel.graphql(CHANNEL, user="admin")["data"]["agentReleaseChannel"]
    assert listed == {"versions": ["0.9.0"], "servedVersion": "0.9.0", "pin": {"version": "0.9.0"}}


# ------------------------------------------------------------------------------ real agents


@pytest.fixture
def node_settings() -> dict[str, Any]:
    return {"update_interval": 1}


@pytest.fixture
def node(
    node_settings: dict[str, Any],
    pki: Pki,
    proxmox: Any,
    fakepve_cafile: str,
    channel: ReleasePlatform,
    registry: Registry,
    proxy: Proxy,
    releases: Releases,
    tmp_path: Path,
) -> Iterator[Node]:
    """An agent running 1.0.0 from install_dir/current, its releases from the registry."""
    install = tmp_path / "install"
    install_file(Installation(install), releases.base.artifact, releases.base.envelope, _public(releases))
    configuration = updating_config(
        tmp_path,
        pki,
        (proxmox, fakepve_cafile),
        channel,
        releases,
        update_registry_credentials=str(credentials(tmp_path, registry, proxy)),
        health_deadline=HEALTH_DEADLINE,
        **node_settings,
    )
    running = Node(tmp_path, configuration, pki)
    yield running
    running.stop()


@pytest.mark.parametrize("node_settings", [{"update_interval": 3600}])
def test_update_now_from_the_orchestrator_and_on_the_node_go_through_the_agents_own_updater(
    node: Node,
    pki: Pki,
    channel: ReleasePlatform,
    registry: Registry,
    releases: Releases,
    run_agent: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    """The agent checks only hourly: each update here is asked for, first by the orchestrator (the
    admin's "update this host now"), then on the node (``flexplane-agent update now``)."""
    push(registry, releases.newer)
    with AgentPool(pki.client_tls(), timeout=60.0) as pool:
        asked = pool.update_now(node.target, timeout=60.0)
    assert (asked.offered_version, asked.applying, asked.running_version) == ("1.1.0", True, "1.0.0")
    assert asked.outcome.startswith("1.1.0 installed beside 1.0.0")
    info = wait_for_result(node, "updated", to_version="1.1.0")
    assert info.version == "1.1.0"
    assert (node.pointed("current"), node.pointed("previous")) == ("1.1.0", "1.0.0")
    eventually(lambda: not (node.install / "update-plan.json").exists(), 30, "the apply step's end")

    push(registry, releases.older)
    answer = channel.graphql(PIN_VERSION, user="admin", variables={"version": "0.9.0"})
    assert answer["data"]["pinAgentVersion"]["errors"] == []
    configuration = str(node.directory / "agent.toml")
    done = run_agent("update", "now", "--config", configuration, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr + node.output()
    assert "0.9.0 installed beside 1.1.0" in done.stdout
    assert "updated: 0.9.0 answered after" in done.stdout
    assert node.wait_for(lambda i: i.version == "0.9.0", timeout=30).update.from_version == "1.1.0"

    again = run_agent("update", "now", "--config", configuration)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0.9.0 is the channel's version: nothing to do" in again.stdout


def test_a_registry_release_that_fails_its_health_check_is_rolled_back(
    node: Node, channel: ReleasePlatform, registry: Registry, releases: Releases
) -> None:
    push(registry, releases.broken)
    info = wait_for_result(node, "rolled-back")
    assert info.version == "1.0.0"
    assert "1.2.0 failed its health check" in info.update.message
    assert node.pointed("current") == "1.0.0"
    assert node.main_pid() != node.first_pid  # it did restart into 1.2.0, and back


def test_an_agent_that_does_not_update_itself_says_so_when_asked_to_update_now(
    agent: AgentProcess, pki: Pki
) -> None:
    with AgentPool(pki.client_tls(), timeout=10.0) as pool, pytest.raises(AgentError) as refused:
        pool.update_now(agent.target())
    assert "FAILED_PRECONDITION: self-update is off" in str(refused.value)
    assert "no update_channel_url" in str(refused.value)
    # The node's own certificate (the apply step's) may not ask it.
    with AgentPool(pki.client_tls(pki.agent), timeout=10.0) as pool, pytest.raises(ClientNotAllowed):
        pool.update_now(agent.target())
