"""Writing a provider object's status: the fields a step decided and its Ready (or other) condition, as a
merge patch of the status subresource, and nothing when the status says all of it already (a resync
that finds the world as it was writes nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.sources.kube_objects import Resource
from providers.common import conditions
from providers.common.kube import Kube
from providers.common.objects import Body as Object
from providers.common.objects import meta, status


def write_status(
    kube: Kube, resource: Resource, obj: Object, changes: Mapping[str, Any], condition: conditions.Condition
) -> Object:
    """Patch ``obj``'s status with ``changes`` and ``condition``; the object as it is now."""
    current = status(obj)
    merged = conditions.set_condition(current.get("conditions"), condition)
    if all(current.get(k) == v for k, v in changes.items()) and conditions.same(
        current.get("conditions"), merged
    ):
        return obj
    name, namespace = meta(obj)["name"], meta(obj)["namespace"]
    return kube.patch_status(resource, namespace, name, {**changes, "conditions": merged})
