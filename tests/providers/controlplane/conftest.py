"""The control-plane provider's suites: a Kubernetes API server with Cluster API's and the providers' CRDs,
and the provider's Kube client of it, each once a module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from providers.common.crds import load_crds
from providers.controlplane.kube import Kube


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer.start() as kube:
        kube.install_crds([*CLUSTER_API_CORE_CRDS, *load_crds()])
        yield kube


@pytest.fixture(scope="module")
def kube(server: KubeServer) -> Iterator[Kube]:
    configuration = client.Configuration()
    configuration.host = server.url
    api_client = client.ApiClient(configuration)
    yield Kube(api_client)
    api_client.close()
