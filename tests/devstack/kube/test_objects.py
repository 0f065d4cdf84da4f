"""Objects as the API server keeps them: created with server metadata, read, listed, deleted; namespaces."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.devstack.kube.support import (
    NAMESPACE,
    config_map,
    holder_of,
    labelled,
    lease,
    list_meta,
    meta,
    names,
    namespaces_of,
    raw,
    status_of,
    version_of,
)


def test_create_answers_201(core: client.CoreV1Api) -> None:
    _, status, _ = core.create_namespaced_config_map_with_http_info(NAMESPACE, config_map("catalog"))

    assert status == 201


def test_a_created_object_carries_server_metadata(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    assert meta(created).uid
    assert meta(created).resource_version
    assert meta(created).creation_timestamp is not None
    assert meta(created).generation == 1
    assert meta(created).namespace == NAMESPACE


def test_every_write_bumps_the_cluster_wide_resource_version(
    core: client.CoreV1Api, leases: client.CoordinationV1Api
) -> None:
    first = core.create_namespaced_config_map(NAMESPACE, config_map("one"))
    second = leases.create_namespaced_lease(NAMESPACE, lease("quota"))
    patched = core.patch_namespaced_config_map("one", NAMESPACE, {"data": {"zone": "zone-b"}})
    replaced = core.replace_namespaced_config_map(
        "one", NAMESPACE, config_map("one", data={"zone": "zone-c"})
    )

    versions = [int(version_of(obj)) for obj in (first, second, patched, replaced)]

    assert versions == sorted(set(versions))


def test_generate_name_gives_each_object_a_unique_name(core: client.CoreV1Api) -> None:
    created = [
        core.create_namespaced_config_map(NAMESPACE, config_map(generate_name="image-")) for _ in range(3)
    ]

    generated = names(created)
    assert len(set(generated)) == 3
    assert all(name.startswith("image-") and len(name) > len("image-") for name in generated)


def test_a_duplicate_create_answers_already_exists(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    assert raised.value.status == 409
    assert status_of(raised.value)["kind"] == "Status"
    assert status_of(raised.value)["reason"] == "AlreadyExists"


def test_it_rejects_an_object_whose_namespace_differs_from_the_url(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(NAMESPACE, config_map("catalog", namespace="elsewhere"))

    assert raised.value.status == 400
    assert status_of(raised.value)["reason"] == "BadRequest"


def test_a_dry_run_create_stores_nothing(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"), dry_run="All")

    assert core.list_namespaced_config_map(NAMESPACE).items == []


def test_a_secrets_string_data_is_stored_as_base64_data(core: client.CoreV1Api) -> None:
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="platform-ca"), string_data={"tls.key": "KEY"})
    core.create_namespaced_secret(NAMESPACE, secret)

    stored = core.read_namespaced_secret("platform-ca", NAMESPACE)

    assert stored.data == {"tls.key": "S0VZ"}
    assert stored.string_data is None
    assert stored.type == "Opaque"


def test_a_list_names_its_kind_and_the_current_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    listing = raw(core.list_namespaced_config_map(NAMESPACE, _preload_content=False))

    assert listing["kind"] == "ConfigMapList"
    assert listing["apiVersion"] == "v1"
    assert listing["metadata"]["resourceVersion"] == version_of(created)


def test_it_pages_a_list_with_limit_and_continue(core: client.CoreV1Api) -> None:
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map(NAMESPACE, config_map(name))

    first = core.list_namespaced_config_map(NAMESPACE, limit=2)
    rest = core.list_namespaced_config_map(NAMESPACE, limit=2, _continue=list_meta(first).var_continue)

    assert names(first.items) == ["a", "b"]
    assert list_meta(first).remaining_item_count == 1
    assert names(rest.items) == ["c"]
    assert list_meta(rest).var_continue is None


def test_reading_a_missing_object_answers_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_config_map("absent", NAMESPACE)

    assert raised.value.status == 404
    assert status_of(raised.value)["reason"] == "NotFound"


def test_deleting_a_missing_object_answers_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.delete_namespaced_config_map("absent", NAMESPACE)

    assert raised.value.status == 404
    assert status_of(raised.value)["kind"] == "Status"
    assert status_of(raised.value)["reason"] == "NotFound"


def test_a_delete_with_a_stale_precondition_conflicts(leases: client.CoordinationV1Api) -> None:
    created = leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    leases.replace_namespaced_lease("quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-a"))
    stale = client.V1Preconditions(resource_version=version_of(created))

    with pytest.raises(ApiException) as raised:
        leases.delete_namespaced_lease(
            "quota-vdc-demo", NAMESPACE, body=client.V1DeleteOptions(preconditions=stale)
        )

    assert raised.value.status == 409
    assert holder_of(leases, "quota-vdc-demo") == "replica-a"


def test_an_object_with_finalizers_goes_once_they_are_removed(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", finalizers=["flexplane.io/cleanup"]))

    core.delete_namespaced_config_map("catalog", NAMESPACE)
    marked = core.read_namespaced_config_map("catalog", NAMESPACE)
    core.patch_namespaced_config_map("catalog", NAMESPACE, {"metadata": {"finalizers": None}})

    assert meta(marked).deletion_timestamp is not None
    assert core.list_namespaced_config_map(NAMESPACE).items == []


def test_it_deletes_a_collection_by_label(core: client.CoreV1Api) -> None:
    labelled(core)

    core.delete_collection_namespaced_config_map(NAMESPACE, label_selector="team=a")

    assert names(core.list_namespaced_config_map(NAMESPACE).items) == ["db", "plain"]


def test_it_lists_the_system_namespaces_and_those_made(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="explicit")))

    listed = names(core.list_namespace().items)

    system = ["default", "kube-system", "kube-public", "kube-node-lease"]
    assert listed == sorted([*system, "explicit", NAMESPACE])


def test_nothing_is_made_in_a_namespace_that_does_not_exist(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_config_map("nowhere", config_map("catalog", namespace="nowhere"))

    assert refused.value.status == 404
    assert json.loads(refused.value.body or "{}")["message"] == 'namespaces "nowhere" not found'
    assert "nowhere" not in names(core.list_namespace().items)


def test_a_namespace_reads_as_active_with_its_name_label(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="vdc-demo")))

    namespace = core.read_namespace("vdc-demo")

    assert namespace.status is not None
    assert namespace.status.phase == "Active"
    assert meta(namespace).labels == {"kubernetes.io/metadata.name": "vdc-demo"}


def test_deleting_a_namespace_deletes_its_objects(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="vdc-demo")))
    core.create_namespaced_config_map("vdc-demo", config_map("catalog"))
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))

    core.delete_namespace("vdc-demo")

    assert "vdc-demo" not in names(core.list_namespace().items)
    assert namespaces_of(core.list_config_map_for_all_namespaces().items) == [NAMESPACE]
