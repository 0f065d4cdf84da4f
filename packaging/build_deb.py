#!/usr/bin/env python3
"""``make deb``: the agent as a Debian package, ``flexplane-agent_<version>_amd64.deb``.

    python3 packaging/build_deb.py [--out .build] [--version VERSION]

What goes in (nothing of the orchestrator: the agent's own distribution, distributions/flexplane-agent):

- ``/opt/flexplane-agent/venv``: a virtual environment on the node's ``/usr/bin/python3`` with the
  agent, agentclient and the libraries they import. Proxmox VE 8 is Debian 12 (Python 3.11), Proxmox
  VE 9 is Debian 13 (Python 3.13): the venv's ``lib/`` has a ``site-packages`` for each, filled by pip
  with the wheels for that Python, so one package installs on both and the interpreter picks its own
  folder. Nothing is compiled here and nothing runs this machine's Python on the node.
- ``/usr/bin/flexplane-agent``, the unit ``/lib/systemd/system/flexplane-agent.service``, the
  maintainer scripts (packaging/deb/), ``/opt/flexplane-agent/venv/PACKAGE_VERSION`` (what the agent
  reports as its package's version), and the copyright and changelog Debian asks for.

No conffile: ``/etc/flexplane/agent.toml`` is written by ``flexplane-agent bootstrap``, not shipped.

The version is the project's (pyproject.toml) with the commit it was built from,
``0.1.0+git<commits>.<hash>``, and ``.dirty`` after it when the working tree has changes that
``git status`` shows (untracked files too: they would be in the package). Debian sorts a later commit
higher. Built with ``dpkg-deb`` from Debian's dpkg; pip fetches wheels from PyPI, nothing else.
"""

from __future__ import annotations

import argparse
import datetime
import email.utils
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEB = HERE / "deb"
AGENT_PROJECT = ROOT / "distributions" / "flexplane-agent"
# The versions the project's tests ran with (make lock): the package installs those, not the newest.
LOCK = ROOT / "requirements.lock"
PACKAGE = "flexplane-agent"
ARCH = "amd64"
INSTALL = Path("opt/flexplane-agent")
VENV = INSTALL / "venv"
# The Python of each Debian release the package installs on: (Debian, Python).
PYTHONS = (("12 (bookworm)", "3.11"), ("13 (trixie)", "3.13"))
# Wheels built for these glibc baselines run on Debian 12's glibc 2.36 and later.
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64", "linux_x86_64")
# The mesh (agent.mesh, agentclient.wireguard) runs wg and ip; Proxmox's kernel has WireGuard itself,
# wireguard-go is its userspace stand-in elsewhere. Edge gateways (agent.gateways) run ip and nft.
DEPENDS = (
    "python3 (>= 3.11~), python3 (<< 3.14~), libc6 (>= 2.28), libgcc-s1, libstdc++6, ca-certificates, "
    "wireguard-tools, iproute2, nftables"
)
SUGGESTS = "wireguard-go"
MAINTAINER = "flex.plane maintainers <maintainers@flexplane.invalid>"
DESCRIPTION = """\
flex.plane agent of a Proxmox VE node
 The agent gives flex.plane's control plane access to this Proxmox VE node:
 it proxies an allowlist of requests to the node's own Proxmox API over
 mutual TLS, fetches images and keeps itself up to date from signed releases.
 .
 Installing the package does not start the agent: enroll the node with
 `flexplane-agent bootstrap`, which writes /etc/flexplane and starts it."""

# The command runs the venv's python (the node's own, with the venv's libraries), isolated from the
# caller's environment and working folder (-I).
LAUNCHER = """\
#!/bin/sh
exec /opt/flexplane-agent/venv/bin/python3 -I -m agent "$@"
"""


def git(*args: str) -> str:
    argv = ["git", "-C", str(ROOT), *args]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)  # noqa: S603 - git
    return done.stdout.strip()


def project_version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'(?m)^version = "([^"]+)"', text)
    if not found:
        raise SystemExit("build_deb: pyproject.toml has no version")
    return found.group(1)


def package_version() -> str:
    """The project's version, the commit, and whether the tree differs from it (Debian-legal)."""
    base = project_version()
    try:
        count, commit = git("rev-list", "--count", "HEAD"), git("rev-parse", "--short=10", "HEAD")
        dirty = bool(git("status", "--porcelain"))
    except (OSError, subprocess.CalledProcessError):
        return f"{base}+nogit"  # an exported tree: no commit to name
    return f"{base}+git{count}.{commit}" + (".dirty" if dirty else "")


def build_wheel(work: Path) -> Path:
    """The flexplane-agent wheel (hatchling, fetched by pip's build isolation)."""
    wheels = work / "wheels"
    subprocess.run(  # noqa: S603 - this Python's pip
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(AGENT_PROJECT)],
        check=True,
    )
    (wheel,) = wheels.glob("flexplane_agent-*.whl")
    return wheel


def fill_site_packages(wheel: Path, venv: Path, python: str) -> None:
    """The agent and its dependencies as the wheels for that Python, in that Python's site-packages."""
    nodot = python.replace(".", "")
    target = venv / "lib" / f"python{python}" / "site-packages"
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--no-warn-script-location"]
    argv += ["--constraint", str(LOCK)]
    argv += ["--target", str(target), "--only-binary=:all:", "--implementation", "cp"]
    argv += ["--python-version", python, "--abi", f"cp{nodot}", "--abi", "abi3", "--abi", "none"]
    for platform in PLATFORMS:
        argv += ["--platform", platform]
    subprocess.run([*argv, str(wheel)], check=True)  # noqa: S603 - this Python's pip
    shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts of the target, not ours


