#!/usr/bin/env python3
"""``make pin-images``: the digest of every third-party image flex.plane runs, asked of its registry once and
written into the image lock, which the image ships and the providers pin with (providers/images.py).

    python3 packaging/pin_images.py [--kubernetes v1.35.0,...] [--mirror host[:port][/path] [--ca-file F]]
                                    [--username U --password-file F [--credentials-for HOST]]
                                    [--only REF,...] [--prune] [--lock F] [--values F] [--list]

Each image packaging/images.py declares (``registry/path:tag``) is resolved as a container runtime
resolves it: a HEAD of ``/v2/<path>/manifests/<tag>`` asking for the multi-arch index first (so the
digest is the index's, from which every node pulls its own platform's image), read from
``Docker-Content-Digest``, or a GET whose bytes are hashed where the registry names none; with the
anonymous bearer token each public registry's challenge names (ghcr.io, quay.io, Docker Hub; registry.k8s.io
redirects manifests to the registry that serves them). Docker Hub's ``docker.io`` is asked at
``registry-1.docker.io``, its official images under ``library/``. The client is the agent's
(agent/update/registry.py).

``--mirror`` asks a mirror instead, each image under its path there (``<mirror>/etcd:3.6.5-0``,
``<mirror>/library/postgres:17``), as FLEXPLANE_PROVIDERS_IMAGE_REGISTRY and the charts'
``global.imageRegistry`` pull them: an air-gapped site whose mirror was copied with ``crane copy`` or
``skopeo copy --all`` holds the very manifests, so the digests are the upstream ones; a mirror that holds
other bytes under a tag gets the lock of what it holds. ``--ca-file`` trusts its CA; ``--username`` and
``--password-file`` are basic credentials for it (or, without a mirror, for ``--credentials-for``).

The lock is written atomically, sorted, with when and from where it was resolved, only when a digest
changed; what changed is printed. Zitadel's and PostgreSQL's digests are written into the identity
chart's values.yaml (its two ``digest:`` lines, nothing else of the file). An image that could not be
resolved is named on stderr and keeps its old entry (or stays a tag), and the command exits 1.
Entries of images no longer declared are kept unless ``--prune``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))

from images import IDENTITY_VALUES, KUBERNETES_VERSIONS, chart_digests, declared, lookup  # noqa: E402

from agent.certs import write_atomically  # noqa: E402
from agent.update.registry import (  # noqa: E402
    Access,
    Client,
    ManifestUnknown,
    NotAnImage,
    RegistryUnavailable,
    Repository,
    Timeouts,
)
from providers.images import LOCK, ImageLock  # noqa: E402

DOCKER_HUB = "docker.io"
# Where Docker Hub's registry API answers (docker.io itself serves a web site).
DOCKER_HUB_API = "registry-1.docker.io"
UPSTREAM = "each image's own registry"
ABOUT = (
    "The digests of the third-party images flex.plane runs, by reference as published (registry/path:tag): "
    "written by make pin-images (packaging/pin_images.py), read by the providers (providers/images.py); "
    "charts/identity/values.yaml carries Zitadel's and PostgreSQL's."
)
CONCURRENCY = 6
TIMEOUTS = Timeouts(connect=15.0, read=30.0)
VERSION = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+")
# A values.yaml line holding a key: its indentation, the key, and what follows the colon.
KEY_LINE = re.compile(r"^( *)([A-Za-z0-9_.-]+):(.*?)(\r?\n)?$")


@dataclass(frozen=True)
class ImageRef:
    """An image reference with a tag, as the lock keys it: ``registry/path:tag``."""

    registry: str
    path: str
    tag: str

    @classmethod
    def parse(cls, text: str) -> ImageRef:
        """``registry/path:tag``; a first segment with no dot or port (or ``localhost``) is a Docker Hub
        path, and Docker Hub's one-segment paths are its official images' (``library/``). No digest."""
        name, colon, tag = text.strip().rpartition(":")
        if not colon or "/" in tag or not tag or "@" in text:
            raise ValueError(f"{text!r} is not an image reference with a tag (registry/path:tag)")
        first, _, rest = name.partition("/")
        if not rest or ("." not in first and ":" not in first and first != "localhost"):
            first, rest = DOCKER_HUB, name
        if first in ("index.docker.io", DOCKER_HUB_API):
            first = DOCKER_HUB
        if first == DOCKER_HUB and "/" not in rest:
            rest = f"library/{rest}"
        Repository.parse(f"{first}/{rest}")  # the host's and the path's grammar
        return cls(first, rest, tag)

    def __str__(self) -> str:
        return f"{self.registry}/{self.path}:{self.tag}"

    def repository(self, mirror: str = "") -> Repository:
        """Where its tag is asked: the mirror under the same path, or its registry's API host."""
        if mirror:
            return Repository.parse(f"{mirror}/{self.path}")
        return Repository(registry_host(self.registry), self.path)


