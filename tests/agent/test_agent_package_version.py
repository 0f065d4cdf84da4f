"""The agent reports the version of the flexplane-agent Debian package it runs on, beside its own.

The package writes its version into its venv (``/opt/flexplane-agent/venv/PACKAGE_VERSION``), and the
agent, or any release it updated itself to, runs on that venv's Python. Run from anywhere else (a
checkout, the devstack) there is no package and the agent says nothing of one.
"""

from __future__ import annotations

from pathlib import Path

from agent.status import AgentStatus, package_version
from agentclient.pool import AgentInfo
from orchestrator.sources.proxmox.values import AgentReport


def test_the_package_version_is_read_from_the_venv_the_agent_runs_on(tmp_path: Path) -> None:
    (tmp_path / "PACKAGE_VERSION").write_text("0.1.0+git130.0123456789\n")

    assert package_version(tmp_path) == "0.1.0+git130.0123456789"


def test_outside_the_package_there_is_no_package_version(tmp_path: Path) -> None:
    assert package_version(tmp_path) == ""


def test_the_agents_report_carries_both_versions_to_the_orchestrator() -> None:
    status = AgentStatus(package_version="0.1.0+git130.0123456789")

    reply = status.to_proto(version="0.1.2", node="pve1", zone="zone-a", identity="pve1.zone-a")
    report = AgentReport.from_info(AgentInfo.from_proto(reply))

    assert (report.version, report.package_version) == ("0.1.2", "0.1.0+git130.0123456789")
