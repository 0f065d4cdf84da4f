"""``flexplane clusters`` on a cluster of VDC demo that the providers would have made ready (its objects as
they and Cluster API core leave them, tests/portal/light's way): listed, and its kubeconfig printed or
written to a file only its owner reads."""

from __future__ import annotations

import json
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cli.conftest import Flexplane
from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.inprocess import InProcessApi
from tests.portal.light.test_cluster_pages import (
    ENDPOINT_HOST,
    NEWEST,
    cleaned,
    demo_network,
    made_ready,
    offered,
)

CREATE = """mutation($input: CreateKubernetesClusterInput!) {
  createKubernetesCluster(input: $input) { errors { field code message } } }"""


@pytest.fixture(scope="module")
def ready_cluster(api: InProcessApi, tenant_clusters: FakeClusterApi) -> Iterator[str]:
    """A cluster of VDC demo with its endpoint and CA, made by alice before the service account's turn."""
    offered(api)
    with demo_network(api) as network, cleaned(tenant_clusters, f"cli{uuid.uuid4().hex[:6]}") as name:
        pool = {"name": "workers", "computeProfile": "small", "storageProfile": "standard", "count": 1}
        spec = {
            "name": name,
            "version": NEWEST,
            "network": network,
            "controlPlane": {"replicas": 1},
            "nodePools": [{**pool, "network": network}],
        }
        made = api(CREATE, user="alice", vdc="demo", variables={"input": spec})
        assert made.data["createKubernetesCluster"]["errors"] == [], made.body
        made_ready(tenant_clusters, name)
        yield name


def test_a_clusters_kubeconfig_is_printed_or_written_where_only_its_owner_reads_it(
    flexplane: Flexplane, ready_cluster: str, logged_in: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "kubeconfig"

    listed = flexplane("clusters", "list", "-o", "json")
    written = flexplane("clusters", "kubeconfig", ready_cluster, "--file", str(path))
    printed = flexplane("clusters", "kubeconfig", ready_cluster)
    missing = flexplane("clusters", "kubeconfig", "no-such-cluster")

    assert listed.exit_code == 0, listed.output
    assert ready_cluster in [cluster["name"] for cluster in json.loads(listed.stdout)]
    assert written.exit_code == 0, written.output
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert config["clusters"][0]["cluster"]["server"] == f"https://{ENDPOINT_HOST}:6443"
    assert printed.exit_code == 0, printed.output
    assert yaml.safe_load(printed.stdout)["kind"] == "Config"
    assert missing.exit_code == 3, missing.output
