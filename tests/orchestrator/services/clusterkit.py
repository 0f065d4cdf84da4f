"""What the tenant cluster services' tests share (``test_clusters``, ``test_clusters_lifecycle``): the
catalog's Kubernetes versions, the VDCs' default networks, the objects a cluster is made of in the
management cluster, and a create's spec.

No provider runs in these tests: where a test needs a cluster the providers would have made ready, it
writes the status and Secrets on the objects itself, as the providers would."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from kubernetes import client

from orchestrator.models.clusters import (
    CLUSTER_NAME_LABEL,
    VDC_LABEL,
    WRITTEN,
    Resource,
    namespace_of,
)
from orchestrator.services.clusters import CreateCluster, NodePoolSpec
from orchestrator.services.context import Context

VERSION, NEXT, FAR = "v1.33.4", "v1.34.2", "v1.36.0"
_names = itertools.count()


def listed(custom: client.CustomObjectsApi, r: Resource, vdc: str, selector: str = "") -> list[Any]:
    answer: Any = custom.list_namespaced_custom_object(
        r.group, r.version, namespace_of(vdc), r.plural, label_selector=selector
    )
    items: list[Any] = answer["items"]
    return items


def objects_in(custom: client.CustomObjectsApi, vdc: str, cluster: str | None = None) -> dict[str, list[Any]]:
    selector = VDC_LABEL if cluster is None else f"{CLUSTER_NAME_LABEL}={cluster}"
    return {r.kind: listed(custom, r, vdc, selector) for r in WRITTEN}


def written(custom: client.CustomObjectsApi, vdc: str) -> dict[str, set[str]]:
    """The names of the VDC's Cluster API objects, by kind: compared before and after a refused create, so
    that what another suite left in this world (a cluster it staged, being deleted) does not count."""
    return {
        kind: {item["metadata"]["name"] for item in items} for kind, items in objects_in(custom, vdc).items()
    }


def wipe(custom: client.CustomObjectsApi, vdc: str) -> None:
    for r in WRITTEN:
        for item in listed(custom, r, vdc):
            custom.delete_namespaced_custom_object(
                r.group, r.version, namespace_of(vdc), r.plural, item["metadata"]["name"]
            )


def alice(make_context: Callable[..., Context]) -> Context:
    ctx = make_context("USER", "vdc:demo", subject="alice-subject")
    ctx.principal = type(ctx.principal)(
        subject="alice-subject", name="Alice", email="alice@example.com", roles=ctx.principal.roles
    )
    ctx.vdc = "demo"
    return ctx


def demo_network(ctx: Context) -> str:
    from orchestrator.services import networks

    [default] = [n for n in networks.list_networks(ctx) if n.zone == "zone-a" and n.is_default]
    return default.id


def spec(ctx: Context, name: str | None = None, **changes: Any) -> CreateCluster:
    pools = changes.pop("node_pools", (NodePoolSpec("workers", "small", "standard", 2),))
    values: dict[str, Any] = {
        "name": name or f"c{next(_names)}",
        "version": VERSION,
        "network": demo_network(ctx),
        "node_pools": tuple(pools),
    }
    values.update(changes)
    return CreateCluster(**values)
