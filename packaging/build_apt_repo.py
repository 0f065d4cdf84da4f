#!/usr/bin/env python3
"""``make apt-repo``: a signed apt repository of the agent's packages, which nodes upgrade from with apt.

    python3 packaging/build_apt_repo.py --repo DIR --signing-key KEY [--deb FILE ...] [--suite stable]

Each ``--deb`` joins the repository's pool (``pool/main/f/flexplane-agent/``), where the packages
published before stay: apt installs the newest, and a node can still be pinned to an older one. Then the
indices are made anew from the whole pool with Debian's ``apt-ftparchive`` (``dists/<suite>/main/
binary-amd64/Packages`` and ``Packages.gz``, and the suite's ``Release`` with their checksums) and signed
with ``gpg`` by ``KEY`` (a key id or fingerprint in ``GNUPGHOME``'s keyring): ``InRelease`` (the Release
clear-signed) and ``Release.gpg`` (detached), as apt reads either. The signing key's public half is
written beside them, ``flexplane-archive-keyring.gpg``, for the nodes' ``Signed-By``.

The folder is static: any web server serves it (docs/install.md, "Upgrades through apt"). Nothing is
written in place: each index is made beside its final name and renamed over it, so a server never hands
out a Release whose Packages are half written.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "flexplane-agent"
COMPONENT = "main"
ARCHITECTURES = ("amd64",)
ORIGIN = "flex.plane"
KEYRING = "flexplane-archive-keyring.gpg"


class RepoError(Exception):
    """What stops the build, said in one line."""


def run(command: list[str], *, cwd: Path | None = None) -> bytes:
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False)  # noqa: S603 - apt-ftparchive, gpg
    if done.returncode != 0:
        raise RepoError(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)


def add_to_pool(repo: Path, deb: Path) -> Path:
    """The package copied into the pool under its own file name (a name already there is the same build:
    replaced, as a rebuild of one version is)."""
    if not deb.is_file():
        raise RepoError(f"no package at {deb}")
    pool = repo / "pool" / COMPONENT / PACKAGE[0] / PACKAGE
    pool.mkdir(parents=True, exist_ok=True)
    target = pool / deb.name
    shutil.copyfile(deb, target.with_name(f".{deb.name}.partial"))
    target.with_name(f".{deb.name}.partial").replace(target)
    return target


def write_indices(repo: Path, suite: str) -> Path:
    """Packages (plain and gzip) of every architecture, then the suite's Release over them."""
    dists = repo / "dists" / suite
    for architecture in ARCHITECTURES:
        packages = run(["apt-ftparchive", "--arch", architecture, "packages", "pool"], cwd=repo)
        folder = dists / COMPONENT / f"binary-{architecture}"
        write_atomically(folder / "Packages", packages)
        write_atomically(folder / "Packages.gz", gzip.compress(packages, mtime=0))
    fields = {
        "Origin": ORIGIN,
        "Label": ORIGIN,
        "Suite": suite,
        "Codename": suite,
        "Components": COMPONENT,
        "Architectures": " ".join(ARCHITECTURES),
    }
    options = [
        part for name, value in fields.items() for part in ("-o", f"APT::FTPArchive::Release::{name}={value}")
    ]
    release = run(["apt-ftparchive", *options, "release", "."], cwd=dists)
    write_atomically(dists / "Release", release)
    return dists


def sign(dists: Path, key: str) -> None:
    """InRelease and Release.gpg by ``key``; a key gpg cannot sign with is named."""
    release = dists / "Release"
    gpg = ["gpg", "--batch", "--yes", "--local-user", key, "--digest-algo", "SHA512"]
    write_atomically(dists / "InRelease", run([*gpg, "--clearsign", "--output", "-", str(release)]))
    write_atomically(
        dists / "Release.gpg", run([*gpg, "--armor", "--detach-sign", "--output", "-", str(release)])
    )


def export_public_key(repo: Path, key: str) -> Path:
    public = run(["gpg", "--batch", "--export", key])
    if not public:
        raise RepoError(
            f"gpg has no public key {key!r} (GNUPGHOME={os.environ.get('GNUPGHOME', '~/.gnupg')})"
        )
    target = repo / KEYRING
    write_atomically(target, public)
    return target


def build(repo: Path, debs: list[Path], key: str, suite: str) -> Path:
    """The repository in ``repo`` with ``debs`` added, its indices made and signed; its Release's path."""
    for deb in debs:
        add_to_pool(repo, deb)
    if not any((repo / "pool").rglob("*.deb")):
        raise RepoError(f"no package in {repo / 'pool'}: give one with --deb")
    export_public_key(repo, key)
    dists = write_indices(repo, suite)
    sign(dists, key)
    return dists / "Release"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build or extend a signed apt repository of the agent.")
    parser.add_argument("--repo", type=Path, required=True, help="The repository's folder (made if absent).")
    parser.add_argument("--deb", type=Path, action="append", default=[], help="A package to publish.")
    parser.add_argument("--signing-key", required=True, help="The gpg key (id or fingerprint) that signs.")
    parser.add_argument("--suite", default="stable", help="The suite nodes name in their sources.")
    args = parser.parse_args(argv)
    try:
        release = build(args.repo, args.deb, args.signing_key, args.suite)
    except RepoError as error:
        print(f"build_apt_repo: {error}", file=sys.stderr)
        return 1
    print(release)
    return 0


if __name__ == "__main__":
    sys.exit(main())
