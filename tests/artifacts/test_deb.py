"""The agent's Debian package (``make deb``), checked and installed into minimal Debian 12 and 13 roots.

Each install test works on a fresh copy of a cached debootstrap root; apt installs the package and its
dependencies from Debian's archive, so ``Depends`` is checked too. A node "with Proxmox" is the same root
with ``/etc/pve`` and a ``pveversion`` in it, and systemd is a ``systemctl`` that writes down what it is
asked (the maintainer scripts only call systemctl when /run/systemd/system exists, as on a booted node).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.artifacts.chroot import BUILD, ROOT, Chroot
from tests.artifacts.conftest import field
from tests.artifacts.node import CALLS, SYSTEMCTL, make_proxmox_node, systemctl_calls

SUITES = ["bookworm", "trixie"]
UNIT = "lib/systemd/system/flexplane-agent.service"
DROPIN = "etc/systemd/system/flexplane-agent.service.d/bootstrap.conf"
# systemd-analyze security's score of the packaged unit must stay under it ("OK"; the unit argues the rest).
MAX_EXPOSURE = 5.0
# The whole unit bootstraps before the drop-in wrote, which shadowed the package's.
RELEASE_START = (
    "ExecStart=/opt/flexplane-agent/venv/bin/python3 /opt/flexplane-agent/current/flexplane-agent.pyz "
    "serve --config /etc/flexplane/agent.toml"
)
LEGACY_UNIT = f"""# Written by flexplane-agent bootstrap; run it again rather than editing this file.
[Unit]
Description=flex.plane agent (control plane access to this Proxmox node)

[Service]
Type=simple
{RELEASE_START}
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""
ORCHESTRATOR_SIDE = (
    "django",
    "graphene",
    "channels",
    "uvicorn",
    "kubernetes",
    "orchestrator",
    "portal",
    "devstack",
    "mozilla_django_oidc",
)


def contents(deb: Path) -> list[str]:
    listing = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True)
    return [line.split()[5].removeprefix("./").split(" -> ")[0] for line in listing.stdout.splitlines()]


