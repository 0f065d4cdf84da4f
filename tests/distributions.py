"""What the tests of the project's own distributions (distributions/*) share: their declarations, what their
packages import, and an install into a clean virtual environment, as a user of one alone would have it.

Used by tests/agent/test_agent_distribution.py (``flexplane-agent``) and
tests/apiclient/test_client_distribution.py (``flexplane-client``)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
INSTALL_TIMEOUT = 240
# The versions the project's tests run with, as make installs them.
LOCKED = ("--constraints", str(ROOT / "requirements.lock"))
# The orchestrator's side, and what only it depends on: never imported by a distribution's packages.
ORCHESTRATOR_SIDE = frozenset(
    {
        "orchestrator",
        "portal",
        "flexplane",
        "devstack",
        "django",
        "graphene",
        "graphene_django",
        "channels",
        "uvicorn",
        "kubernetes",
        "mozilla_django_oidc",
    }
)

Run = Callable[..., subprocess.CompletedProcess[str]]


def project(path: Path) -> dict[str, object]:
    """The ``[project]`` table of the pyproject.toml in ``path``."""
    with (path / "pyproject.toml").open("rb") as handle:
        document = tomllib.load(handle)
    return dict(document["project"])


def requirements(path: Path) -> list[Requirement]:
    """The dependencies the project in ``path`` declares."""
    dependencies = project(path)["dependencies"]
    assert isinstance(dependencies, list)
    return [Requirement(text) for text in dependencies]


def imported_modules(packages: Iterable[str]) -> dict[str, set[Path]]:
    """Every top-level module the packages import (absolute imports), with the files importing it."""
    found: dict[str, set[Path]] = {}
    for package in packages:
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


def undeclared_imports(packages: Iterable[str], path: Path) -> dict[str, list[str]]:
    """The third-party modules the packages import that no dependency of the project in ``path``
    provides, with the files importing each."""
    packages = tuple(packages)
    declared = {canonicalize_name(requirement.name) for requirement in requirements(path)}
    providers = metadata.packages_distributions()
    return {
        name: sorted(map(str, files))
        for name, files in imported_modules(packages).items()
        if name not in sys.stdlib_module_names
        and name not in packages
        and not {canonicalize_name(d) for d in providers.get(name, [])} & declared
    }


def bounds_differing_from_the_projects(path: Path) -> list[str]:
    """The dependencies of the project in ``path`` whose bounds are not the repository project's own (its
    dependencies, or its development ones: the API client's httpx, which the orchestrator does not use)."""
    development = project(ROOT)["optional-dependencies"]
    assert isinstance(development, dict)
    declared = [*requirements(ROOT), *(Requirement(text) for text in development["dev"])]
    bounds = {canonicalize_name(r.name): r for r in declared}
    return [
        str(requirement)
        for requirement in requirements(path)
        if str(bounds.get(canonicalize_name(requirement.name))) != str(requirement)
    ]


def install_into_clean_venv(path: Path, scratch: Path) -> tuple[Path, Run]:
    """The project in ``path`` installed into a new venv under ``scratch``, with the lock's versions: that
    venv's python, and ``run(*command, timeout=60)`` to run a command outside the checkout (so that
    nothing is imported from it rather than from the venv), its output captured."""
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "DJANGO", "VIRTUAL_ENV"))}
    # With uv and the lock, as make installs the project (the same resolution as pip's, from the same
    # metadata, in a fraction of the time); its cache holds what the project's install fetched.
    uv = Path(sys.executable).with_name("uv")

    def run(*command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=scratch, env=env, check=False
        )

    python = venv / "bin" / "python"
    installed = run(
        str(uv),
        "pip",
        "install",
        "--quiet",
        "--system-certs",
        "--python",
        str(python),
        *LOCKED,
        str(path),
        timeout=INSTALL_TIMEOUT,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python, run


def import_probe(packages: Iterable[str], absent: Iterable[str]) -> str:
    """A program that imports every module of the packages, then prints the first package's
    ``__version__`` (``-`` if it has none) and which of ``absent`` are there (``[]`` when none is)."""
    packages = tuple(packages)
    return (
        f"import importlib, importlib.util, pkgutil, {', '.join(packages)}\n"
        f"for package in ({', '.join(packages)},):\n"
        "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(module.name)\n"
        f"present = [name for name in {sorted(absent)!r} if importlib.util.find_spec(name)]\n"
        f"print(getattr({packages[0]}, '__version__', '-'), present)\n"
    )
