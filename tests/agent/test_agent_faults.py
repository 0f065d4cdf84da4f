"""Faults: Proxmox down or slow, the agent down, and secrets that must not leak."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentclient import (
    AgentDeadlineExceeded,
    AgentError,
    AgentPool,
    AgentTarget,
    AgentUnavailable,
    ProxmoxError,
    ProxmoxUnreachable,
    ProxyRefused,
)
from tests.agent.conftest import NOWHERE_AGENT, NOWHERE_PROXMOX

TOKEN_SECRET = "tok-secret-5e0c2f9a-7d41-4b8e-a1f3-never-shown"  # as in conftest


@pytest.fixture
def slow_down() -> Iterator[Callable[[Any, float], None]]:
    """Make the fake Proxmox answer late; afterwards wait until it has answered every late request.

    The fake records a request only once its delay has passed: waiting keeps late
    requests from landing in the next test's pve.requests.
    """
    slowed: list[tuple[Any, int, float]] = []

    def slow(pve: Any, seconds: float) -> None:
        pve.time_scale = 1.0
        pve.slow_network(seconds)
        slowed.append((pve, len(pve.requests), seconds))

    yield slow
    for pve, before, seconds in slowed:
        deadline = time.monotonic() + seconds + 2.0
        while len(pve.requests) == before and time.monotonic() < deadline:
            time.sleep(0.02)


def test_it_reports_an_unreachable_proxmox(pool: AgentPool, agent_without_proxmox: Any) -> None:
    with pytest.raises(ProxmoxUnreachable) as caught:
        pool.proxmox(agent_without_proxmox.target(), "GET", "/version")

    assert NOWHERE_PROXMOX in str(caught.value)
    assert "pve1.zone1.agents.flexplane" in str(caught.value)


def test_an_unreachable_proxmox_leaves_the_agent_healthy(pool: AgentPool, agent_without_proxmox: Any) -> None:
    assert pool.check_health(agent_without_proxmox.target()) is True


def test_it_reports_a_proxmox_whose_certificate_does_not_verify(
    pool: AgentPool, launch: Any, pki: Any, pve: Any
) -> None:
    agent = launch(proxmox_ca=str(pki.ca.cert_path))  # not the CA of fakepve's certificate
    before = len(pve.requests)

    with pytest.raises(ProxmoxUnreachable, match=r"certificate of Proxmox at .* did not verify"):
        pool.proxmox(agent.target(), "GET", "/version")

    assert len(pve.requests) == before
    agent.stop()


def test_a_slow_proxmox_fails_at_the_callers_deadline(
    pool: AgentPool, target: AgentTarget, pve: Any, slow_down: Any
) -> None:
    slow_down(pve, 1.0)
    started = time.monotonic()

    with pytest.raises(AgentDeadlineExceeded) as caught:
        pool.proxmox(target, "GET", "/version", timeout=0.3)

    assert time.monotonic() - started < 1.0
    assert str(caught.value) == (
        f"The agent pve1.zone1.agents.flexplane at {target.address} did not answer within 0.3 s."
    )


def test_a_slow_proxmox_fails_at_the_agents_proxmox_timeout(
    launch: Any, pool: AgentPool, pve: Any, slow_down: Any
) -> None:
    agent = launch(proxmox_timeout=0.3)
    slow_down(pve, 1.0)

    with pytest.raises(ProxmoxUnreachable, match=r"did not answer within 0\.3 s"):
        pool.proxmox(agent.target(), "GET", "/version", timeout=2.0)

    agent.stop()


def test_it_reports_a_missing_agent_within_the_deadline(pool: AgentPool, nowhere: AgentTarget) -> None:
    started = time.monotonic()

    with pytest.raises(AgentUnavailable) as caught:
        pool.proxmox(nowhere, "GET", "/version", timeout=2.0)

    assert time.monotonic() - started < 2.5
    assert NOWHERE_AGENT in str(caught.value)
    assert not isinstance(caught.value, AgentDeadlineExceeded)


def test_the_token_secret_appears_in_no_answer_and_no_log_line(
    pool: AgentPool, agent: Any, agent_without_proxmox: Any, pve: Any
) -> None:
    target = agent.target()
    answers: list[str] = [
        repr(pool.proxmox(target, "GET", "/version")),
        repr(pool.info(target)),
    ]
    pve.fail("GET", "/cluster/status", 500, "internal error", times=1)
    pve.apitokens["root@pam!flexplane"] = "rotated"  # the agent's token now fails: 401
    for call in (
        lambda: pool.proxmox(target, "GET", "/cluster/status"),
        lambda: pool.proxmox(target, "GET", "/nodes"),
        lambda: pool.proxmox(target, "GET", "/access/users"),
        lambda: pool.proxmox(agent_without_proxmox.target(), "GET", "/nodes"),
    ):
        with pytest.raises(AgentError) as caught:
            call()
        answers.append(f"{caught.value} {caught.value!r} {vars(caught.value)}")

    assert any("authentication failure" in answer for answer in answers)  # the 401 did happen
    assert all(TOKEN_SECRET not in answer for answer in answers)
    assert TOKEN_SECRET not in agent.output()
    assert TOKEN_SECRET not in agent_without_proxmox.output()
    assert "GET /nodes" in agent.output()  # the log is there, at debug level, without the secret


def test_a_proxmox_401_travels_as_a_proxmox_error(pool: AgentPool, target: AgentTarget, pve: Any) -> None:
    pve.apitokens["root@pam!flexplane"] = "rotated"

    with pytest.raises(ProxmoxError) as caught:
        pool.proxmox(target, "GET", "/version")

    assert (caught.value.status, caught.value.message) == (401, "authentication failure")


def test_a_refused_request_is_not_retried_as_unavailable(pool: AgentPool, target: AgentTarget) -> None:
    with pytest.raises(ProxyRefused) as caught:
        pool.proxmox(target, "DELETE", "/version")

    assert not isinstance(caught.value, AgentUnavailable)
