"""CustomResourceDefinitions: served at once, forgotten on delete, their status and scale subresources."""

from __future__ import annotations

import datetime
from typing import Any, cast

import pytest
from kubernetes import client
from kubernetes.client import ApiClient, ApiException

from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS, ScalePaths, custom_resource_definition
from providers.common.crds import load_crds
from tests.devstack.kube.support import NAMESPACE, as_dict, meta, raw

GROUP, VERSION = "controlplane.flexplane.io", "v1alpha1"
PLANES = (GROUP, VERSION)
PLANE_CRD = custom_resource_definition(
    GROUP,
    "FlexControlPlane",
    "flexcontrolplanes",
    versions=(VERSION,),
    scale=ScalePaths(".spec.replicas", ".status.replicas", ".status.selector"),
)
REGION_CRD = custom_resource_definition("infrastructure.flexplane.io", "Region", "regions", namespaced=False)


@pytest.fixture
def extensions(api: ApiClient) -> client.ApiextensionsV1Api:
    return client.ApiextensionsV1Api(api)


def as_crd(body: dict[str, Any]) -> client.V1CustomResourceDefinition:
    """A CRD body for the typed client, which sends a dict as it is."""
    return cast(client.V1CustomResourceDefinition, body)


def plane(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "/".join(PLANES),
        "kind": "FlexControlPlane",
        "metadata": {"name": name},
        "spec": spec,
    }


def discovered(api: ApiClient, path: str) -> dict[str, Any]:
    response = api.call_api("GET", api.configuration.host + path)
    response.read()
    return raw(response)


def test_a_created_crd_is_served_in_discovery_before_any_object(
    api: ApiClient, extensions: client.ApiextensionsV1Api
) -> None:
    extensions.create_custom_resource_definition(as_crd(PLANE_CRD))

    groups = discovered(api, "/apis")["groups"]
    resources = {item["name"]: item for item in discovered(api, f"/apis/{GROUP}/{VERSION}")["resources"]}

    assert GROUP in [group["name"] for group in groups]
    assert set(resources) == {"flexcontrolplanes", "flexcontrolplanes/status", "flexcontrolplanes/scale"}
    assert resources["flexcontrolplanes"]["kind"] == "FlexControlPlane"
    assert resources["flexcontrolplanes"]["namespaced"] is True
    assert {"watch", "patch", "list"} <= set(resources["flexcontrolplanes"]["verbs"])


def test_a_created_crd_is_established_with_its_names_accepted(extensions: client.ApiextensionsV1Api) -> None:
    extensions.create_custom_resource_definition(as_crd(PLANE_CRD))

    status = extensions.read_custom_resource_definition("flexcontrolplanes.controlplane.flexplane.io").status

    assert status is not None
    assert status.conditions is not None
    assert {(condition.type, condition.status) for condition in status.conditions} >= {
        ("Established", "True")
    }
    assert status.accepted_names is not None
    assert status.accepted_names.kind == "FlexControlPlane"
    assert status.stored_versions == [VERSION]


def test_a_crd_must_be_named_by_its_plural_and_group(extensions: client.ApiextensionsV1Api) -> None:
    misnamed = {**PLANE_CRD, "metadata": {"name": "planes.example.com"}}

    with pytest.raises(ApiException) as raised:
        extensions.create_custom_resource_definition(as_crd(misnamed))

    assert raised.value.status == 422


