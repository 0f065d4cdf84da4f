"""Agent releases: one signed file per version, and the layout a node keeps them in.

A release is a zipapp, ``flexplane-agent-<version>.pyz``, of the ``agent`` and ``agentclient``
packages (their sources, and their bytecode for the Python that built it), stamped with its
version (``agent/RELEASE``, which :data:`agent.__version__` prefers to the package metadata).
It carries no third-party code: it runs on the node's own Python, whose environment supplies the
packages the ``flexplane-agent`` distribution declares (``distributions/flexplane-agent``: grpcio,
aiohttp, cryptography, ...), installed on the node with it before the bootstrap.

Beside it, ``flexplane-agent-<version>.release.json`` is the signed manifest::

    {"manifest": "<base64 of the manifest's JSON bytes>", "signature": "<base64 Ed25519 signature of them>"}

The manifest is ``{"version", "sha256", "size", "url"}``, ``url`` being the artifact's address
relative to the channel (its file name). The signature covers the manifest's exact bytes, so
that nothing depends on how JSON is re-serialised. Only the release key's holder (the operator,
offline) signs; nodes verify with its public key (``release_public_key``).

On a node, under ``install_dir``::

    versions/<version>/flexplane-agent.pyz     the artifact
    versions/<version>/release.json            its signed manifest, as installed
    current -> versions/<version>              what the service runs
    previous -> versions/<version>             what a rollback returns to

This module is what a release is; :mod:`agent.update` (which imports it) fetches, verifies and
installs one on a node, and :mod:`agent.release_command` holds the operator's commands
(``flexplane-agent release keygen|build|install|push``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from packaging.version import InvalidVersion, Version

ARTIFACT = "flexplane-agent.pyz"
ENVELOPE = "release.json"
VERSIONS = "versions"
CURRENT = "current"
PREVIOUS = "previous"
# Inside the artifact: the version it carries.
STAMP = "agent/RELEASE"
# A release larger than this is refused before it is downloaded.
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
# A signed manifest file is a few hundred bytes; anything much larger is not one.
MAX_ENVELOPE_BYTES = 64 * 1024
PACKAGES = ("agent", "agentclient")
# Fixed zip timestamps: the same sources build the same bytes.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Versions name files and folders: PEP 440 in its normal form, without epochs.
_VERSION_CHARS = re.compile(r"[0-9A-Za-z.+-]{1,64}")
# The artifact's entry point. zipimport reopens the archive by its path for every module it
# loads: read through the ``current`` symlink, a module loaded after an update switched it would
# come from another release's file. So the imports go through the release's real path.
_MAIN = """import os
import sys

sys.path[0] = os.path.realpath(sys.path[0])

from agent.__main__ import main

raise SystemExit(main())
"""


class ReleaseRefused(Exception):
    """The release must not be installed: the message says why."""


class ReleaseError(Exception):
    """A release could not be built or installed (a problem of this machine, not of the release)."""


def artifact_name(version: str) -> str:
    return f"flexplane-agent-{version}.pyz"


def envelope_name(version: str) -> str:
    return f"flexplane-agent-{version}.release.json"


def check_version(version: str) -> Version:
    """The version parsed, if it is a PEP 440 version in normal form; ValueError otherwise."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise ValueError(f"{version!r} is not a version (PEP 440, e.g. 1.4.0)") from None
    if str(parsed) != version or not _VERSION_CHARS.fullmatch(version) or parsed.epoch:
        raise ValueError(f"{version!r} is not in normal form: write it as {str(parsed)!r} (no epoch)")
    return parsed


# ------------------------------------------------------------------------------------ manifests


