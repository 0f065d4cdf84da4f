"""The providers' start-up check of Cluster API core's contract, against a Kubernetes API server (the
devstack's emulator) holding the stand-in core's CRDs, an older core's, or none; and ``python -m
providers`` itself refusing to start against an older core, with the message an operator reads."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS, CLUSTER_API_VERSION, custom_resource_definition
from providers import compat

ROOT = Path(__file__).resolve().parents[2]


def older_core_cluster_crd() -> dict[str, Any]:
    """Cluster API 1.10's Cluster CRD, as far as the check reads it: v1beta1 only, no v1beta2 label."""
    return custom_resource_definition(
        "cluster.x-k8s.io",
        "Cluster",
        "clusters",
        versions=("v1beta1",),
        labels={"cluster.x-k8s.io/provider": "cluster-api"},
    )


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with KubeServer.start() as kube:
        yield kube


@pytest.fixture
def api(server: KubeServer) -> Iterator[client.ApiClient]:
    configuration = client.Configuration()
    configuration.host = server.url
    api_client = client.ApiClient(configuration)
    yield api_client
    api_client.close()


def test_the_stand_in_core_speaks_v1beta2_and_the_providers_start(
    server: KubeServer, api: client.ApiClient
) -> None:
    server.install_crds(CLUSTER_API_CORE_CRDS)

    compat.check_core(api)  # returns: nothing refused

    crd = compat.read_cluster_crd(api, 5.0)
    assert crd["metadata"]["labels"][compat.CONTRACT_LABEL] == "v1beta2"


def test_an_older_core_is_refused_naming_the_version_needed(
    server: KubeServer, api: client.ApiClient
) -> None:
    server.install_crds([older_core_cluster_crd()])

    with pytest.raises(compat.IncompatibleCore) as refused:
        compat.check_core(api)

    message = str(refused.value)
    assert "does not speak contract v1beta2" in message
    assert "serves v1beta1" in message
    assert f"Cluster API {compat.MINIMUM_CLUSTER_API} or later" in message
    assert "clusterctl upgrade apply --contract v1beta2" in message


def test_no_core_at_all_is_refused_with_the_install_to_run(api: client.ApiClient) -> None:
    with pytest.raises(compat.IncompatibleCore, match=r"not installed .*clusterctl init"):
        compat.check_core(api)


def test_a_core_serving_v1beta2_without_the_label_still_speaks_it() -> None:
    (cluster_crd, *_) = CLUSTER_API_CORE_CRDS
    unlabelled = copy.deepcopy(cluster_crd)
    unlabelled["metadata"].pop("labels")

    assert compat.speaks_contract(unlabelled)
    assert not compat.speaks_contract(older_core_cluster_crd())


def test_the_stand_in_core_plays_the_cluster_api_version_the_providers_are_tested_against() -> None:
    assert CLUSTER_API_VERSION == compat.TESTED_CLUSTER_API
    docs = (ROOT / "docs" / "kubernetes.md").read_text(encoding="utf-8")
    assert f"Cluster API {compat.TESTED_CLUSTER_API}" in docs
    assert compat.MINIMUM_CLUSTER_API in docs


def test_python_m_providers_refuses_to_start_against_an_older_core(
    server: KubeServer, tmp_path: Path
) -> None:
    server.install_crds([older_core_cluster_crd()])
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    env = {**os.environ, "FLEXPLANE_KUBECONFIG": str(kubeconfig), "FLEXPLANE_LOG_FORMAT": "plain"}

    done = subprocess.run(
        [sys.executable, "-m", "providers"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 1, done.stderr
    output = done.stdout + done.stderr
    assert "not starting: Cluster API core on this cluster does not speak contract v1beta2" in output
    assert f"Cluster API {compat.MINIMUM_CLUSTER_API} or later" in output