def make_venv(stage: Path, wheel: Path, version: str) -> None:
    venv = stage / VENV
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(
        "home = /usr/bin\ninclude-system-site-packages = false\n", encoding="utf-8"
    )
    (venv / "bin" / "python3").symlink_to("/usr/bin/python3")
    (venv / "bin" / "python").symlink_to("python3")
    launcher = venv / "bin" / PACKAGE
    launcher.write_text(LAUNCHER, encoding="utf-8")
    launcher.chmod(0o755)
    for _debian, python in PYTHONS:
        fill_site_packages(wheel, venv, python)
    (venv / "PACKAGE_VERSION").write_text(version + "\n", encoding="utf-8")
    usr_bin = stage / "usr" / "bin"
    usr_bin.mkdir(parents=True)
    (usr_bin / PACKAGE).symlink_to(f"/{VENV}/bin/{PACKAGE}")


def add_system_files(stage: Path, version: str, epoch: int) -> None:
    unit = stage / "lib" / "systemd" / "system" / f"{PACKAGE}.service"
    unit.parent.mkdir(parents=True)
    shutil.copyfile(DEB / f"{PACKAGE}.service", unit)
    doc = stage / "usr" / "share" / "doc" / PACKAGE
    doc.mkdir(parents=True)
    shutil.copyfile(DEB / "copyright", doc / "copyright")
    date = email.utils.format_datetime(datetime.datetime.fromtimestamp(epoch, datetime.UTC))
    changelog = (
        f"{PACKAGE} ({version}) unstable; urgency=medium\n\n"
        "  * Built from the flex.plane repository.\n\n"
        f" -- {MAINTAINER}  {date}\n"
    )
    with (
        (doc / "changelog.gz").open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch, compresslevel=9) as out,
    ):
        out.write(changelog.encode())
    overrides = stage / "usr" / "share" / "lintian" / "overrides" / PACKAGE
    overrides.parent.mkdir(parents=True)
    shutil.copyfile(DEB / "lintian-overrides", overrides)


def strip_libraries(stage: Path) -> None:
    """Debug symbols out of the wheels' shared libraries, as Debian's own packages ship them."""
    libraries = [str(p) for p in (stage / VENV).rglob("*.so") if p.is_file()]
    if libraries:
        subprocess.run(  # noqa: S603 - binutils' strip
            ["strip", "--strip-unneeded", "--remove-section=.comment", "--remove-section=.note", *libraries],  # noqa: S607
            check=True,
        )


def normalise_modes(stage: Path) -> None:
    """Folders 0755, files 0644, programs 0755 (shared libraries are not programs)."""
    for path in [stage, *stage.rglob("*")]:
        if path.is_symlink():
            continue
        path.chmod(0o755 if path.is_dir() or path.parent.name == "bin" else 0o644)


def add_control(stage: Path, version: str) -> None:
    control_dir = stage / "DEBIAN"
    control_dir.mkdir()
    size_kib = sum(p.lstat().st_size for p in stage.rglob("*") if not p.is_dir()) // 1024 + 1
    (control_dir / "control").write_text(
        f"Package: {PACKAGE}\nVersion: {version}\nArchitecture: {ARCH}\nMaintainer: {MAINTAINER}\n"
        f"Installed-Size: {size_kib}\nDepends: {DEPENDS}\nSuggests: {SUGGESTS}\n"
        "Section: admin\nPriority: optional\n"
        f"Description: {DESCRIPTION}\n",
        encoding="utf-8",
    )
    sums = []
    for path in sorted(stage.rglob("*")):
        if path.is_file() and not path.is_symlink() and control_dir not in path.parents:
            digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
            sums.append(f"{digest}  {path.relative_to(stage)}\n")
    (control_dir / "md5sums").write_text("".join(sums), encoding="utf-8")
    (control_dir / "md5sums").chmod(0o644)
    (control_dir / "control").chmod(0o644)
    for script in ("postinst", "prerm", "postrm"):
        shutil.copyfile(DEB / script, control_dir / script)
        (control_dir / script).chmod(0o755)


def build(out: Path, version: str) -> Path:
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or git("log", "-1", "--format=%ct") or 0)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{PACKAGE}_{version}_{ARCH}.deb"
    with tempfile.TemporaryDirectory(prefix="build-deb-", dir=out) as scratch:
        work = Path(scratch)
        stage = work / "stage"
        stage.mkdir()
        make_venv(stage, build_wheel(work), version)
        add_system_files(stage, version, epoch)
        strip_libraries(stage)
        normalise_modes(stage)
        add_control(stage, version)
        env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch)}
        subprocess.run(  # noqa: S603 - Debian's dpkg-deb
            ["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(stage), str(target)],  # noqa: S607
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description="Build the flexplane-agent Debian package.")
    parser.add_argument("--out", type=Path, default=ROOT / ".build", help="where the .deb goes")
    parser.add_argument("--version", help="the package's version (default: from pyproject.toml and git)")
    parser.add_argument("--print-version", action="store_true", help="print the version it would build, only")
    args = parser.parse_args()
    version = args.version or package_version()
    if args.print_version:
        print(version)
        return 0
    if not re.fullmatch(r"[0-9][A-Za-z0-9.+~]*", version):
        parser.error(f"{version!r} is not a Debian version (digits first, then letters, digits, . + ~)")
    print(build(args.out.resolve(), version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
