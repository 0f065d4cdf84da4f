"""Fixtures of the Kubernetes emulator's tests: a server per test, and the official client pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client import ApiClient

from devstack.kube import KubeServer
from tests.devstack.kube.support import CLUSTER_CRD, NAMESPACE


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with KubeServer.start() as server:
        yield server


@pytest.fixture
def kubeconfig(kube: KubeServer, tmp_path: Path) -> Path:
    return kube.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api(kubeconfig: Path) -> Iterator[ApiClient]:
    """The official client, with the tests' namespace made (nothing can be made in one that is not)."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    client.CoreV1Api(api_client).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
    )
    yield api_client
    api_client.close()


@pytest.fixture
def core(api: ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def leases(api: ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api)


@pytest.fixture
def custom(kube: KubeServer, api: ApiClient) -> client.CustomObjectsApi:
    """The custom objects API, with Cluster API's Cluster CRD (v1beta1) installed."""
    kube.install_crds([CLUSTER_CRD])
    return client.CustomObjectsApi(api)