@dataclass(frozen=True)
class Manifest:
    """What a signature vouches for: this version is the file of this size and digest."""

    version: str
    sha256: str
    size: int
    url: str

    def to_bytes(self) -> bytes:
        body = {"version": self.version, "sha256": self.sha256, "size": self.size, "url": self.url}
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        """Parse and check a manifest; ReleaseRefused naming the first problem."""
        try:
            body = json.loads(data)
        except ValueError:
            raise ReleaseRefused("the release manifest is not JSON") from None
        if not isinstance(body, dict):
            raise ReleaseRefused("the release manifest is not a JSON object")
        version, sha256, size, url = (body.get(k) for k in ("version", "sha256", "size", "url"))
        if not isinstance(version, str):
            raise ReleaseRefused("the release manifest names no version")
        try:
            check_version(version)
        except ValueError as exc:
            raise ReleaseRefused(f"the release manifest's version: {exc}") from None
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            raise ReleaseRefused("the release manifest's sha256 is not 64 lowercase hex digits")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= MAX_ARTIFACT_BYTES:
            raise ReleaseRefused(
                f"the release manifest's size {size!r} is not between 1 and {MAX_ARTIFACT_BYTES} bytes"
            )
        if not isinstance(url, str) or not url or len(url) > 2048:
            raise ReleaseRefused("the release manifest names no artifact url")
        return cls(version, sha256, size, url)


def sign(manifest: Manifest, key: Ed25519PrivateKey) -> bytes:
    """The signed manifest file's content."""
    payload = manifest.to_bytes()
    envelope = {
        "manifest": base64.b64encode(payload).decode(),
        "signature": base64.b64encode(key.sign(payload)).decode(),
    }
    return json.dumps(envelope, indent=2).encode() + b"\n"


def verify(envelope: Mapping[str, Any], key: Ed25519PublicKey) -> Manifest:
    """The manifest an envelope carries, if its signature is the release key's; ReleaseRefused otherwise."""
    encoded, signature = envelope.get("manifest"), envelope.get("signature")
    if not isinstance(encoded, str) or not isinstance(signature, str) or not signature:
        raise ReleaseRefused("the release is not signed (no manifest and signature)")
    try:
        payload = base64.b64decode(encoded, validate=True)
        raw_signature = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        raise ReleaseRefused("the release's manifest or signature is not base64") from None
    try:
        key.verify(raw_signature, payload)
    except InvalidSignature:
        raise ReleaseRefused(
            "the release's signature does not verify against release_public_key "
            "(signed by another key, or the manifest was altered)"
        ) from None
    return Manifest.from_bytes(payload)


def read_envelope(data: bytes) -> dict[str, Any]:
    """A signed manifest file's JSON object; ReleaseRefused if it is not one."""
    if len(data) > MAX_ENVELOPE_BYTES:
        raise ReleaseRefused(f"the signed manifest is larger than {MAX_ENVELOPE_BYTES} bytes")
    try:
        envelope = json.loads(data)
    except ValueError:
        raise ReleaseRefused("the signed manifest is not JSON") from None
    if not isinstance(envelope, dict):
        raise ReleaseRefused("the signed manifest is not a JSON object")
    return envelope


def check_artifact(path: Path, manifest: Manifest) -> None:
    """The file is the manifest's: its size, its digest, and the version stamped inside."""
    size = path.stat().st_size
    if size != manifest.size:
        raise ReleaseRefused(f"the artifact has {size} bytes, the signed manifest says {manifest.size}")
    digest = file_sha256(path)
    if digest != manifest.sha256:
        raise ReleaseRefused(
            f"the artifact's sha256 is {digest}, the signed manifest says {manifest.sha256}: "
            "tampered or corrupt"
        )
    stamped = stamped_version(path)
    if stamped != manifest.version:
        raise ReleaseRefused(
            f"the artifact carries version {stamped!r}, the manifest says {manifest.version}"
        )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def stamped_version(path: Path) -> str | None:
    """The version an artifact carries, or None if it is not an agent release."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.read(STAMP).decode().strip()
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, OSError):
        return None


# ----------------------------------------------------------------------------------------- keys


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except OSError as exc:
        raise ReleaseError(f"cannot read the signing key {path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise ReleaseError(f"{path} is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ReleaseError(f"{path} is not an Ed25519 key")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReleaseError(f"cannot read the release public key {path}: {exc.strerror or exc}") from None
    return public_key_from_pem(data, str(path))


def public_key_from_pem(data: bytes, source: str) -> Ed25519PublicKey:
    """The Ed25519 public key in PEM data; ``source`` names where it came from, for the error."""
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise ReleaseError(f"{source} is not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ReleaseError(f"{source} is not an Ed25519 public key")
    return key


def generate_keys(private_path: Path, public_path: Path) -> None:
    """A new release signing key (written 0600) and its public key, for the nodes' release_public_key."""
    if private_path.exists():
        raise ReleaseError(f"{private_path} exists: a signing key is never overwritten")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    private_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private_pem)
    public_path.parent.mkdir(parents=True, exist_ok=True)
    public_path.write_bytes(public_pem)


