"""The providers' settings, from ``FLEXPLANE_PROVIDERS_<NAME>`` in the environment.

Timings: production keeps the defaults; the devstack's world sets short ones (its stand-ins answer in
milliseconds). A value that is not a positive number is refused at start, not used.

``FLEXPLANE_PROVIDERS_IMAGE_REGISTRY``: the registry the hosted control planes' images come from
(``host[:port]``, optionally with a path prefix), for an air-gapped mirror; the providers chart sets it
from ``global.imageRegistry``. Only the registry moves: each image keeps its path and tag.
"""

from __future__ import annotations

import os

PREFIX = "FLEXPLANE_PROVIDERS_"


def seconds(name: str, default: float) -> float:
    """``FLEXPLANE_PROVIDERS_<name>`` in seconds (``default`` when unset or empty)."""
    return seconds_of(PREFIX + name, default)


def seconds_of(variable: str, default: float) -> float:
    """The environment variable ``variable`` in seconds, more than 0 (``default`` when unset or empty);
    ValueError naming it otherwise."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{variable} must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{variable} must be more than 0 seconds, not {raw!r}")
    return value


IMAGE_REGISTRY = "IMAGE_REGISTRY"


def image_registry(default: str) -> str:
    """``FLEXPLANE_PROVIDERS_IMAGE_REGISTRY`` without a trailing ``/`` (``default`` when unset or empty).

    A scheme, a digest, whitespace or an empty segment is refused: the value is put in front of image
    paths that carry their own tags, and a container runtime takes no ``https://``.
    """
    raw = os.environ.get(PREFIX + IMAGE_REGISTRY, "").strip().rstrip("/")
    if not raw:
        return default
    host = raw.split("/", 1)[0]
    if "://" in raw or "@" in raw or any(c.isspace() for c in raw) or not host or "//" in raw:
        raise ValueError(f"{PREFIX}{IMAGE_REGISTRY} must be a registry, host[:port][/path], not {raw!r}")
    return raw
