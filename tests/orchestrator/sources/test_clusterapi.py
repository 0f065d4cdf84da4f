"""The Cluster API source against the Kubernetes emulator: VDC namespaces made labelled on a VDC's first
cluster, found as good as made after that, and the orchestrator bound there to read Secrets only where the
deployment names the role to bind; a Secret written, written again whole, and deleted; and what its calls'
failures become (the Kubernetes layer's one call
wrapper): nothing, ``Conflict``, ``NotFound``, ``Unavailable``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.net import free_port
from orchestrator.errors import Conflict, NotFound, Unavailable
from orchestrator.services.clusters import objects
from orchestrator.sources.clusterapi import ClusterApiSource
from orchestrator.sources.kube_objects import CLUSTER, PROXMOX_CLUSTER, VDC_LABEL


@pytest.fixture(scope="module")
def api_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    with KubeServer.start() as server:
        server.install_crds(CLUSTER_API_CORE_CRDS)  # Cluster API core's kinds; not the providers'
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("clusterapi") / "kubeconfig")
        made = config.new_client_from_config(config_file=str(kubeconfig))
        yield made
        made.close()


def test_a_vdcs_namespace_is_made_labelled_and_found_after(
    api_client: client.ApiClient, settings: Any
) -> None:
    settings.FLEXPLANE_VDC_ROLE = ""
    source = ClusterApiSource(api_client, 2.0)
    source.ensure_namespace("vdc-first", {VDC_LABEL: "first"})
    source.ensure_namespace("vdc-first", {VDC_LABEL: "first"})  # there: as good as made

    namespace = client.CoreV1Api(api_client).read_namespace("vdc-first")
    assert namespace.metadata is not None
    assert (namespace.metadata.labels or {})[VDC_LABEL] == "first"
    bindings = client.RbacAuthorizationV1Api(api_client).list_namespaced_role_binding("vdc-first")
    assert bindings.items == []  # no role named: nothing bound


def test_the_orchestrator_is_bound_to_the_named_role_in_each_vdc_namespace(
    api_client: client.ApiClient, settings: Any
) -> None:
    settings.FLEXPLANE_VDC_ROLE = "flexplane-vdc"
    settings.FLEXPLANE_SERVICE_ACCOUNT = "flexplane-system/flexplane"
    source = ClusterApiSource(api_client, 2.0)
    source.ensure_namespace("vdc-second", {VDC_LABEL: "second"})
    source.ensure_namespace("vdc-second", {VDC_LABEL: "second"})

    binding = client.RbacAuthorizationV1Api(api_client).read_namespaced_role_binding(
        "flexplane-vdc", "vdc-second"
    )
    assert (binding.role_ref.kind, binding.role_ref.name) == ("ClusterRole", "flexplane-vdc")
    assert [(s.kind, s.namespace, s.name) for s in binding.subjects or []] == [
        ("ServiceAccount", "flexplane-system", "flexplane")
    ]


def test_a_kind_not_installed_has_no_objects_and_a_missing_object_is_not_found_or_already_gone(
    api_client: client.ApiClient,
) -> None:
    source = ClusterApiSource(api_client, 2.0)
    assert source.list(PROXMOX_CLUSTER, "vdc-first", VDC_LABEL) == []
    assert source.delete(CLUSTER, "vdc-first", "nothing") is False
    with pytest.raises(NotFound):
        source.patch(CLUSTER, "vdc-first", "nothing", {"spec": {"paused": True}})


def test_a_second_create_of_one_name_is_a_conflict(api_client: client.ApiClient, settings: Any) -> None:
    settings.FLEXPLANE_VDC_ROLE = ""
    source = ClusterApiSource(api_client, 2.0)
    source.ensure_namespace("vdc-third", {VDC_LABEL: "third"})
    body = objects.cluster(objects.ClusterPlan("third", "shop", "v1.34.2", "debian-12", "zone-a/net", 1, ()))
    made = source.create(CLUSTER, "vdc-third", body)
    assert (made.kind, made.name, made.labels[VDC_LABEL]) == ("Cluster", "shop", "third")
    with pytest.raises(Conflict):
        source.create(CLUSTER, "vdc-third", body)
    assert [c.name for c in source.list(CLUSTER, "vdc-third", VDC_LABEL)] == ["shop"]
    assert source.delete(CLUSTER, "vdc-third", "shop") is True


def test_a_secret_is_written_then_replaced_whole_and_deleted(
    api_client: client.ApiClient, settings: Any
) -> None:
    settings.FLEXPLANE_VDC_ROLE = ""
    source = ClusterApiSource(api_client, 2.0)
    source.ensure_namespace("vdc-fourth", {VDC_LABEL: "fourth"})
    source.write_secret(
        "vdc-fourth", "shop-cloud-controller", {"key.json": b"{}", "old": b"x"}, {VDC_LABEL: "a"}
    )
    source.write_secret(
        "vdc-fourth", "shop-cloud-controller", {"key.json": b'{"k": 1}'}, {VDC_LABEL: "fourth"}
    )

    found = source.secret("vdc-fourth", "shop-cloud-controller")
    assert found is not None
    assert (found.data, found.labels, found.type) == (
        {"key.json": b'{"k": 1}'},
        {VDC_LABEL: "fourth"},
        "Opaque",
    )
    assert source.delete_secret("vdc-fourth", "shop-cloud-controller") is True
    assert source.secret("vdc-fourth", "shop-cloud-controller") is None
    assert source.delete_secret("vdc-fourth", "shop-cloud-controller") is False  # gone already


def test_a_management_cluster_that_does_not_answer_is_unavailable() -> None:
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{free_port('127.0.0.1')}"  # a loopback port nothing listens on
    configuration.retries = False
    with client.ApiClient(configuration) as nowhere:
        source = ClusterApiSource(nowhere, 2.0)
        with pytest.raises(Unavailable, match="did not answer"):
            source.list(CLUSTER, None, VDC_LABEL)