# ---------------------------------------------------------------------------------------- build


@dataclass(frozen=True)
class BuiltRelease:
    artifact: Path
    envelope: Path
    manifest: Manifest


def default_source() -> Path:
    """The folder holding the running ``agent`` package (a checkout or site-packages)."""
    source = Path(__file__).resolve().parent.parent
    if not (source / "agent").is_dir():
        raise ReleaseError("the agent does not run from a folder: give --source, a checkout to build from")
    return source


def _sources(source: Path) -> Iterator[tuple[str, Path]]:
    """Every Python file of the packages, as (name in the archive, path), sorted."""
    for package in PACKAGES:
        root = source / package
        if not (root / "__init__.py").is_file():
            raise ReleaseError(f"{root} is not a Python package")
        files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        for path in files:
            yield path.relative_to(source).as_posix(), path


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


# Compiles (name in the archive, path) pairs given as arguments into <scratch>/<index>.pyc.
_COMPILE = """
import py_compile, sys
scratch, pairs = sys.argv[1], sys.argv[2:]
for index, (name, path) in enumerate(zip(pairs[::2], pairs[1::2])):
    py_compile.compile(path, cfile=f"{scratch}/{index}.pyc", dfile=name, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
"""


def _bytecode(files: list[tuple[str, Path]], scratch: Path) -> list[bytes]:
    """The files compiled by this Python, each checked against its source's hash when loaded.

    zipimport cannot cache what it compiles: without these, an agent compiles every module of the
    release at each start. A node whose Python is another version ignores them (their magic number
    differs) and compiles the sources, as before. They are compiled in a fresh interpreter: marshal
    marks the objects it writes by their reference counts in the compiling process, so bytecode made
    in a process that has run other code depends on what it ran, and the same sources would not
    build the same bytes.
    """
    pairs = [str(part) for name, path in files for part in (name, path)]
    done = subprocess.run(  # noqa: S603 - this Python, no shell, the packages' own files
        [sys.executable, "-I", "-c", _COMPILE, str(scratch), *pairs],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ReleaseError(f"the sources do not compile: {done.stderr.strip()[-2000:]}")
    return [(scratch / f"{index}.pyc").read_bytes() for index in range(len(files))]


def build(version: str, key: Ed25519PrivateKey, out: Path, source: Path | None = None) -> BuiltRelease:
    """Build and sign the release of ``version`` into ``out`` from the packages under ``source``."""
    try:
        check_version(version)
    except ValueError as exc:
        raise ReleaseError(str(exc)) from None
    source = source or default_source()
    out.mkdir(parents=True, exist_ok=True)
    artifact = out / artifact_name(version)
    with tempfile.NamedTemporaryFile(dir=out, prefix=".build-", suffix=".pyz", delete=False) as handle:
        partial = Path(handle.name)
    try:
        with zipfile.ZipFile(partial, "w") as archive, tempfile.TemporaryDirectory() as scratch:
            _add(archive, "__main__.py", _MAIN.encode())
            files = [(name, path) for name, path in _sources(source) if name != STAMP]
            for (name, path), compiled in zip(files, _bytecode(files, Path(scratch)), strict=True):
                _add(archive, name, path.read_bytes())
                _add(archive, name.removesuffix(".py") + ".pyc", compiled)
            _add(archive, STAMP, f"{version}\n".encode())
        partial.chmod(0o644)
        partial.replace(artifact)
    finally:
        partial.unlink(missing_ok=True)
    manifest = Manifest(version, file_sha256(artifact), artifact.stat().st_size, artifact.name)
    envelope = out / envelope_name(version)
    envelope.write_bytes(sign(manifest, key))
    return BuiltRelease(artifact, envelope, manifest)


# ------------------------------------------------------------------------------- installation


@dataclass(frozen=True)
class Installation:
    """The releases a node keeps under install_dir, and which one runs."""

    root: Path

    @property
    def versions(self) -> Path:
        return self.root / VERSIONS

    def artifact(self, version: str) -> Path:
        return self.versions / version / ARTIFACT

    def pointed(self, link: str) -> str | None:
        """The version ``current`` or ``previous`` points at, or None."""
        try:
            target = (self.root / link).readlink()
        except OSError:
            return None
        if target.parent.name != VERSIONS or not (self.versions / target.name).is_dir():
            return None
        return target.name

    def point(self, link: str, version: str | None) -> None:
        """Point ``current`` or ``previous`` at a version (None: remove it), atomically."""
        path = self.root / link
        if version is None:
            path.unlink(missing_ok=True)
            return
        staged = self.root / f".{link}.new"
        staged.unlink(missing_ok=True)
        staged.symlink_to(Path(VERSIONS) / version)
        staged.replace(path)

    def install(self, manifest: Manifest, artifact: Path, envelope: bytes) -> None:
        """Move a verified artifact (on this file system) into versions/<version>, with its manifest.

        A version already there with the same digest is kept as it is; one with other bytes is
        replaced by a rename, so that versions/<version> is never half-written.
        """
        self.versions.mkdir(parents=True, exist_ok=True)
        final = self.versions / manifest.version
        if (final / ARTIFACT).is_file() and file_sha256(final / ARTIFACT) == manifest.sha256:
            artifact.unlink(missing_ok=True)
            return
        staged = Path(tempfile.mkdtemp(dir=self.versions, prefix=f".{manifest.version}-"))
        retired = self.versions / f".{manifest.version}.retired"
        try:
            staged.chmod(0o755)
            (staged / ENVELOPE).write_bytes(envelope)
            artifact.replace(staged / ARTIFACT)
            (staged / ARTIFACT).chmod(0o644)
            if final.exists():
                shutil.rmtree(retired, ignore_errors=True)
                final.rename(retired)
            staged.rename(final)
        finally:
            shutil.rmtree(staged, ignore_errors=True)
            shutil.rmtree(retired, ignore_errors=True)

    def make_current(self, version: str) -> None:
        """Run ``version`` from now on; the one that ran before stays as ``previous``."""
        running = self.pointed(CURRENT)
        if running and running != version:
            self.point(PREVIOUS, running)
        self.point(CURRENT, version)

    def prune(self, keep: set[str]) -> list[str]:
        """Remove the versions not in keep (and not pointed at); the removed ones, sorted."""
        keep = keep | {v for v in (self.pointed(CURRENT), self.pointed(PREVIOUS)) if v}
        removed = []
        for folder in sorted(self.versions.iterdir()) if self.versions.is_dir() else []:
            if folder.name not in keep and not folder.name.startswith("."):
                shutil.rmtree(folder)
                removed.append(folder.name)
        return removed


def install_file(
    installation: Installation, artifact: Path, envelope_path: Path, key: Ed25519PublicKey
) -> Manifest:
    """Verify a release from files and make it current (the previous one stays as ``previous``)."""
    envelope = envelope_path.read_bytes()
    manifest = verify(read_envelope(envelope), key)
    installation.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=installation.root, prefix=".install-") as scratch:
        copy = Path(scratch) / ARTIFACT
        shutil.copyfile(artifact, copy)
        check_artifact(copy, manifest)
        installation.install(manifest, copy, envelope)
    installation.make_current(manifest.version)
    return manifest
