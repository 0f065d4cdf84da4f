"""The agent installs on a Proxmox node without the orchestrator's dependencies.

``distributions/flexplane-agent/pyproject.toml`` builds the ``flexplane-agent`` distribution
from the ``agent`` and ``agentclient`` packages alone, with only what they import. These tests
check that the two packages import nothing of the orchestrator's side, that the distribution
declares every third-party package they import (with the project's own bounds), and, for real,
that it installs into a clean virtual environment where ``flexplane-agent`` runs and Django is
nowhere.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from agent import __version__

ROOT = Path(__file__).resolve().parents[2]
AGENT_PROJECT = ROOT / "distributions" / "flexplane-agent"
PACKAGES = ("agent", "agentclient")
# The orchestrator's side, and what only it depends on: never imported by the agent.
FORBIDDEN = {
    "orchestrator",
    "portal",
    "flexplane",
    "devstack",
    "django",
    "graphene",
    "graphene_django",
    "channels",
    "daphne",
    "kubernetes",
    "mozilla_django_oidc",
}
INSTALL_TIMEOUT = 240
# The versions the project's tests run with, as make installs them.
LOCKED = ("--constraints", str(ROOT / "requirements.lock"))


def project(path: Path) -> dict[str, object]:
    with (path / "pyproject.toml").open("rb") as handle:
        document = tomllib.load(handle)
    return dict(document["project"])


def agent_requirements() -> list[Requirement]:
    dependencies = project(AGENT_PROJECT)["dependencies"]
    assert isinstance(dependencies, list)
    return [Requirement(text) for text in dependencies]


def imported_modules() -> dict[str, set[Path]]:
    """Every top-level module the two packages import (absolute imports), with the files importing it."""
    found: dict[str, set[Path]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.partition(".")[0], set()).add(path.relative_to(ROOT))
    return found


def test_the_agent_and_its_client_import_nothing_of_the_orchestrators_side() -> None:
    imported = imported_modules()

    offending = {name: sorted(map(str, files)) for name, files in imported.items() if name in FORBIDDEN}

    assert offending == {}


def test_the_agent_distribution_declares_every_third_party_package_the_agent_imports() -> None:
    declared = {canonicalize_name(requirement.name) for requirement in agent_requirements()}
    providers = metadata.packages_distributions()
    third_party = {
        name: files
        for name, files in imported_modules().items()
        if name not in sys.stdlib_module_names and name not in PACKAGES
    }

    undeclared = {
        name: sorted(map(str, files))
        for name, files in third_party.items()
        if not {canonicalize_name(d) for d in providers.get(name, [])} & declared
    }

    assert undeclared == {}


def test_the_agent_distribution_asks_for_what_the_project_asks_for() -> None:
    whole = project(ROOT)
    dependencies = whole["dependencies"]
    assert isinstance(dependencies, list)
    bounds = {canonicalize_name(r.name): r for r in map(Requirement, dependencies)}

    differing = [
        str(requirement)
        for requirement in agent_requirements()
        if str(bounds.get(canonicalize_name(requirement.name))) != str(requirement)
    ]

    assert differing == []
    assert project(AGENT_PROJECT)["scripts"] == whole["scripts"] == {"flexplane-agent": "agent.__main__:main"}


def test_the_agent_distribution_installs_into_a_clean_venv_without_django(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    # Outside the checkout, so that nothing is imported from it rather than from the venv.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "DJANGO", "VIRTUAL_ENV"))}
    # With uv and the lock, as make installs the project (the same resolution as pip's, from the same
    # metadata, in a fraction of the time); its cache holds what the project's install fetched.
    uv = Path(sys.executable).with_name("uv")

    def run(*command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A command run outside the checkout, with that environment; its output captured."""
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env, check=False
        )

    installed = run(
        str(uv),
        "pip",
        "install",
        "--quiet",
        "--system-certs",
        "--python",
        str(python),
        *LOCKED,
        str(AGENT_PROJECT),
        timeout=INSTALL_TIMEOUT,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]

    helped = run(str(venv / "bin" / "flexplane-agent"), "--help")
    assert helped.returncode == 0, helped.stderr
    for command in ("serve", "bootstrap", "release", "update-apply"):
        assert command in helped.stdout

    # Every module of both packages imports with only the distribution's dependencies; Django and
    # the orchestrator's packages are not there, and the agent knows its version.
    probe = (
        "import importlib, importlib.util, pkgutil, agent, agentclient\n"
        "for package in (agent, agentclient):\n"
        "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(module.name)\n"
        f"present = [name for name in {sorted(FORBIDDEN)!r} if importlib.util.find_spec(name)]\n"
        "print(agent.__version__, present)\n"
    )
    checked = run(str(python), "-c", probe)
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert checked.stdout.split() == [__version__, "[]"]
