"""The flexplane-agent command: starting, refusing to start, and stopping."""

from __future__ import annotations

import signal
import socket
from typing import Any

from agentclient import AgentPool
from tests.agent.conftest import AGENT_HOST

EXIT_CONFIG = 2


def test_serve_is_the_default_command(launch: Any, pool: AgentPool) -> None:
    agent = launch(command=())

    assert pool.check_health(agent.target()) is True


def test_it_prints_exactly_one_line_when_ready(agent: Any) -> None:
    assert agent.stdout_path.read_text() == f"flexplane-agent listening on {agent.address}\n"


def test_it_stops_gracefully_on_sigterm(launch: Any) -> None:
    agent = launch()

    assert agent.stop(signal.SIGTERM) == 0
    assert "shutting down" in agent.output()


def test_it_stops_gracefully_on_sigint(launch: Any) -> None:
    agent = launch()

    assert agent.stop(signal.SIGINT) == 0


def test_it_refuses_to_start_with_an_invalid_configuration(agent_config: Any, run_agent: Any) -> None:
    config = agent_config(
        zone="not a label", proxmox_url="http://127.0.0.1:8006", tls_cert="/nonexistent.crt"
    )

    result = run_agent("serve", "--config", str(config))

    assert result.returncode == EXIT_CONFIG
    assert "zone: 'not a label' is not a DNS label" in result.stderr
    assert "proxmox_url: must be an https:// URL" in result.stderr
    assert "tls_cert: /nonexistent.crt is not a file" in result.stderr
    assert result.stdout == ""


def test_it_refuses_to_start_with_a_certificate_of_another_host(
    agent_config: Any, run_agent: Any, pki: Any
) -> None:
    cert, key = pki.other_host_agent
    config = agent_config(tls_cert=str(cert), tls_key=str(key))

    result = run_agent("serve", "--config", str(config))

    assert result.returncode == EXIT_CONFIG
    assert "does not name pve1.zone1.agents.flexplane" in result.stderr


def test_it_refuses_to_start_with_a_key_that_is_not_its_certificates(
    agent_config: Any, run_agent: Any, pki: Any
) -> None:
    config = agent_config(tls_key=str(pki.other_host_agent[1]))

    result = run_agent("serve", "--config", str(config))

    assert result.returncode == EXIT_CONFIG
    assert "is not the key of tls_cert" in result.stderr


def test_it_refuses_to_start_on_a_port_another_process_holds(agent_config: Any, run_agent: Any) -> None:
    with socket.socket() as holder:
        holder.bind((AGENT_HOST, 0))
        holder.listen()
        config = agent_config(listen=f"{AGENT_HOST}:{holder.getsockname()[1]}")

        result = run_agent("serve", "--config", str(config))

    assert result.returncode == EXIT_CONFIG
    assert f"cannot listen on {AGENT_HOST}:" in result.stderr


def test_environment_variables_override_the_file(agent_config: Any, run_agent: Any) -> None:
    config = agent_config()

    result = run_agent("serve", "--config", str(config), env={"FLEXPLANE_AGENT_NODE": "-bad-"})

    assert result.returncode == EXIT_CONFIG
    assert "node: '-bad-' is not a DNS label" in result.stderr
