"""Pure helpers on Kubernetes objects as the API answers them (dicts): owners, finalizers, labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.sources.kube_objects import Resource

Body = Mapping[str, Any]


def meta(obj: Body) -> Mapping[str, Any]:
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def spec(obj: Body) -> Mapping[str, Any]:
    found = obj.get("spec")
    return found if isinstance(found, Mapping) else {}


def status(obj: Body) -> Mapping[str, Any]:
    found = obj.get("status")
    return found if isinstance(found, Mapping) else {}


def group_of(api_version: str) -> str:
    """The group of an ``apiVersion`` (``""`` for the core group's ``v1``)."""
    group, sep, _version = api_version.rpartition("/")
    return group if sep else ""


def owner_reference(obj: Body, resource: Resource) -> Mapping[str, Any] | None:
    """The owner reference naming a ``resource`` kind (of its group, at any version: Cluster API matches
    owners by group and kind), or None."""
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("kind") == resource.kind and group_of(str(ref.get("apiVersion", ""))) == resource.group:
            return ref
    return None


def owner_reference_to(owner: Body, resource: Resource, *, controller: bool = True) -> dict[str, Any]:
    """An owner reference to ``owner`` (a ``resource``), for an object it owns."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": meta(owner)["name"],
        "uid": meta(owner)["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def finalizers(obj: Body) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or ()]


def with_finalizer(obj: Body, finalizer: str) -> list[str] | None:
    """The object's finalizers with ``finalizer`` added; None when it has it already (nothing to write)."""
    present = finalizers(obj)
    return None if finalizer in present else [*present, finalizer]


def without_finalizer(obj: Body, finalizer: str) -> list[str] | None:
    """The object's finalizers without ``finalizer``; None when it has not got it (nothing to write)."""
    present = finalizers(obj)
    return [f for f in present if f != finalizer] if finalizer in present else None


def is_deleting(obj: Body) -> bool:
    return meta(obj).get("deletionTimestamp") is not None
