"""Helpers of the Kubernetes emulator's tests: objects to create, and reading what the client returns."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client import ApiException

from devstack.kube.crds import custom_resource_definition

NAMESPACE = "flexplane"
CAPI = ("cluster.x-k8s.io", "v1beta1")
CLUSTER_CRD = custom_resource_definition("cluster.x-k8s.io", "Cluster", "clusters", versions=("v1beta1",))


def config_map(
    name: str = "", *, labels: dict[str, str] | None = None, data: dict[str, str] | None = None, **more: Any
) -> client.V1ConfigMap:
    metadata = client.V1ObjectMeta(name=name or None, labels=labels, **more)
    return client.V1ConfigMap(metadata=metadata, data=data if data is not None else {"zone": "zone-a"})


def lease(name: str, holder: str | None = None, resource_version: str | None = None) -> client.V1Lease:
    metadata = client.V1ObjectMeta(name=name, resource_version=resource_version)
    renewed = datetime.datetime.now(datetime.UTC) if holder else None
    return client.V1Lease(
        metadata=metadata, spec=client.V1LeaseSpec(holder_identity=holder, renew_time=renewed)
    )


def cluster(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "/".join(CAPI), "kind": "Cluster", "metadata": {"name": name}, "spec": spec}


class Described(Protocol):
    """A typed object of the official client: something with object metadata."""

    @property
    def metadata(self) -> client.V1ObjectMeta | None: ...


class Listed(Protocol):
    """A typed list of the official client."""

    @property
    def metadata(self) -> client.V1ListMeta | None: ...


def meta(obj: Described) -> client.V1ObjectMeta:
    assert obj.metadata is not None  # the API server always sends metadata
    return obj.metadata


def version_of(obj: Described) -> str:
    version = meta(obj).resource_version
    assert version is not None
    return version


def list_meta(listing: Listed) -> client.V1ListMeta:
    assert listing.metadata is not None
    return listing.metadata


def list_version(listing: Listed) -> str:
    version = list_meta(listing).resource_version
    assert version is not None
    return version


def holder_of(leases: client.CoordinationV1Api, name: str) -> str | None:
    spec = leases.read_namespaced_lease(name, NAMESPACE).spec
    assert spec is not None
    return spec.holder_identity


def as_dict(obj: object) -> dict[str, Any]:
    """A custom object as the CustomObjectsApi returns it (typed ``object``): a dict."""
    assert isinstance(obj, dict)
    return obj


def status_of(error: ApiException) -> dict[str, Any]:
    assert error.body is not None
    return as_dict(json.loads(error.body))


def names(items: Sequence[Described]) -> list[str]:
    return [str(meta(item).name) for item in items]


def namespaces_of(items: Sequence[Described]) -> list[str]:
    return [str(meta(item).namespace) for item in items]


def labelled(core: client.CoreV1Api) -> Callable[[str], list[str]]:
    """Seed config maps with assorted tier labels; return a lookup of names by label selector."""
    core.create_namespaced_config_map(NAMESPACE, config_map("web", labels={"tier": "web", "team": "a"}))
    core.create_namespaced_config_map(NAMESPACE, config_map("api", labels={"tier": "api", "team": "a"}))
    core.create_namespaced_config_map(NAMESPACE, config_map("db", labels={"tier": "db", "team": "b"}))
    core.create_namespaced_config_map(NAMESPACE, config_map("plain"))
    return lambda selector: names(core.list_namespaced_config_map(NAMESPACE, label_selector=selector).items)


def raw(response: Any) -> dict[str, Any]:
    """The JSON body of a call made with ``_preload_content=False``."""
    return as_dict(json.loads(response.data))
