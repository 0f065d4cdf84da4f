"""The agent pool: channels, deadlines and parameters (the agent itself is tested in tests/agent)."""

from __future__ import annotations

import time

import pytest

from agentclient import AgentPool, AgentTarget, AgentUnavailable, ClientTLS
from agentclient.pool import encode_params
from tests.agentclient.conftest import ELSEWHERE


def test_it_reuses_one_channel_per_agent(client_tls: ClientTLS, target: AgentTarget) -> None:
    with AgentPool(client_tls) as pool:
        assert pool.channel(target) is pool.channel(AgentTarget(target.identity, target.address))


def test_it_opens_separate_channels_for_separate_agents(client_tls: ClientTLS, target: AgentTarget) -> None:
    other = AgentTarget("pve2.zone1.agents.flexplane", f"{ELSEWHERE}:7443")

    with AgentPool(client_tls) as pool:
        assert pool.channel(target) is not pool.channel(other)


def test_it_reports_an_agent_that_is_not_running_before_the_deadline(
    client_tls: ClientTLS, target: AgentTarget
) -> None:
    started = time.monotonic()

    with AgentPool(client_tls, timeout=3.0) as pool, pytest.raises(AgentUnavailable) as caught:
        pool.proxmox(target, "GET", "/version")

    assert time.monotonic() - started < 3.0
    assert str(caught.value).startswith(
        f"The agent pve1.zone1.agents.flexplane at {target.address} is unavailable: "
    )


def test_it_cannot_be_used_once_closed(client_tls: ClientTLS, target: AgentTarget) -> None:
    pool = AgentPool(client_tls)
    pool.close()

    with pytest.raises(RuntimeError, match="closed"):
        pool.check_health(target)


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_it_refuses_a_call_without_a_positive_deadline(
    client_tls: ClientTLS, target: AgentTarget, timeout: float
) -> None:
    with AgentPool(client_tls) as pool, pytest.raises(ValueError, match="positive"):
        pool.info(target, timeout=timeout)


def test_it_never_shows_the_private_key_in_a_repr(client_tls: ClientTLS) -> None:
    assert "PRIVATE KEY" not in repr(client_tls)


def test_params_are_encoded_as_proxmox_reads_them() -> None:
    assert encode_params({"full": True, "onboot": False, "cores": 4, "name": "web", "skip": None}) == {
        "full": "1",
        "onboot": "0",
        "cores": "4",
        "name": "web",
    }


def test_params_that_proxmox_cannot_read_are_refused() -> None:
    with pytest.raises(TypeError, match="parameter 'tags': list cannot be sent"):
        encode_params({"tags": ["a", "b"]})
