"""Custom objects (Cluster API's, their CRD installed): created, listed, patched, their status, deleted."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.devstack.kube.support import (
    CAPI,
    NAMESPACE,
    as_dict,
    cluster,
)


def test_creating_a_custom_object_returns_it_with_server_metadata(custom: client.CustomObjectsApi) -> None:
    created = as_dict(custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo")))

    assert created["kind"] == "Cluster"
    assert created["metadata"]["namespace"] == NAMESPACE
    assert created["metadata"]["uid"]
    assert created["metadata"]["resourceVersion"]
    assert created["metadata"]["generation"] == 1


def test_custom_objects_are_listed_per_namespace_and_across_the_cluster(
    custom: client.CustomObjectsApi,
) -> None:
    client.CoreV1Api(custom.api_client).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="vdc-other"))
    )
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo"))
    custom.create_namespaced_custom_object(*CAPI, "vdc-other", "clusters", cluster("other"))

    mine = as_dict(custom.list_namespaced_custom_object(*CAPI, NAMESPACE, "clusters"))
    everywhere = as_dict(custom.list_cluster_custom_object(*CAPI, "clusters"))

    assert mine["kind"] == "ClusterList"
    assert [item["metadata"]["name"] for item in mine["items"]] == ["demo"]
    assert [item["metadata"]["name"] for item in everywhere["items"]] == ["demo", "other"]


def test_a_custom_object_patch_merges_into_it_and_bumps_the_generation(
    custom: client.CustomObjectsApi,
) -> None:
    custom.create_namespaced_custom_object(
        *CAPI, NAMESPACE, "clusters", cluster("demo", paused=False, zone="a")
    )

    custom.patch_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo", {"spec": {"paused": True}})
    read = as_dict(custom.get_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo"))

    assert read["spec"] == {"paused": True, "zone": "a"}
    assert read["metadata"]["generation"] == 2


def test_a_status_patch_changes_only_the_status(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo", paused=False))

    patched = as_dict(
        custom.patch_namespaced_custom_object_status(
            *CAPI, NAMESPACE, "clusters", "demo", {"spec": {"paused": True}, "status": {"ready": True}}
        )
    )

    assert patched["status"] == {"ready": True}
    assert patched["spec"] == {"paused": False}
    assert patched["metadata"]["generation"] == 1


def test_deleting_a_custom_object_removes_it(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo"))

    custom.delete_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo")

    with pytest.raises(ApiException) as raised:
        custom.get_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", "demo")
    assert raised.value.status == 404


def test_a_strategic_merge_patch_of_a_custom_object_is_unsupported(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*CAPI, NAMESPACE, "clusters", cluster("demo"))

    with pytest.raises(ApiException) as raised:
        custom.patch_namespaced_custom_object(
            *CAPI,
            NAMESPACE,
            "clusters",
            "demo",
            {"spec": {"paused": True}},
            _content_type="application/strategic-merge-patch+json",
        )

    assert raised.value.status == 415
