"""What the chart tests share: a rendered chart's manifests, as the documents of its YAML templates."""

from __future__ import annotations

from typing import Any

import yaml

Manifest = dict[str, Any]


def manifests(templates: dict[str, str]) -> list[Manifest]:
    """Every document of the rendered YAML templates, in the templates' order (empty ones left out)."""
    return [
        doc
        for path, text in sorted(templates.items())
        if path.endswith((".yaml", ".yml"))
        for doc in yaml.safe_load_all(text)
        if doc
    ]