def registry_host(registry: str) -> str:
    """The host a registry's API answers at (Docker Hub's is not docker.io)."""
    return DOCKER_HUB_API if registry in (DOCKER_HUB, "index.docker.io") else registry


@dataclass(frozen=True)
class Resolved:
    ref: str
    where: str  # host/path asked
    digest: str = ""
    error: str = ""


async def resolve(
    refs: Iterable[str], mirror: str = "", access: Access | None = None, concurrency: int = CONCURRENCY
) -> list[Resolved]:
    """Each image's digest as its registry (or the mirror) names it now, a few at a time."""
    limit = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession() as session:

        async def one(ref: str) -> Resolved:
            image = ImageRef.parse(ref)
            repository = image.repository(mirror)
            async with limit:
                try:
                    client = Client(session, repository, access, timeouts=TIMEOUTS)
                    return Resolved(ref, str(repository), digest=await client.tag_digest(image.tag))
                except (ManifestUnknown, NotAnImage, RegistryUnavailable) as exc:
                    return Resolved(ref, str(repository), error=str(exc))

        return list(await asyncio.gather(*(one(ref) for ref in refs)))


# ------------------------------------------------------------------------------------------- the lock


def lock_document(lock: ImageLock) -> bytes:
    """The lock's file: sorted, the digests under ``images``, when and from where under ``resolved``."""
    resolved = {"at": lock.resolved_at, "from": lock.resolved_from} if lock.resolved_at else None
    document = {"about": ABOUT, "images": dict(lock.digests), "resolved": resolved}
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def read_lock(path: Path) -> ImageLock:
    return ImageLock.read(path) if path.exists() else ImageLock()


def merged(
    old: ImageLock, results: list[Resolved], declared_refs: Iterable[str], prune: bool, source: str
) -> ImageLock:
    """The old lock with what was resolved; what failed keeps its old entry; ``prune`` drops the entries of
    images no longer declared. The header names this run only when a digest changed."""
    digests = dict(old.digests)
    digests.update({r.ref: r.digest for r in results if r.digest})
    if prune:
        keep = set(declared_refs)
        digests = {ref: digest for ref, digest in digests.items() if ref in keep}
    if digests == dict(old.digests):
        return old
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return ImageLock(dict(sorted(digests.items())), now, source)


def changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """What changed, one line each: ``+`` a new pin, ``~`` a digest that moved, ``-`` one pruned."""
    lines = []
    for ref in sorted({*old, *new}):
        before, after = old.get(ref), new.get(ref)
        if before == after:
            continue
        if before is None:
            lines.append(f"+ {ref} {after}")
        elif after is None:
            lines.append(f"- {ref} {before}")
        else:
            lines.append(f"~ {ref} {before} -> {after}")
    return lines


# ------------------------------------------------------------------------------------ the chart's values


def set_scalar(text: str, path: tuple[str, ...], value: str) -> str:
    """values.yaml's text with the scalar at ``path`` set to ``value`` (double-quoted): that one line
    rewritten, its indentation and any comment after the value kept; every other byte as it was."""
    lines = text.splitlines(keepends=True)
    parents: list[tuple[int, str]] = []
    for number, line in enumerate(lines):
        match = KEY_LINE.match(line)
        if line.lstrip().startswith("#") or match is None:
            continue
        indent, key, rest, newline = match.group(1), match.group(2), match.group(3), match.group(4) or ""
        while parents and parents[-1][0] >= len(indent):
            parents.pop()
        parents.append((len(indent), key))
        if tuple(k for _, k in parents) == path:
            comment = re.search(r"\s+#.*$", rest)
            lines[number] = f'{indent}{key}: "{value}"{comment.group(0) if comment else ""}{newline}'
            return "".join(lines)
    raise ValueError(f"{'.'.join(path)} is not a line of its own in the values")


