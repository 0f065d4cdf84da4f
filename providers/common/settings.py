"""The providers' timing settings, from ``FLEXPLANE_PROVIDERS_<NAME>`` in the environment.

Production keeps the defaults; the devstack's world sets short ones (its stand-ins answer in
milliseconds). A value that is not a positive number is refused at start, not used.
"""

from __future__ import annotations

import os

PREFIX = "FLEXPLANE_PROVIDERS_"


def seconds(name: str, default: float) -> float:
    """``FLEXPLANE_PROVIDERS_<name>`` in seconds (``default`` when unset or empty)."""
    raw = os.environ.get(PREFIX + name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{PREFIX}{name} must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{PREFIX}{name} must be more than 0 seconds, not {raw!r}")
    return value
