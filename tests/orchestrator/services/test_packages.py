"""The services' packages are split by concept: each ``__init__.py`` only re-exports what its modules hold
(a docstring, imports and ``__all__``), so a reader finds the logic in the module named after it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SERVICES = Path(__file__).resolve().parents[3] / "orchestrator" / "services"
PACKAGES = sorted(p.parent.name for p in SERVICES.glob("*/__init__.py"))


def test_there_are_packages_to_check() -> None:
    assert {"catalog", "vdcs", "vms", "gateways"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_services_package_init_only_re_exports(package: str) -> None:
    tree = ast.parse((SERVICES / package / "__init__.py").read_text())
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    for node in body:
        exported = isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]
        assert isinstance(node, ast.Import | ast.ImportFrom) or exported, f"{package}: line {node.lineno}"


@pytest.mark.parametrize("package", PACKAGES)
def test_everything_a_services_package_exports_is_there(package: str) -> None:
    module = importlib.import_module(f"orchestrator.services.{package}")
    assert [name for name in getattr(module, "__all__", []) if not hasattr(module, name)] == []
