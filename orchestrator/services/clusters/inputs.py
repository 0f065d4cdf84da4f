"""What a cluster's create, scale and upgrade are given, and the rules each value is held to.

The limits: a cluster's name is one DNS label of at most 40 characters (the contract: every name
derived from it fits 63); a node pool's name at most 12 (``<cluster>-<pool>-<hash>`` fits 63); 1 to
10 node pools; 1 to 100 nodes per pool; 1 to 5 control-plane replicas (default 2); a network plugin
of ``NETWORK_PLUGINS`` (default cilium); the control plane's exposure of :func:`exposures` (default
shared where the installation has the shared address). Each bad value is
a ``ValidationFailed`` naming its input field, as the API spells it in snake_case
(``node_pools[1].count``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from orchestrator.errors import ValidationFailed
from orchestrator.models.clusters import (
    DEFAULT_NETWORK_PLUGIN,
    LOAD_BALANCER,
    NETWORK_PLUGINS,
    SHARED,
)

MAX_CLUSTER_NAME = 40
MAX_POOL_NAME = 12
MIN_NODES, MAX_NODES = 1, 100
MAX_NODE_POOLS = 10
MIN_CONTROL_PLANE, MAX_CONTROL_PLANE = 1, 5
DEFAULT_CONTROL_PLANE = 2

_LABEL = re.compile(r"[a-z]([a-z0-9-]*[a-z0-9])?")


@dataclass(frozen=True)
class NodePoolSpec:
    """One node pool as asked for (unvalidated)."""

    name: str
    compute_profile: str
    storage_profile: str
    count: int
    network: str | None = None


@dataclass(frozen=True)
class CreateCluster:
    """A cluster's create as asked for (unvalidated: ``create_cluster`` checks every field)."""

    name: str
    version: str
    network: str
    node_pools: tuple[NodePoolSpec, ...]
    control_plane_replicas: int | None = None
    network_plugin: str | None = None
    control_plane_exposure: str | None = None


def is_label(value: str) -> bool:
    """Whether ``value`` could name a cluster or a pool (anything else names nothing)."""
    return isinstance(value, str) and len(value) <= 63 and bool(_LABEL.fullmatch(value))


def validate_name(name: str, field: str = "name", longest: int = MAX_CLUSTER_NAME) -> str:
    if not isinstance(name, str) or len(name) > longest or not _LABEL.fullmatch(name):
        raise ValidationFailed(
            field,
            f"{field.rsplit('.', 1)[-1]} {str(name)[:60]!r} is not a DNS label of at most {longest} "
            "characters: lowercase letters, digits and '-', starting with a letter and not ending with '-'",
        )
    return name


def validate_count(count: int, field: str) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not MIN_NODES <= count <= MAX_NODES:
        raise ValidationFailed(field, f"a node pool has {MIN_NODES} to {MAX_NODES} nodes, not {count}")
    return count


def validate_control_plane(replicas: int | None) -> int:
    if replicas is None:
        return DEFAULT_CONTROL_PLANE
    if isinstance(replicas, bool) or not MIN_CONTROL_PLANE <= replicas <= MAX_CONTROL_PLANE:
        raise ValidationFailed(
            "control_plane.replicas",
            f"the control plane has {MIN_CONTROL_PLANE} to {MAX_CONTROL_PLANE} replicas, not {replicas}",
        )
    return replicas


def validate_network_plugin(plugin: str | None) -> str:
    """The cluster's network plugin: cilium unless asked, or calico; none installs nothing (the tenant
    brings one)."""
    if plugin is None:
        return DEFAULT_NETWORK_PLUGIN
    if plugin not in NETWORK_PLUGINS:
        raise ValidationFailed(
            "network_plugin",
            f"network plugin {str(plugin)[:40]!r} is not offered (offered: {', '.join(NETWORK_PLUGINS)})",
        )
    return plugin


def shared_port() -> int | None:
    """The shared control-plane address's port, where the installation has one
    (``FLEXPLANE_CONTROL_PLANE_SHARED_PORT``); None where it has not."""
    raw = str(settings.FLEXPLANE_CONTROL_PLANE_SHARED_PORT or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ImproperlyConfigured(f"FLEXPLANE_CONTROL_PLANE_SHARED_PORT must be a port, not {raw!r}")
    return int(raw)


def exposures() -> tuple[str, ...]:
    """How this installation's control planes may be reached, the default first: behind the shared
    address where there is one, else each by a load balancer of its own."""
    return (SHARED, LOAD_BALANCER) if shared_port() is not None else (LOAD_BALANCER,)


def validate_exposure(exposure: str | None) -> str:
    """``shared`` or ``loadBalancer`` (``exposures()``' first unless asked); ``shared`` only where the
    installation has the shared address."""
    offered = exposures()
    if exposure is None:
        return offered[0]
    if exposure not in offered:
        said = (
            "this installation has no shared control-plane address: each cluster's control plane gets a "
            "load balancer of its own"
            if exposure == SHARED
            else f"it is not offered (offered: {', '.join(offered)})"
        )
        raise ValidationFailed("control_plane.exposure", f"exposure {str(exposure)[:40]!r}: {said}")
    return exposure


def validate_pools(pools: tuple[NodePoolSpec, ...]) -> None:
    """The pools' names and counts (their profiles and networks are checked against the VDC)."""
    if not 1 <= len(pools) <= MAX_NODE_POOLS:
        raise ValidationFailed("node_pools", f"a cluster has 1 to {MAX_NODE_POOLS} node pools")
    seen: set[str] = set()
    for index, pool in enumerate(pools):
        validate_name(pool.name, f"node_pools[{index}].name", MAX_POOL_NAME)
        if pool.name in seen:
            raise ValidationFailed(f"node_pools[{index}].name", f"node pool {pool.name!r} is named twice")
        seen.add(pool.name)
        validate_count(pool.count, f"node_pools[{index}].count")