def test_the_package_is_lintian_clean_at_error_level(deb: Path) -> None:
    done = subprocess.run(
        ["lintian", "--fail-on", "error", "--display-level", ">=error", str(deb)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_package_is_named_and_versioned_as_debian_expects(deb: Path) -> None:
    version = field(deb, "Version")
    assert deb.name == f"flexplane-agent_{version}_amd64.deb"
    assert re.fullmatch(r"\d+\.\d+\.\d+\+(git\d+\.[0-9a-f]+(\.dirty)?|nogit)(~older)?", version), version
    assert field(deb, "Architecture") == "amd64"
    depends = field(deb, "Depends")
    assert "python3 (>= 3.11~)" in depends
    assert "wireguard-tools" in depends, "the mesh runs wg"


def test_a_build_from_a_tree_with_changes_is_stamped_dirty() -> None:
    build_deb = [sys.executable, str(ROOT / "packaging" / "build_deb.py"), "--print-version"]
    version = subprocess.run(build_deb, capture_output=True, text=True, check=True).stdout.strip()
    changes = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True, check=True
    ).stdout

    assert version.endswith(".dirty") == bool(changes.strip()), (version, changes[:500])


def test_the_package_carries_the_agent_and_nothing_of_the_orchestrator(deb: Path) -> None:
    files = contents(deb)
    for python in ("3.11", "3.13"):
        site = f"opt/flexplane-agent/venv/lib/python{python}/site-packages/"
        assert f"{site}agent/__main__.py" in files
        assert f"{site}agentclient/pool.py" in files
        assert any(name.startswith(f"{site}grpc/") for name in files)
        found = {name.removeprefix(site).split("/")[0] for name in files if name.startswith(site)}
        assert not found & set(ORCHESTRATOR_SIDE), found & set(ORCHESTRATOR_SIDE)
    assert "usr/bin/flexplane-agent" in files
    assert UNIT in files
    assert "opt/flexplane-agent/venv/PACKAGE_VERSION" in files
    assert not any(name.startswith("etc/") for name in files), "no conffile: bootstrap writes /etc/flexplane"


@pytest.fixture(scope="module", params=SUITES)
def plain_node(request: pytest.FixtureRequest, deb: Path) -> Iterator[tuple[Chroot, str]]:
    """A machine of the suite without Proxmox, booted with systemd (the recording systemctl), and
    the package installed there: the root, and what the installation said. Shared by the tests below
    that only look; the last of them adds systemd itself."""
    root = Chroot.copy_of(request.param, BUILD / "scratch" / f"{request.param}-plain-node")
    try:
        (root.path / "run" / "systemd" / "system").mkdir(parents=True)
        root.put("/usr/bin/systemctl", SYSTEMCTL, 0o755)
        yield root, root.install(deb)
    finally:
        root.remove()


def test_it_installs_on_a_node_without_proxmox_says_so_and_starts_nothing(
    plain_node: tuple[Chroot, str],
) -> None:
    root, output = plain_node

    assert "this is not a Proxmox VE node" in output
    assert "the agent is installed but not started" in output
    assert systemctl_calls(root) == []
    assert not (root.path / "etc/systemd/system/multi-user.target.wants/flexplane-agent.service").exists()


def test_the_installed_command_runs_on_the_releases_own_python(
    deb: Path, plain_node: tuple[Chroot, str]
) -> None:
    fresh_root, _output = plain_node

    assert "serve the control plane" in fresh_root.run("flexplane-agent --help").stdout
    assert "--orchestrator" in fresh_root.run("flexplane-agent bootstrap --help").stdout
    # What the agent reports as its package's version (GetInfo), read by the package's own Python.
    reported = fresh_root.run(
        "/opt/flexplane-agent/venv/bin/python3 -c 'from agent.status import AgentStatus; "
        'print(AgentStatus().to_proto(version="", node="", zone="", identity="").package_version)\''
    ).stdout.strip()
    assert reported == field(deb, "Version")
    # The venv's libraries import on this release's python3 and nothing of the orchestrator is there.
    probe = fresh_root.run(
        "/opt/flexplane-agent/venv/bin/python3 -c 'import sys, grpc, cryptography, aiohttp, agent.server; "
        'import importlib.util as u; print(sys.version_info[:2], u.find_spec("django"))\''
    ).stdout
    assert "None" in probe
    assert fresh_root.run("command -v wg && command -v ip").returncode == 0, "the mesh's tools"
    assert ("(3, 11)" if fresh_root.suite == "bookworm" else "(3, 13)") in probe


def test_a_signed_release_installs_over_the_package_and_runs_on_its_python(
    deb: Path, plain_node: tuple[Chroot, str], tmp_path: Path
) -> None:
    """Self-update on top of the package: a release (a zipapp of this checkout's agent) is verified and
    installed by the package's own command, runs on the package's venv, and reports both versions."""
    root, _output = plain_node
    agent = [sys.executable, "-m", "agent", "release"]
    key, public = tmp_path / "release.key", tmp_path / "release.pub"
    subprocess.run([*agent, "keygen", "--private", str(key), "--public", str(public)], check=True)
    out = root.path / "tmp" / "release"
    subprocess.run(
        [*agent, "build", "--version", "99.0.1", "--key", str(key), "--out", str(out), "--source", str(ROOT)],
        check=True,
        capture_output=True,
    )
    (root.path / "tmp" / "release.pub").write_bytes(public.read_bytes())

    root.run(
        "flexplane-agent release install --artifact /tmp/release/flexplane-agent-99.0.1.pyz "
        "--manifest /tmp/release/flexplane-agent-99.0.1.release.json --public-key /tmp/release.pub "
        "--install-dir /opt/flexplane-agent"
    )
    release = "/opt/flexplane-agent/current/flexplane-agent.pyz"

    assert "99.0.1" in root.run(f"/opt/flexplane-agent/venv/bin/python3 {release} --version").stdout
    versions = root.run(
        "/opt/flexplane-agent/venv/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); "
        f"import agent, agent.status; print(agent.__version__, agent.status.package_version())' {release}"
    ).stdout.split()
    assert versions == ["99.0.1", field(deb, "Version")]


def test_systemd_analyze_verifies_the_installed_unit(plain_node: tuple[Chroot, str]) -> None:
    """On the release's own systemd (every Proxmox node has it; the minimal root gets it now, which
    replaces the recording systemctl: this test comes last of those sharing the root)."""
    fresh_root, _output = plain_node
    fresh_root.run("apt-get install -y -q --no-install-recommends systemd")

    done = fresh_root.run(f"systemd-analyze verify --man=no /{UNIT} 2>&1", check=False)
    security = fresh_root.run(f"systemd-analyze security --offline=true --no-pager /{UNIT}").stdout

    assert done.returncode == 0, done.stdout
    assert "flexplane-agent" not in done.stdout, done.stdout
    exposure = re.search(r"Overall exposure level for flexplane-agent.service: (\d+\.\d)", security)
    assert exposure is not None, security
    assert float(exposure.group(1)) < MAX_EXPOSURE, security


@pytest.mark.parametrize("fresh_root", SUITES, indirect=True)
def test_on_an_unenrolled_proxmox_node_the_package_never_starts_the_agent(
    deb: Path, fresh_root: Chroot
) -> None:
    make_proxmox_node(fresh_root, enrolled=False)

    output = fresh_root.install(deb)

    assert "this node is not enrolled yet" in output
    assert "flexplane-agent bootstrap" in output
    assert systemctl_calls(fresh_root) == []


@pytest.mark.parametrize("fresh_root", SUITES, indirect=True)
def test_an_upgrade_keeps_the_enrollment_and_restarts_only_a_running_agent_and_purge_removes_it(
    deb: Path, older_deb: Path, fresh_root: Chroot
) -> None:
    make_proxmox_node(fresh_root, enrolled=True)
    fresh_root.install(older_deb)
    assert systemctl_calls(fresh_root) == ["enable --now flexplane-agent.service"]
    (fresh_root.path / CALLS.lstrip("/")).unlink()
    releases = fresh_root.path / "opt/flexplane-agent/versions/0.1.0"
    releases.mkdir(parents=True)  # what the self-update installs beside the package
    (releases / "flexplane-agent.pyz").write_bytes(b"PK")
    fresh_root.put("/etc/systemd/system/flexplane-agent.service", LEGACY_UNIT)

    fresh_root.install(deb)

    assert fresh_root.run("dpkg-query -W -f '${Version}' flexplane-agent").stdout == field(deb, "Version")
    assert systemctl_calls(fresh_root)[0] == "try-restart flexplane-agent.service"
    assert (
        (fresh_root.path / "etc/flexplane/agent.toml")
        .read_text(encoding="utf-8")
        .startswith('zone = "zone-a"')
    )
    assert (releases / "flexplane-agent.pyz").exists()
    # An earlier bootstrap's whole unit became the drop-in: the package's unit, its sandbox, runs now.
    assert not (fresh_root.path / "etc/systemd/system/flexplane-agent.service").exists()
    dropin = (fresh_root.path / DROPIN).read_text(encoding="utf-8")
    assert f"[Service]\nExecStart=\n{RELEASE_START}\n" in dropin

    fresh_root.run("apt-get remove -y -q flexplane-agent")
    assert "disable --now flexplane-agent.service" in systemctl_calls(fresh_root)
    assert (fresh_root.path / "etc/flexplane/agent.toml").exists(), "removal keeps the enrollment"
    assert not (fresh_root.path / "opt/flexplane-agent/venv").exists()

    fresh_root.run("apt-get purge -y -q flexplane-agent")
    assert not (fresh_root.path / "etc/flexplane").exists()
    assert not (fresh_root.path / DROPIN).parent.exists()
    assert not (fresh_root.path / "opt/flexplane-agent").exists()
    assert fresh_root.run("dpkg -s flexplane-agent", check=False).returncode != 0