def test_objects_of_a_resource_without_a_crd_are_not_found(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as raised:
        custom.create_namespaced_custom_object(*PLANES, NAMESPACE, "flexcontrolplanes", plane("demo"))

    assert raised.value.status == 404


def test_deleting_a_crd_forgets_its_resource_and_its_objects(
    kube: KubeServer, api: ApiClient, custom: client.CustomObjectsApi, extensions: client.ApiextensionsV1Api
) -> None:
    kube.install_crds([PLANE_CRD])
    custom.create_namespaced_custom_object(*PLANES, NAMESPACE, "flexcontrolplanes", plane("demo"))

    extensions.delete_custom_resource_definition("flexcontrolplanes.controlplane.flexplane.io")

    with pytest.raises(ApiException) as raised:
        custom.list_namespaced_custom_object(*PLANES, NAMESPACE, "flexcontrolplanes")
    assert raised.value.status == 404
    assert GROUP not in [group["name"] for group in discovered(api, "/apis")["groups"]]
    kube.install_crds([PLANE_CRD])
    assert (
        as_dict(custom.list_namespaced_custom_object(*PLANES, NAMESPACE, "flexcontrolplanes"))["items"] == []
    )


def test_writes_to_an_object_with_a_status_subresource_leave_its_status(
    kube: KubeServer, custom: client.CustomObjectsApi
) -> None:
    kube.install_crds([PLANE_CRD])
    created = as_dict(
        custom.create_namespaced_custom_object(
            *PLANES, NAMESPACE, "flexcontrolplanes", {**plane("demo", replicas=2), "status": {"replicas": 9}}
        )
    )
    custom.patch_namespaced_custom_object_status(
        *PLANES, NAMESPACE, "flexcontrolplanes", "demo", {"status": {"replicas": 1}}
    )

    patched = as_dict(
        custom.patch_namespaced_custom_object(
            *PLANES,
            NAMESPACE,
            "flexcontrolplanes",
            "demo",
            {"spec": {"replicas": 3}, "status": {"replicas": 7}},
        )
    )

    assert "status" not in created
    assert patched["spec"] == {"replicas": 3}
    assert patched["status"] == {"replicas": 1}


def test_the_scale_subresource_reads_and_writes_the_crds_paths(
    kube: KubeServer, custom: client.CustomObjectsApi
) -> None:
    kube.install_crds([PLANE_CRD])
    custom.create_namespaced_custom_object(*PLANES, NAMESPACE, "flexcontrolplanes", plane("demo", replicas=2))
    custom.patch_namespaced_custom_object_status(
        *PLANES, NAMESPACE, "flexcontrolplanes", "demo", {"status": {"replicas": 2, "selector": "app=demo"}}
    )

    scaled = as_dict(
        custom.patch_namespaced_custom_object_scale(
            *PLANES, NAMESPACE, "flexcontrolplanes", "demo", {"spec": {"replicas": 3}}
        )
    )
    stored = as_dict(custom.get_namespaced_custom_object(*PLANES, NAMESPACE, "flexcontrolplanes", "demo"))

    assert (scaled["apiVersion"], scaled["kind"]) == ("autoscaling/v1", "Scale")
    assert scaled["spec"] == {"replicas": 3}
    assert scaled["status"] == {"replicas": 2, "selector": "app=demo"}
    assert stored["spec"]["replicas"] == 3
    assert stored["metadata"]["generation"] == 2


def test_a_scale_to_a_negative_count_is_invalid(kube: KubeServer, custom: client.CustomObjectsApi) -> None:
    kube.install_crds([PLANE_CRD])
    custom.create_namespaced_custom_object(*PLANES, NAMESPACE, "flexcontrolplanes", plane("demo", replicas=2))

    with pytest.raises(ApiException) as raised:
        custom.patch_namespaced_custom_object_scale(
            *PLANES, NAMESPACE, "flexcontrolplanes", "demo", {"spec": {"replicas": -1}}
        )

    assert raised.value.status == 422


def test_a_resource_without_the_scale_subresource_has_no_scale_path(
    kube: KubeServer, custom: client.CustomObjectsApi
) -> None:
    kube.install_crds(CLUSTER_API_CORE_CRDS)
    cluster = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "demo"}}
    custom.create_namespaced_custom_object("cluster.x-k8s.io", "v1beta2", NAMESPACE, "clusters", cluster)

    with pytest.raises(ApiException) as raised:
        custom.get_namespaced_custom_object_scale(
            "cluster.x-k8s.io", "v1beta2", NAMESPACE, "clusters", "demo"
        )

    assert raised.value.status == 404


def test_a_cluster_scoped_custom_resource_has_no_namespaced_paths(
    kube: KubeServer, custom: client.CustomObjectsApi
) -> None:
    kube.install_crds([REGION_CRD])
    region = {"apiVersion": "infrastructure.flexplane.io/v1", "kind": "Region", "metadata": {"name": "eu"}}

    created = as_dict(
        custom.create_cluster_custom_object("infrastructure.flexplane.io", "v1", "regions", region)
    )
    with pytest.raises(ApiException) as raised:
        custom.list_namespaced_custom_object("infrastructure.flexplane.io", "v1", NAMESPACE, "regions")

    assert "namespace" not in created["metadata"]
    assert raised.value.status == 404


def test_installing_crds_again_updates_them_in_place(
    kube: KubeServer, extensions: client.ApiextensionsV1Api
) -> None:
    kube.install_crds([PLANE_CRD])
    first = extensions.read_custom_resource_definition("flexcontrolplanes.controlplane.flexplane.io")

    kube.install_crds([PLANE_CRD])
    again = extensions.read_custom_resource_definition("flexcontrolplanes.controlplane.flexplane.io")

    assert meta(again).uid == meta(first).uid
    assert meta(again).resource_version == meta(first).resource_version


def test_events_are_created_in_both_event_apis(api: ApiClient) -> None:
    involved = client.V1ObjectReference(kind="FlexControlPlane", name="demo", namespace=NAMESPACE)
    core_event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name="demo."), involved_object=involved, reason="Created"
    )
    new_event = client.EventsV1Event(
        metadata=client.V1ObjectMeta(generate_name="demo."),
        regarding=involved,
        reason="Created",
        event_time=datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC),
        reporting_controller="flexplane.io/providers",
        reporting_instance="providers-0",
        action="Reconcile",
    )

    client.CoreV1Api(api).create_namespaced_event(NAMESPACE, core_event)
    client.EventsV1Api(api).create_namespaced_event(NAMESPACE, new_event)

    assert len(client.CoreV1Api(api).list_namespaced_event(NAMESPACE).items) == 1
    assert len(client.EventsV1Api(api).list_namespaced_event(NAMESPACE).items) == 1


def test_the_providers_crds_from_the_chart_serve_their_kinds(kube: KubeServer, api: ApiClient) -> None:
    kube.install_crds(load_crds())

    infrastructure = discovered(api, "/apis/infrastructure.flexplane.io/v1alpha1")["resources"]
    control_planes = discovered(api, "/apis/controlplane.flexplane.io/v1alpha1")["resources"]

    assert {item["name"] for item in infrastructure} == {
        f"{plural}{sub}"
        for plural in ("proxmoxclusters", "proxmoxmachines", "proxmoxmachinetemplates")
        for sub in ("", "/status")
    }
    assert {item["name"] for item in control_planes} == {
        "flexcontrolplanes",
        "flexcontrolplanes/status",
        "flexcontrolplanes/scale",
    }
