"""The digests of the third-party images flex.plane runs, pinned: the lock ``images.lock.json`` beside this
module, shipped in the package (and so in the image), read once per process.

The lock maps each image's reference as published, ``registry/path:tag`` (``registry.k8s.io/etcd:3.6.5-0``,
``quay.io/cilium/cilium:v1.19.3``, ``docker.io/library/postgres:17``), to the digest the tag named when
``make pin-images`` (packaging/pin_images.py) asked its registry: the multi-arch index's where there is
one, so each node still pulls its own platform's image. The providers render such an image as
``<ref>@sha256:…`` (:meth:`ImageLock.pin`), which a container runtime pulls by digest alone: a tag moved
upstream, or on a mirror, changes nothing that runs. An image the lock does not name (a Kubernetes
version pinned by no one yet, flex.plane's own image, whose tag is the release) stays a tag.

With a moved registry (FLEXPLANE_PROVIDERS_IMAGE_REGISTRY) the same digest follows the mirror's reference:
a mirror copied with ``crane copy`` or ``skopeo copy --all`` holds the very manifests, bytes for bytes,
so the digests are the upstream ones (``skopeo copy`` without ``--all`` copies one platform's image, a
manifest of another digest, and such a pull then fails: copy with ``--all``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

LOCK = Path(__file__).with_name("images.lock.json")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# registry/path:tag: the registry a host with a dot or a port (or localhost), the path the distribution
# spec's, the tag its grammar's; no digest.
REFERENCE = re.compile(
    r"(?:[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::[0-9]+)?|[a-z0-9-]+:[0-9]+|localhost)"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
)


@dataclass(frozen=True)
class ImageLock:
    """A lock's digests by reference, and when and from where they were resolved (empty when never)."""

    digests: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    resolved_at: str = ""
    resolved_from: str = ""

    @classmethod
    def parse(cls, document: Any, source: str = "the image lock") -> ImageLock:
        """A lock's JSON document, checked; ValueError naming the first thing wrong."""
        if not isinstance(document, dict) or not isinstance(document.get("images"), dict):
            raise ValueError(f"{source} has no images object")
        digests: dict[str, str] = {}
        for ref, digest in document["images"].items():
            if not REFERENCE.fullmatch(ref):
                raise ValueError(f"{source}: {ref!r} is not an image reference (registry/path:tag)")
            if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
                raise ValueError(f"{source}: the digest of {ref} is not sha256:<64 hex digits>: {digest!r}")
            digests[ref] = digest
        resolved = document.get("resolved") or {}
        if not isinstance(resolved, dict):
            raise ValueError(f"{source}: resolved must be an object (at, from)")
        return cls(
            MappingProxyType(dict(sorted(digests.items()))),
            str(resolved.get("at") or ""),
            str(resolved.get("from") or ""),
        )

    @classmethod
    def read(cls, path: Path = LOCK) -> ImageLock:
        try:
            return cls.parse(json.loads(path.read_bytes()), str(path))
        except OSError as exc:
            raise ValueError(f"cannot read the image lock {path}: {exc.strerror or exc}") from None

    def pin(self, ref: str, pulled: str = "") -> str:
        """The image ``ref`` as it is pulled (``pulled``: its reference at a moved registry; ``ref`` itself
        by default), with ``@<digest>`` when the lock holds ``ref``'s digest."""
        where = pulled or ref
        digest = self.digests.get(ref)
        return f"{where}@{digest}" if digest else where


@functools.cache
def shipped() -> ImageLock:
    """The lock this package ships (read once; a malformed one fails the first render, loudly)."""
    return ImageLock.read(LOCK)
