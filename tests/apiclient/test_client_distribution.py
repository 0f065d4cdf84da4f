"""The API client installs alone, for automation, without the orchestrator's dependencies.

``distributions/flexplane-client/pyproject.toml`` builds the ``flexplane-client`` distribution from the
``apiclient`` package alone. These tests check that the package imports nothing of the orchestrator's
side, that the distribution declares every third-party package it imports (with the project's own
bounds), and, for real, that it installs into a clean virtual environment where every module of it
imports and Django is nowhere.
"""

from __future__ import annotations

from pathlib import Path

from tests.distributions import (
    ORCHESTRATOR_SIDE,
    ROOT,
    bounds_differing_from_the_projects,
    import_probe,
    imported_modules,
    install_into_clean_venv,
    undeclared_imports,
)

CLIENT_PROJECT = ROOT / "distributions" / "flexplane-client"
PACKAGES = ("apiclient",)
FORBIDDEN = ORCHESTRATOR_SIDE
# What pydantic itself brings (its compiled core), imported by the generated code.
COMES_WITH_PYDANTIC = "pydantic_core"


def test_the_client_imports_nothing_of_the_orchestrators_side() -> None:
    imported = imported_modules(PACKAGES)

    offending = {
        name: sorted(map(str, files)) for name, files in imported.items() if name in ORCHESTRATOR_SIDE
    }

    assert offending == {}


def test_the_client_distribution_declares_every_third_party_package_the_client_imports() -> None:
    undeclared = undeclared_imports(PACKAGES, CLIENT_PROJECT)

    assert set(undeclared) <= {COMES_WITH_PYDANTIC}, undeclared


def test_the_client_distribution_asks_for_what_the_project_asks_for() -> None:
    assert bounds_differing_from_the_projects(CLIENT_PROJECT) == []


def test_the_client_distribution_installs_into_a_clean_venv_without_django(tmp_path: Path) -> None:
    python, run = install_into_clean_venv(CLIENT_PROJECT, tmp_path)

    checked = run(str(python), "-c", import_probe(PACKAGES, FORBIDDEN))

    assert checked.returncode == 0, checked.stderr[-3000:]
    assert checked.stdout.split() == ["-", "[]"]
    listed = run(
        str(python), "-c", "from apiclient import FlexPlane; print(FlexPlane.follow.__doc__ is not None)"
    )
    assert listed.stdout.split() == ["True"], listed.stderr[-3000:]