def write_chart_digests(values_path: Path, digests: Mapping[str, str]) -> list[str]:
    """The identity chart's digest lines set to the lock's (empty for an image it does not hold); the keys
    changed. The file is checked to parse to the same values but those."""
    text = values_path.read_text(encoding="utf-8")
    before = yaml.safe_load(text)
    wanted = {path: digests.get(ref, "") for path, ref in chart_digests(values_path).items()}
    changed = [path for path, digest in wanted.items() if lookup(before, path) != digest]
    if not changed:
        return []
    for path in changed:
        text = set_scalar(text, path, wanted[path])
    after = yaml.safe_load(text)
    for path in changed:
        node = before
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = wanted[path]
    if after != before:
        raise ValueError(f"rewriting {values_path}'s digests would change more than them")
    write_atomically(values_path, text.encode("utf-8"), values_path.stat().st_mode & 0o777)
    return [".".join(path) for path in changed]


# ------------------------------------------------------------------------------------------- the command


def _versions(raw: str) -> list[str]:
    versions = [v.strip() for v in raw.split(",") if v.strip()]
    for version in versions:
        if not VERSION.fullmatch(version):
            raise argparse.ArgumentTypeError(f"{version!r} is not a Kubernetes version (v1.34.2)")
    return versions


def _mirror(raw: str) -> str:
    mirror = raw.strip().rstrip("/")
    try:
        Repository.parse(f"{mirror}/probe")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a registry, host[:port][/path]") from None
    return mirror


def _refs(raw: str) -> list[str]:
    try:
        return [str(ImageRef.parse(ref)) for ref in raw.split(",") if ref.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument(
        "--kubernetes", type=_versions, default=[], help="more Kubernetes versions, comma-separated"
    )
    p.add_argument("--mirror", type=_mirror, default=None, help="resolve every image at host[:port][/path]")
    p.add_argument("--ca-file", type=Path, help="a CA (PEM) the mirror's certificate is issued by")
    p.add_argument("--username", default="", help="basic credentials' user, for the mirror")
    p.add_argument("--password-file", type=Path, help="a file holding the password")
    p.add_argument(
        "--credentials-for", default="", help="the registry the credentials are for (default: the mirror)"
    )
    p.add_argument(
        "--only", type=_refs, default=[], help="resolve only these declared images, comma-separated"
    )
    p.add_argument("--prune", action="store_true", help="drop the entries of images no longer declared")
    p.add_argument("--lock", type=Path, default=LOCK, help=f"the lock (default {LOCK.relative_to(ROOT)})")
    p.add_argument("--values", type=Path, default=IDENTITY_VALUES, help="the identity chart's values.yaml")
    p.add_argument("--list", action="store_true", help="print the declared images and exit")
    return p


def access_of(args: argparse.Namespace, p: argparse.ArgumentParser) -> Access | None:
    """The credentials and CA, for the registry they are for."""
    host = registry_host(args.credentials_for) if args.credentials_for else args.mirror.partition("/")[0]
    if bool(args.username) != bool(args.password_file):
        p.error("--username and --password-file go together")
    if args.username and not host:
        p.error("credentials need --mirror or --credentials-for: the registry they are for")
    ca = args.ca_file.read_text(encoding="utf-8") if args.ca_file else ""
    password = args.password_file.read_text(encoding="utf-8").strip() if args.password_file else ""
    if not (args.username or ca):
        return None
    return Access(host, args.username, password, ca)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    args.mirror = args.mirror or ""
    versions = sorted({*KUBERNETES_VERSIONS, *args.kubernetes})
    every = declared(versions, args.values)
    if args.list:
        print("\n".join(every))
        return 0
    unknown = sorted(set(args.only) - set(every))
    if unknown:
        p.error(f"not declared (packaging/images.py): {', '.join(unknown)}")
    access = access_of(args, p)
    wanted = args.only or every
    try:
        old = read_lock(args.lock)
    except ValueError as exc:
        print(f"pin-images: {exc}", file=sys.stderr)
        return 2
    results = asyncio.run(resolve(wanted, args.mirror, access))
    lock = merged(old, results, every, args.prune, args.mirror or UPSTREAM)
    if lock is not old:
        write_atomically(args.lock, lock_document(lock), 0o644)
    for line in changes(old.digests, lock.digests):
        print(line)
    rewritten = write_chart_digests(args.values, lock.digests)
    if rewritten:
        print(f"{args.values}: {', '.join(rewritten)}")
    failed = [r for r in results if r.error]
    pinned = len(results) - len(failed)
    print(f"pin-images: {pinned} of {len(results)} images resolved at {args.mirror or UPSTREAM}")
    for result in failed:
        kept = "keeps its old digest" if result.ref in lock.digests else "stays unpinned"
        print(
            f"pin-images: could not resolve {result.ref} ({result.where}): {result.error}; it {kept}",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
