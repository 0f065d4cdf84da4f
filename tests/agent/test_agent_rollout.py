"""A staged rollout through the registry tests' real ``docker-registry``: a release that fails its health
check on the canary halts the rollout, which says where (API, metric), and never reaches the other host.

The canary is a real agent under the systemd stand-in (tests/agent/test_agent_update.py's ``Node``), checking
the channel every second; the orchestrator confirms its report of the rollback by asking it (GetInfo over
mTLS, with the orchestrator's client certificate) before it halts the rollout. The other host is the serving
agent's updater run in this process, as the registry tests run it. The module starts its own registry and
orchestrator (those fixtures, imported; the orchestrator's with its agent certificate)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from agent.update import Updater
from devstack import seed
from devstack.registry import Registry
from orchestrator.models import Host
from orchestrator.models.zones import host_ident
from orchestrator.services.catalog import HOST, ZONE_LABEL
from orchestrator.sources.kube import KubeSource, load_configuration
from tests.agent.conftest import NODE, ZONE, Pki
from tests.agent.test_agent_registry_update import (
    channel,
    installed,
    node,
    node_settings,
    proxy,
    registry,
    registry_updater,
    releases,
)
from tests.agent.test_agent_update import AGENT_HOST, PIN_VERSION, Node, wait_for_result
from tests.apikit import eventually
from tests.releasekit import Proxy, ReleasePlatform, Releases, push, registry_env

__all__ = ["channel", "node", "node_settings", "proxy", "registry", "releases"]

CANARY, OTHER = f"{ZONE}/{NODE}", f"{ZONE}/pve2"
START = """mutation($version: String!, $hosts: [String!], $soak: Int) {
  startAgentRollout(version: $version, canaryHosts: $hosts, soakMinutes: $soak) {
    rollout { phase canaries baseline } errors { field message } } }"""
ROLLOUT = "{ agentRollout { version phase failedHost message updatedHosts } }"
ROLLOUT_CONFIG_MAP = "agent-release-rollout"


@pytest.fixture(scope="module")
def platform(
    pki: Pki, registry: Registry, proxy: Proxy, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReleasePlatform]:
    """The orchestrator's channel on the registry's tags, through the relay as the nodes see it, with the
    client certificate it asks agents with (the hosts' reports are confirmed by their agents)."""
    cert, key = pki.orchestrator
    env = {
        **registry_env(f"{proxy.address}/flexplane/agent", registry),
        "FLEXPLANE_AGENT_CA": str(pki.ca.cert_path),
        "FLEXPLANE_AGENT_CERT": str(cert),
        "FLEXPLANE_AGENT_KEY": str(key),
    }
    with ReleasePlatform(tmp_path_factory.mktemp("rollout-platform"), pki.ca, env=env) as running:
        yield running


@pytest.fixture
def fleet(node: Node, channel: ReleasePlatform) -> Iterator[ReleasePlatform]:
    """The canary's (where its agent listens) and the other node's hosts in the platform's catalog; the
    rollout removed afterwards."""
    kube = KubeSource(
        client.ApiClient(load_configuration(str(channel.scratch / "kubeconfig"))), seed.NAMESPACE, 10.0
    )
    endpoints = {CANARY: node.target.address, OTHER: f"{AGENT_HOST}:7443"}
    for key in (CANARY, OTHER):
        zone, name = key.split("/")
        host = Host(zone=zone, node=name, endpoint=endpoints[key])
        kube.create_catalog(HOST, host_ident(zone, name), host.to_spec(), labels={ZONE_LABEL: zone})
    yield channel
    for key in (CANARY, OTHER):
        kube.delete_catalog(HOST, host_ident(*key.split("/")))
    try:
        channel.core().delete_namespaced_config_map(ROLLOUT_CONFIG_MAP, seed.NAMESPACE)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def other_host(
    pki: Pki, channel: ReleasePlatform, registry: Registry, proxy: Proxy, releases: Releases, directory: Path
) -> Updater:
    """The other node's updater (host zone1/pve2), running 1.0.0; its apply step is `true` (not run)."""
    return registry_updater(pki, channel, registry, proxy, releases, directory, node=OTHER.split("/")[1])


async def test_a_release_that_fails_on_the_canary_halts_the_rollout_and_never_reaches_the_other_host(
    node: Node,
    fleet: ReleasePlatform,
    pki: Pki,
    registry: Registry,
    proxy: Proxy,
    releases: Releases,
    tmp_path: Path,
) -> None:
    other = other_host(pki, fleet, registry, proxy, releases, tmp_path / "other")
    # The fleet held at 1.0.0 before 1.2.0 is published: the rollout, not the highest tag, decides.
    push(registry, releases.base)
    pinned = fleet.graphql(PIN_VERSION, user="admin", variables={"version": "1.0.0"})
    assert pinned["data"]["pinAgentVersion"]["errors"] == []
    push(registry, releases.broken)  # 1.2.0, which exits at startup
    started = fleet.graphql(
        START, user="admin", variables={"version": "1.2.0", "hosts": [CANARY], "soak": 0}
    )["data"]["startAgentRollout"]
    assert started["errors"] == []
    assert started["rollout"] == {"phase": "CANARY", "canaries": [CANARY], "baseline": "1.0.0"}
    # Anyone's request claiming the canary runs 1.2.0 healthy: its agent says otherwise, so with a soak
    # of 0 it promotes nothing (it would have served 1.2.0 to the other host).
    zone, name = CANARY.split("/")
    forged = fleet.get(
        f"/agent/releases/channel.json?zone={zone}&node={name}&running=1.2.0&result=updated&to=1.2.0"
    )
    assert forged.json()["version"] == "1.2.0"  # what the canary is served, as ever
    assert fleet.graphql(ROLLOUT, user="admin")["data"]["agentRollout"]["updatedHosts"] == []

    info = wait_for_result(node, "rolled-back", to_version="1.2.0")
    assert (info.version, node.pointed("current")) == ("1.0.0", "1.0.0")

    def halted() -> dict[str, Any]:
        found: dict[str, Any] = fleet.graphql(ROLLOUT, user="admin")["data"]["agentRollout"]
        return found if found["phase"] == "HALTED" else {}

    rollout = eventually(halted, 30, "the canary's report of its rollback", interval=0.5)
    assert rollout["failedHost"] == CANARY
    assert f"1.2.0 failed its health check on {CANARY}" in rollout["message"]
    assert rollout["updatedHosts"] == []
    metrics = fleet.get("/metrics").text
    assert f'flexplane_agent_rollout_halted{{host="{CANARY}",version="1.2.0"}} 1.0' in metrics

    # Soak 0: had the canary stayed healthy, the other host would get 1.2.0 now. It does not.
    assert await other.check() == "1.0.0 is the channel's version: nothing to do"
    assert installed(other) == ["1.0.0"]
    assert not (other.installation.root / "update-plan.json").exists()
