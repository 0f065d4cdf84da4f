"""The Cluster API source's VDC namespaces, against the Kubernetes emulator: made labelled on a VDC's first
cluster, found as good as made after that, and the orchestrator bound there to read Secrets only where the
deployment names the role to bind."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from devstack.kube import KubeServer
from orchestrator.sources.clusterapi import ClusterApiSource


@pytest.fixture(scope="module")
def api_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    with KubeServer.start() as server:
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("clusterapi") / "kubeconfig")
        made = config.new_client_from_config(config_file=str(kubeconfig))
        yield made
        made.close()


def test_a_vdcs_namespace_is_made_labelled_and_found_after(
    api_client: client.ApiClient, settings: Any
) -> None:
    settings.FLEXPLANE_VDC_ROLE = ""
    source = ClusterApiSource(api_client, 2.0)
    source.ensure_namespace("vdc-first", {"flexplane.io/vdc": "first"})
    source.ensure_namespace("vdc-first", {"flexplane.io/vdc": "first"})  # there: as good as made

    namespace = client.CoreV1Api(api_client).read_namespace("vdc-first")
    assert namespace.metadata is not None
    assert (namespace.metadata.labels or {})["flexplane.io/vdc"] == "first"
    bindings = client.RbacAuthorizationV1Api(api_client).list_namespaced_role_binding("vdc-first")
    assert bindings.items == []  # no role named: nothing bound


def test_the_orchestrator_is_bound_to_the_named_role_in_each_vdc_namespace(
    api_client: client.ApiClient, settings: Any
) -> None:
    settings.FLEXPLANE_VDC_ROLE = "flexplane-vdc"
    settings.FLEXPLANE_SERVICE_ACCOUNT = "flexplane-system/flexplane"
    source = ClusterApiSource(api_client, 2.0)
    source.ensure_namespace("vdc-second", {"flexplane.io/vdc": "second"})
    source.ensure_namespace("vdc-second", {"flexplane.io/vdc": "second"})

    binding = client.RbacAuthorizationV1Api(api_client).read_namespaced_role_binding(
        "flexplane-vdc", "vdc-second"
    )
    assert (binding.role_ref.kind, binding.role_ref.name) == ("ClusterRole", "flexplane-vdc")
    assert [(s.kind, s.namespace, s.name) for s in binding.subjects or []] == [
        ("ServiceAccount", "flexplane-system", "flexplane")
    ]
