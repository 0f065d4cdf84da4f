"""The agent's Prometheus metrics: served on a loopback port only, counting its calls as they happen."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from agent.config import ConfigError, validate
from agentclient import AgentPool, ProxmoxError
from tests.agent.conftest import AGENT_HOST, AgentProcess, stand_in_settings
from tests.metricskit import sample

METRICS_LINE = "flexplane-agent metrics on "


@pytest.fixture(scope="module")
def metrics_agent(launch: Callable[..., AgentProcess]) -> Iterator[AgentProcess]:
    process = launch(metrics_listen=f"{AGENT_HOST}:0")
    yield process
    process.stop()


def metrics_url(agent: AgentProcess) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in agent.stdout_path.read_text().splitlines():
            if line.startswith(METRICS_LINE):
                return f"http://{line[len(METRICS_LINE) :].strip()}/metrics"
        time.sleep(0.02)
    pytest.fail(f"the agent did not say where its metrics are:\n{agent.output()}")


def test_the_agent_counts_its_rpcs_and_proxmox_calls_by_method_and_outcome(
    metrics_agent: AgentProcess, pool: AgentPool
) -> None:
    url = metrics_url(metrics_agent)
    before = requests.get(url, timeout=5).text
    target = metrics_agent.target()

    pool.proxmox(target, "GET", "/version")
    with pytest.raises(ProxmoxError):
        pool.proxmox(target, "GET", "/nodes/pve1/qemu/999999/config")

    after = requests.get(url, timeout=5).text
    rpc = "flexplane_agent_rpc_calls_total"
    assert sample(after, rpc, method="Call", code="OK") - sample(before, rpc, method="Call", code="OK") == 2
    calls = "flexplane_agent_proxmox_calls_total"
    assert (
        sample(after, calls, method="GET", outcome="2xx") - sample(before, calls, method="GET", outcome="2xx")
        >= 1
    )
    assert sample(after, calls, method="GET", outcome="5xx") + sample(
        after, calls, method="GET", outcome="4xx"
    ) > (
        sample(before, calls, method="GET", outcome="5xx")
        + sample(before, calls, method="GET", outcome="4xx")
    )
    assert sample(after, "flexplane_agent_proxmox_call_duration_seconds_count", method="GET") >= 2


def test_the_agent_reports_its_certificate_days_left_and_update_state(metrics_agent: AgentProcess) -> None:
    text = requests.get(metrics_url(metrics_agent), timeout=5).text

    assert 0 < sample(text, "flexplane_agent_certificate_days_left") < 3660
    assert sample(text, "flexplane_agent_update_result", result="none") == 1
    assert sample(text, "flexplane_agent_update_result", result="failed") == 0
    assert "flexplane_agent_image_cache_bytes " in text


def test_metrics_listen_must_be_a_loopback_address(tmp_path: Path) -> None:
    raw = stand_in_settings(tmp_path, zone="zone1")

    with pytest.raises(ConfigError, match="metrics_listen: must be a loopback address"):
        validate({**raw, "metrics_listen": "0.0.0.0:9464"})
    assert validate({**raw, "metrics_listen": "127.0.0.1:9464"}).metrics_listen == "127.0.0.1:9464"
    assert validate(raw).metrics_listen is None


def test_an_agent_whose_metrics_port_is_taken_still_serves_its_calls(
    metrics_agent: AgentProcess, launch: Callable[..., AgentProcess], pool: AgentPool
) -> None:
    taken = metrics_url(metrics_agent).removeprefix("http://").removesuffix("/metrics")

    second = launch(metrics_listen=taken)
    try:
        assert pool.proxmox(second.target(), "GET", "/version")["version"]
        assert f"no metrics: cannot listen on {taken}" in second.output()
    finally:
        second.stop()
