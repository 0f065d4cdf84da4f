"""What the project's own files install: exactly what was tested, and nothing a developer did not ask for.

The lock (requirements.lock, written by `make lock`) pins everything the project declares. Every install
takes the lock's versions (make, the image's and the agent package's builds), so a lock that misses a
declared dependency, or pins a version outside its declared range, installs something nobody tested or
fails on a fresh machine. Regenerate it with `make lock`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = ROOT / "Makefile"
LOCK = ROOT / "requirements.lock"
PROJECTS = (ROOT / "pyproject.toml", ROOT / "distributions" / "flexplane-agent" / "pyproject.toml")
# The machines this project installs on: CPython on Linux (developers, CI, the image, the nodes).
LINUX_CPYTHON = {"platform_python_implementation": "CPython", "implementation_name": "cpython"}
LINUX_CPYTHON |= {"sys_platform": "linux"}


def pins() -> dict[str, Version]:
    """The lock's pins that apply on CPython on Linux, by canonical name."""
    pinned: dict[str, Version] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate(LINUX_CPYTHON):
            continue
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"the lock pins exact versions: {line}"
        name = canonicalize_name(requirement.name)
        assert name not in pinned, f"{name} is pinned twice for CPython on Linux"
        pinned[name] = Version(specifier.version)
    return pinned


def declared(project: Path) -> list[Requirement]:
    table = tomllib.loads(project.read_text(encoding="utf-8"))["project"]
    lines = list(table["dependencies"])
    for extra in table.get("optional-dependencies", {}).values():
        lines += extra
    return [Requirement(line) for line in lines]


@pytest.mark.parametrize("project", PROJECTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_lock_pins_every_declared_dependency_inside_its_range(project: Path) -> None:
    pinned = pins()
    missing = [str(r) for r in declared(project) if canonicalize_name(r.name) not in pinned]
    outside = [
        f"{r} (locked {pinned[canonicalize_name(r.name)]})"
        for r in declared(project)
        if canonicalize_name(r.name) in pinned
        and not r.specifier.contains(pinned[canonicalize_name(r.name)], prereleases=True)
    ]
    assert missing == [], f"not in {LOCK.name} (run make lock): {missing}"
    assert outside == [], f"pinned outside the declared range (run make lock): {outside}"


def test_the_lock_reads_the_same_on_every_python_the_project_supports() -> None:
    """No pin depends on the Python version: the agent's package fills one venv for Debian 12's and
    13's Pythons with a single resolution, and pip evaluates markers against the building Python."""
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if ";" in line and not line.startswith("#"):
            marker = str(Marker(line.split(";", 1)[1].strip()))
            assert "python_version" not in marker, line
            assert "python_full_version" not in marker, line


def test_make_installs_debian_packages_without_their_recommends() -> None:
    """chromium's and wireguard-tools' recommends bring a kernel image, an initramfs, avahi and printer
    tools onto a developer's machine: each install names what it needs and no more."""
    recipe = MAKEFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    installs = [line for line in recipe.splitlines() if re.search(r"apt-get install\b", line)]
    assert installs, "the Makefile installs the Debian packages the tests need"
    assert [line.strip() for line in installs if "--no-install-recommends" not in line] == []
