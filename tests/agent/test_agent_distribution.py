"""The agent installs on a Proxmox node without the orchestrator's dependencies.

``distributions/flexplane-agent/pyproject.toml`` builds the ``flexplane-agent`` distribution
from the ``agent`` and ``agentclient`` packages alone, with only what they import. These tests
check that the two packages import nothing of the orchestrator's side, that the distribution
declares every third-party package they import (with the project's own bounds), and, for real,
that it installs into a clean virtual environment where ``flexplane-agent`` runs and Django is
nowhere.
"""

from __future__ import annotations

from pathlib import Path

from agent import __version__
from tests.distributions import (
    ORCHESTRATOR_SIDE,
    ROOT,
    bounds_differing_from_the_projects,
    import_probe,
    imported_modules,
    install_into_clean_venv,
    project,
    undeclared_imports,
)

AGENT_PROJECT = ROOT / "distributions" / "flexplane-agent"
PACKAGES = ("agent", "agentclient")
# The orchestrator's side, and what only it depends on: never imported by the agent.
FORBIDDEN = ORCHESTRATOR_SIDE


def test_the_agent_and_its_client_import_nothing_of_the_orchestrators_side() -> None:
    imported = imported_modules(PACKAGES)

    offending = {name: sorted(map(str, files)) for name, files in imported.items() if name in FORBIDDEN}

    assert offending == {}


def test_the_agent_distribution_declares_every_third_party_package_the_agent_imports() -> None:
    assert undeclared_imports(PACKAGES, AGENT_PROJECT) == {}


def test_the_agent_distribution_asks_for_what_the_project_asks_for() -> None:
    assert bounds_differing_from_the_projects(AGENT_PROJECT) == []
    whole = project(ROOT)
    agent = {"flexplane-agent": "agent.__main__:main"}
    assert project(AGENT_PROJECT)["scripts"] == agent
    # The project's commands: the agent's, and the orchestrator's server, which the agent has no use for.
    assert whole["scripts"] == {**agent, "flexplane-serve": "flexplane.serve:main"}


def test_the_agent_distribution_installs_into_a_clean_venv_without_django(tmp_path: Path) -> None:
    python, run = install_into_clean_venv(AGENT_PROJECT, tmp_path)

    helped = run(str(python.with_name("flexplane-agent")), "--help")
    assert helped.returncode == 0, helped.stderr
    for command in ("serve", "bootstrap", "release", "update-apply"):
        assert command in helped.stdout

    # Every module of both packages imports with only the distribution's dependencies; Django and
    # the orchestrator's packages are not there, and the agent knows its version.
    checked = run(str(python), "-c", import_probe(PACKAGES, FORBIDDEN))
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert checked.stdout.split() == [__version__, "[]"]
