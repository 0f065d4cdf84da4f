"""What tenant-cluster tests share: the CRDs the management cluster serves, installed in the world's
emulator as ``clusterctl init`` and the providers' chart would have (idempotent: ``kubectl apply``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from devstack.kube.crds import CLUSTER_API_CORE_CRDS, ScalePaths, custom_resource_definition
from devstack.world import World
from orchestrator.models.clusters import (
    FLEX_CONTROL_PLANE,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE,
    PROXMOX_MACHINE_TEMPLATE,
)

CHART_CRDS = Path(__file__).resolve().parents[2] / "charts" / "providers" / "crds"


def our_crds() -> list[dict[str, Any]]:
    """The providers' CRDs from their chart (their source of truth); permissive ones while it has none."""
    found = (
        [yaml.safe_load(p.read_text()) for p in sorted(CHART_CRDS.glob("*.yaml"))]
        if CHART_CRDS.is_dir()
        else []
    )
    if found:
        return found
    label = {"cluster.x-k8s.io/v1beta2": "v1alpha1"}
    scale = ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")
    return [
        custom_resource_definition(r.group, r.kind, r.plural, versions=(r.version,), labels=label)
        for r in (PROXMOX_CLUSTER, PROXMOX_MACHINE, PROXMOX_MACHINE_TEMPLATE)
    ] + [
        custom_resource_definition(
            FLEX_CONTROL_PLANE.group,
            FLEX_CONTROL_PLANE.kind,
            FLEX_CONTROL_PLANE.plural,
            versions=(FLEX_CONTROL_PLANE.version,),
            labels=label,
            scale=scale,
        )
    ]


def install_crds(world: World) -> None:
    world.kube.install_crds([*CLUSTER_API_CORE_CRDS, *our_crds()])
