"""What the API server does to an object's body on every write, whatever the request was.

Pure functions over plain JSON bodies: server-owned metadata, generations, the rules of the
built-in types that flex.plane uses (Secrets, Namespaces), and the order objects are listed in.
"""

from __future__ import annotations

import base64
import copy
import datetime
import secrets
from collections.abc import Mapping
from typing import Any

import kmock

Body = dict[str, Any]
ObjectKey = tuple[kmock.resource, str | None, str]

NAMESPACES = kmock.resource("", "v1", "namespaces")
SECRETS = kmock.resource("", "v1", "secrets")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

# Metadata that the server owns: ignored in a create, kept from the stored object on an update.
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
    "managedFields",
)
IDENTITY_METADATA = ("name", "namespace")

# The alphabet and length of the suffix that the API server appends to a generateName.
GENERATED_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_NAME_LENGTH = 5


def api_version(resource: kmock.resource) -> str:
    return f"{resource.group}/{resource.version}" if resource.group else str(resource.version)


def resource_name(resource: kmock.resource) -> str:
    """The resource as the API server names it in messages, e.g. ``configmaps`` or ``clusters.x.io``."""
    return f"{resource.plural}.{resource.group}" if resource.group else f"{resource.plural}"


def generated_name(prefix: str) -> str:
    """A name for ``generateName``: the prefix and a random suffix, as the API server makes them."""
    suffix = "".join(secrets.choice(GENERATED_NAME_ALPHABET) for _ in range(GENERATED_NAME_LENGTH))
    return prefix + suffix


def user_metadata(metadata: Mapping[str, Any]) -> Body:
    """The metadata that a client may set: everything but the server's and the identifying fields."""
    return {
        key: copy.deepcopy(value)
        for key, value in metadata.items()
        if key not in SERVER_METADATA and key not in IDENTITY_METADATA
    }


def spec_of(obj: Mapping[str, Any]) -> Body:
    """What a change of bumps the generation: everything but metadata and status."""
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


def with_status_of(current: Body, source: Mapping[str, Any]) -> Body:
    """The stored object with the status of ``source``: what a write to /status may change."""
    candidate = copy.deepcopy(current)
    if "status" in source:
        candidate["status"] = copy.deepcopy(source["status"])
    else:
        candidate.pop("status", None)
    return candidate


def with_server_metadata(candidate: Body, current: Body) -> Body:
    """``candidate`` with the server-owned and identifying metadata of the stored object."""
    metadata = user_metadata(candidate.get("metadata") or {})
    for key in (*IDENTITY_METADATA, *SERVER_METADATA):
        if key in current["metadata"]:
            metadata[key] = current["metadata"][key]
    return {**copy.deepcopy(candidate), "metadata": metadata}


def apply_type_rules(resource: kmock.resource, obj: Body) -> None:
    """What the real API server does to these types on every write."""
    if resource == SECRETS:
        string_data = obj.pop("stringData", None) or {}
        encoded = {key: base64.b64encode(str(value).encode()).decode() for key, value in string_data.items()}
        if encoded:
            obj["data"] = {**(obj.get("data") or {}), **encoded}
        obj.setdefault("type", "Opaque")
    elif resource == NAMESPACES:
        metadata = obj["metadata"]
        metadata["labels"] = {
            **(metadata.get("labels") or {}),
            "kubernetes.io/metadata.name": metadata["name"],
        }
        obj.setdefault("spec", {})
        obj.setdefault("status", {"phase": "Active"})


def sort_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """The order of a list: by namespace (cluster-wide objects first), then by name."""
    metadata = obj["metadata"]
    return metadata.get("namespace") or "", metadata["name"]


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
