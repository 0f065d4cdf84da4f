"""The providers' CustomResourceDefinitions, from their source of truth: ``charts/providers/crds/``.

The chart's templates include the same files; tests and the devstack install them from here
(``load_crds``), so what is tested is what is shipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CRDS_DIR = Path(__file__).resolve().parents[2] / "charts" / "providers" / "crds"
CRD_KIND = "CustomResourceDefinition"


def load_crds(directory: Path = CRDS_DIR) -> list[dict[str, Any]]:
    """Every CRD of ``directory``'s ``*.yaml`` files (one or more documents each), by file name."""
    crds: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == CRD_KIND:
                crds.append(document)
    return crds


def crd_name(crd: dict[str, Any]) -> str:
    """``<plural>.<group>``, as Cluster API requires a provider's CRDs to be named."""
    return str(crd["metadata"]["name"])
