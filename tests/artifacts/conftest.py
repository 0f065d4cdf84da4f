"""The artifact tests (``make test-artifacts``): the .deb and the images, built and exercised for real.

They need root, debootstrap, lintian, umoci and Debian's archive, and take minutes: ``make test`` does
not collect them. They are collected only when this folder (or a file in it) is named on the command
line, as ``make test-artifacts`` does. The artifacts under test come from the environment
(``FLEXPLANE_DEB``, ``FLEXPLANE_IMAGE``: what ``make test-artifacts`` just built) or are built here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.artifacts.chroot import BUILD, ROOT, Chroot

HERE = Path(__file__).resolve().parent
BUILD_DEB = ROOT / "packaging" / "build_deb.py"
BUILD_IMAGE = ROOT / "packaging" / "build_image.py"
TOOLS = ("debootstrap", "lintian", "dpkg-deb", "unshare", "strip", "umoci")


def _named(config: pytest.Config) -> bool:
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if (collection_path == HERE or HERE in collection_path.parents) and not _named(config):
        return True
    return None


@pytest.fixture(scope="session", autouse=True)
def _artifact_tools() -> None:
    if os.geteuid() != 0:
        pytest.fail("the artifact tests run as root (debootstrap, chroot, mount namespaces)")
    missing = [
        tool
        for tool in TOOLS
        if subprocess.run(["sh", "-c", f"command -v {tool}"], check=False, capture_output=True).returncode
    ]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: make test-artifacts installs them")


def artifact(variable: str, build: list[str], built: Callable[[str], Path]) -> Path:
    """An artifact under test: the one the environment's ``variable`` names (make test-artifacts' build),
    else one ``build`` (a script and its arguments) makes now, found from its output by ``built``."""
    given = os.environ.get(variable)
    if given:
        return Path(given)
    done = subprocess.run([sys.executable, *build], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return built(done.stdout.strip())


@pytest.fixture(scope="session")
def deb() -> Path:
    """The package under test: make test-artifacts' build, else one built now."""
    return artifact(
        "FLEXPLANE_DEB", [str(BUILD_DEB), "--out", str(BUILD)], lambda out: Path(out.splitlines()[-1])
    )


def field(deb: Path, name: str) -> str:
    return subprocess.run(
        ["dpkg-deb", "--field", str(deb), name], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture(scope="session")
def older_deb(deb: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An older build: the same package stamped with a version Debian sorts before it."""
    work = tmp_path_factory.mktemp("older")
    tree = work / "tree"
    subprocess.run(["dpkg-deb", "--raw-extract", str(deb), str(tree)], check=True)
    version = field(deb, "Version") + "~older"
    control = tree / "DEBIAN" / "control"
    control.write_text(
        "".join(
            f"Version: {version}\n" if line.startswith("Version:") else line
            for line in control.read_text(encoding="utf-8").splitlines(keepends=True)
        ),
        encoding="utf-8",
    )
    stamp = tree / "opt" / "flexplane-agent" / "venv" / "PACKAGE_VERSION"
    stamp.write_text(version + "\n", encoding="utf-8")
    older = work / f"flexplane-agent_{version}_amd64.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", str(tree), str(older)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return older


@pytest.fixture
def fresh_root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Chroot]:
    """A copy of the cached minimal root of the suite the test is parametrized with."""
    root = Chroot.copy_of(request.param, BUILD / "scratch" / f"{request.param}-{tmp_path.name}")
    yield root
    root.remove()


@pytest.fixture(scope="session")
def layout() -> Path:
    """The OCI layout under test: make test-artifacts' build, else one built now."""
    return artifact(
        "FLEXPLANE_IMAGE", [str(BUILD_IMAGE), "--build", str(BUILD)], lambda _: BUILD / "image" / "oci"
    )


# The image's root and the neighbours its processes meet, shared by every test of the image.
from tests.artifacts.image import neighbours, oci_config, rootfs  # noqa: E402, F401
