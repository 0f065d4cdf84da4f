"""Nodes install and upgrade the agent through apt (``make apt-repo``, packaging/build_apt_repo.py): the
repository is built from the packages under test, signed with a throwaway key, served over HTTP on
loopback, and a Debian root shaped as an enrolled Proxmox node adds it as docs/install.md says, installs
the older build, and upgrades to the newer one with ``apt-get upgrade``, keeping its enrollment. A
repository signed by a key the node does not trust is refused.
"""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.addresses import address
from tests.artifacts.chroot import BUILD, ROOT, Chroot
from tests.artifacts.conftest import field
from tests.artifacts.node import make_proxmox_node, systemctl_calls

BUILD_REPO = ROOT / "packaging" / "build_apt_repo.py"
# Third octet on this run's world subnet for the repository's web server (tests/addresses.py).
APT_SUITE = 231
KEYRING = "/usr/share/keyrings/flexplane-archive-keyring.gpg"
SOURCES = "/etc/apt/sources.list.d/flexplane.sources"


def make_key(home: Path, name: str) -> str:
    """A signing key without passphrase in the keyring at ``home``; its fingerprint."""
    home.mkdir(mode=0o700, parents=True)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]
    subprocess.run(
        [*gpg, "--quick-gen-key", f"{name} <archive@example.com>", "ed25519", "sign", "1d"],
        check=True,
        capture_output=True,
    )
    listed = subprocess.run(
        [*gpg, "--with-colons", "--list-keys"], capture_output=True, text=True, check=True
    )
    return next(line.split(":")[9] for line in listed.stdout.splitlines() if line.startswith("fpr:"))


def publish(repo: Path, home: Path, key: str, *debs: Path) -> None:
    """``make apt-repo``'s script, as the signing key's owner runs it."""
    command = [sys.executable, str(BUILD_REPO), "--repo", str(repo), "--signing-key", key]
    for deb in debs:
        command += ["--deb", str(deb)]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """The archive's signing key, and another one no node trusts."""
    scratch = tmp_path_factory.mktemp("gnupg")
    return {
        name: (scratch / name, make_key(scratch / name, f"flex.plane {name} archive"))
        for name in ("archive", "stranger")
    }


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """An empty folder for a repository, served over HTTP on loopback: (its path, its URL)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    handler = functools.partial(_Quiet, directory=str(repo))
    server = http.server.ThreadingHTTPServer((address(APT_SUITE, 1), 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield repo, f"http://{address(APT_SUITE, 1)}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def node(deb: Path) -> Iterator[Chroot]:
    """An enrolled Proxmox VE 9 node (trixie) without the package."""
    root = Chroot.copy_of("trixie", BUILD / "scratch" / "apt-node")
    try:
        make_proxmox_node(root, enrolled=True)
        yield root
    finally:
        root.remove()


def add_repository(node: Chroot, repo: Path, url: str) -> None:
    """What docs/install.md has the operator do on a node: the archive's key and a deb822 source."""
    keyring = node.path / KEYRING.lstrip("/")
    keyring.parent.mkdir(parents=True, exist_ok=True)
    keyring.write_bytes((repo / "flexplane-archive-keyring.gpg").read_bytes())
    node.put(
        SOURCES,
        f"Types: deb\nURIs: {url}\nSuites: stable\nComponents: main\nSigned-By: {KEYRING}\n",
    )


def installed_version(node: Chroot) -> str:
    return node.run("dpkg-query -W -f '${Version}' flexplane-agent").stdout


def test_a_node_installs_the_agent_from_the_signed_repository_and_upgrades_it_with_apt(
    deb: Path, older_deb: Path, keys: dict[str, tuple[Path, str]], served: tuple[Path, str], node: Chroot
) -> None:
    repo, url = served
    home, key = keys["archive"]
    publish(repo, home, key, older_deb)
    add_repository(node, repo, url)

    node.run("apt-get update -q && apt-get install -y -q --no-install-recommends flexplane-agent")
    assert installed_version(node) == field(older_deb, "Version")

    publish(repo, home, key, deb)
    node.run("apt-get update -q && apt-get upgrade -y -q")

    assert installed_version(node) == field(deb, "Version")
    assert "try-restart flexplane-agent.service" in systemctl_calls(node)
    config = (node.path / "etc/flexplane/agent.toml").read_text(encoding="utf-8")
    assert config.startswith('zone = "zone-a"'), "the upgrade keeps the enrollment"
    listed = node.run("apt-cache policy flexplane-agent").stdout
    assert field(older_deb, "Version") in listed, "the older build stays in the pool"


def test_a_repository_signed_by_a_key_the_node_does_not_trust_is_refused(
    deb: Path, keys: dict[str, tuple[Path, str]], served: tuple[Path, str], node: Chroot
) -> None:
    repo, url = served
    publish(repo, *keys["stranger"], deb)
    trusted = repo.parent / "trusted-keyring.gpg"
    trusted.write_bytes(
        subprocess.run(
            ["gpg", "--homedir", str(keys["archive"][0]), "--batch", "--export", keys["archive"][1]],
            capture_output=True,
            check=True,
        ).stdout
    )
    (repo / "flexplane-archive-keyring.gpg").write_bytes(trusted.read_bytes())  # the node's, not the signer's
    add_repository(node, repo, url)

    done = node.run("apt-get update -q", check=False)

    assert done.returncode != 0, done.stdout
    assert "NO_PUBKEY" in done.stdout or "is not signed" in done.stdout, done.stdout
    assert node.run("apt-get install -y -q flexplane-agent", check=False).returncode != 0
