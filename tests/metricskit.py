"""Reading Prometheus's text exposition in tests."""

from __future__ import annotations

import re

_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def sample(text: str, name: str, **labels: str) -> float:
    """The sum of the samples name{...} whose labels include ``labels``; 0 when there is none."""
    total = 0.0
    for line in text.splitlines():
        match = _SAMPLE.fullmatch(line)
        if match is None or match.group(1) != name:
            continue
        found = dict(_LABEL.findall(match.group(2) or ""))
        if all(found.get(key) == value for key, value in labels.items()):
            total += float(match.group(3))
    return total
