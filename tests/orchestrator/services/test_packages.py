"""The services' packages are split by concept: each ``__init__.py`` only re-exports what its modules hold
(a docstring, imports and ``__all__``), so a reader finds the logic in the module named after it; and
each imports first, whichever a process happens to load before the others (an import cycle through
packages still loading fails only in the order that reaches it)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
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


# Forks, after Django's setup, a child per module that imports it first and says what it raised.
FIRST_IMPORTS = """
import importlib, os, sys, django
django.setup()
children = {}
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
            os._exit(1)
        os._exit(0)
    children[pid] = name
sys.exit(any(os.waitpid(pid, 0)[1] for pid in children))
"""
# What processes load first: the URLconf (manage.py's checks, the server), the ASGI app, the API's schema,
# the providers' handlers; and each services package, as a test or a command may.
ENTRY_POINTS = (
    "flexplane.urls",
    "flexplane.asgi",
    "orchestrator.graphql.schema",
    "providers.controlplane.handlers",
)


def test_each_entry_point_and_services_package_imports_first_in_a_fresh_process() -> None:
    modules = [*ENTRY_POINTS, *(f"orchestrator.services.{p}" for p in PACKAGES)]
    done = subprocess.run(
        [sys.executable, "-c", FIRST_IMPORTS, *modules],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=SERVICES.parents[1],
    )

    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
