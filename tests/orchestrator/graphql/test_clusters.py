"""Tenant Kubernetes clusters through the GraphQL API of the world's orchestrator, over HTTP with the
identity provider's tokens: create, list, read, scale, upgrade, delete, bad input named by its field,
another VDC's cluster NOT_FOUND, the versions catalog (ADMIN writes, USERs read), an audited
kubeconfig, and the cloud controller's identity (a service account in the identity provider, its key in
a Secret of the management cluster) made and removed with the cluster. The service's finer behaviour
(quota races, reads counted, the kubeconfig's certificate) is tested in
``tests/orchestrator/services/test_clusters.py``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from devstack.world import World
from orchestrator.sources.kube_objects import CLOUD_CONTROLLER_KEY, cloud_controller_secret
from tests.apikit import GraphQL
from tests.orchestrator.clusterkit import (
    CLUSTER_FIELDS,
    CREATE_CLUSTER,
    NEXT,
    VERSION,
    cluster_input,
    delete_all,
    prepare,
)

CLUSTERS = f"{{ kubernetesClusters {{ {CLUSTER_FIELDS} }} }}"
CLUSTER = f"query($name: String!) {{ kubernetesCluster(name: $name) {{ {CLUSTER_FIELDS} }} }}"
PAYLOAD = f"{{ kubernetesCluster {{ {CLUSTER_FIELDS} }} errors {{ field message code }} }}"
SCALE = f"""mutation($cluster: String!, $pool: String!, $count: Int!) {{
  scaleNodePool(cluster: $cluster, pool: $pool, count: $count) {PAYLOAD} }}"""
UPGRADE = f"""mutation($cluster: String!, $version: String!) {{
  upgradeKubernetesCluster(cluster: $cluster, version: $version) {PAYLOAD} }}"""
DELETE = f"mutation($cluster: String!) {{ deleteKubernetesCluster(cluster: $cluster) {PAYLOAD} }}"
ACCOUNTS = 'query { serviceAccounts(vdc: "demo") { id name createdBy } }'
KUBECONFIG = (
    "query($cluster: String!) { kubeconfig(cluster: $cluster) { cluster endpoint kubeconfig expiresAt } }"
)


@pytest.fixture(scope="module")
def networks(world: World, api: GraphQL) -> Iterator[dict[str, str]]:
    found = prepare(world, api)
    yield found
    delete_all(world, "demo")


def created(api: GraphQL, user: str, vdc: str, values: dict[str, Any]) -> dict[str, Any]:
    answer = api(CREATE_CLUSTER, user=user, vdc=vdc, variables={"input": values})
    assert answer.errors == [], answer.body
    result: dict[str, Any] = answer.data["createKubernetesCluster"]
    return result


def test_alice_creates_a_cluster_and_finds_it_in_her_vdc_and_bob_does_not(
    api: GraphQL, networks: dict[str, str]
) -> None:
    made = created(api, "alice", "demo", cluster_input("gql-one", networks["demo"], count=3))
    assert made["errors"] == []
    cluster = made["kubernetesCluster"]
    assert (cluster["name"], cluster["vdc"], cluster["version"], cluster["phase"]) == (
        "gql-one",
        "demo",
        VERSION,
        "Provisioning",
    )
    assert cluster["nodePools"][0] | {"ready": 0} == {
        "name": "workers",
        "computeProfile": "small",
        "storageProfile": "standard",
        "network": networks["demo"],
        "count": 3,
        "ready": 0,
        "version": VERSION,
    }
    listed = api(CLUSTERS, user="alice", vdc="demo")
    assert "gql-one" in [c["name"] for c in listed.data["kubernetesClusters"]]
    read = api(CLUSTER, user="alice", vdc="demo", variables={"name": "gql-one"})
    assert read.data["kubernetesCluster"]["controlPlane"]["replicas"] == 2
    assert read.data["kubernetesCluster"]["networkPlugin"] == "cilium"  # the default

    theirs = api(CLUSTER, user="bob", vdc="other", variables={"name": "gql-one"})
    missing = api(CLUSTER, user="bob", vdc="other", variables={"name": "gql-none"})
    assert theirs.codes == missing.codes == ["NOT_FOUND"]
    assert api(CLUSTERS, user="bob", vdc="other").data["kubernetesClusters"] == []
    assert api(CLUSTERS, user="bob", vdc="demo").codes == ["FORBIDDEN"]
    api(DELETE, user="alice", vdc="demo", variables={"cluster": "gql-one"})


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"version": "v1.2.3"}, "version", id="a version not in the catalog"),
        pytest.param(
            {
                "nodePools": [
                    {"name": "w", "computeProfile": "small", "storageProfile": "standard", "count": 1000}
                ]
            },
            "nodePools[0].count",
            id="1000 nodes",
        ),
        pytest.param(
            {
                "nodePools": [
                    {"name": "w", "computeProfile": "huge", "storageProfile": "standard", "count": 1}
                ]
            },
            "nodePools[0].computeProfile",
            id="a profile the VDC does not allow",
        ),
        pytest.param({"network": "OTHER"}, "network", id="a network of another VDC"),
        pytest.param({"networkPlugin": "weave"}, "networkPlugin", id="a network plugin not offered"),
    ],
)
def test_bad_input_is_invalid_naming_the_field(
    api: GraphQL, networks: dict[str, str], changes: dict[str, Any], field: str
) -> None:
    values = cluster_input("gql-bad", networks["demo"]) | changes
    if values["network"] == "OTHER":
        values["network"] = networks["other"]
    made = created(api, "alice", "demo", values)
    assert [(e["field"], e["code"]) for e in made["errors"]] == [(field, "INVALID")]
    assert made["kubernetesCluster"] is None
    assert api(CLUSTER, user="alice", vdc="demo", variables={"name": "gql-bad"}).codes == ["NOT_FOUND"]


@pytest.mark.parametrize("plugin", ["calico", "none"])
def test_alice_creates_a_cluster_with_calico_or_without_a_network_plugin(
    api: GraphQL, networks: dict[str, str], plugin: str
) -> None:
    name = f"gql-{plugin}"
    values = cluster_input(name, networks["demo"]) | {"networkPlugin": plugin}
    made = created(api, "alice", "demo", values)
    assert made["errors"] == []
    assert made["kubernetesCluster"]["networkPlugin"] == plugin
    read = api(CLUSTER, user="alice", vdc="demo", variables={"name": name})
    assert read.data["kubernetesCluster"]["networkPlugin"] == plugin
    api(DELETE, user="alice", vdc="demo", variables={"cluster": name})


def test_alice_scales_upgrades_and_deletes_her_cluster(api: GraphQL, networks: dict[str, str]) -> None:
    created(api, "alice", "demo", cluster_input("gql-life", networks["demo"]))
    scaled = api(
        SCALE, user="alice", vdc="demo", variables={"cluster": "gql-life", "pool": "workers", "count": 3}
    )
    assert scaled.data["scaleNodePool"]["kubernetesCluster"]["nodePools"][0]["count"] == 3
    zero = api(
        SCALE, user="alice", vdc="demo", variables={"cluster": "gql-life", "pool": "workers", "count": 0}
    )
    assert zero.data["scaleNodePool"]["errors"][0]["field"] == "count"
    upgraded = api(UPGRADE, user="alice", vdc="demo", variables={"cluster": "gql-life", "version": NEXT})
    assert upgraded.data["upgradeKubernetesCluster"]["kubernetesCluster"]["version"] == NEXT
    bobs = api(DELETE, user="bob", vdc="other", variables={"cluster": "gql-life"})
    assert [e["code"] for e in bobs.data["deleteKubernetesCluster"]["errors"]] == ["NOT_FOUND"]
    deleted = api(DELETE, user="alice", vdc="demo", variables={"cluster": "gql-life"})
    assert deleted.data["deleteKubernetesCluster"]["kubernetesCluster"]["phase"] == "Deleting"
    assert api(CLUSTER, user="alice", vdc="demo", variables={"name": "gql-life"}).codes == ["NOT_FOUND"]


def test_a_cluster_gets_its_cloud_controllers_identity_and_loses_it_with_its_delete(
    world: World, api: GraphQL, networks: dict[str, str]
) -> None:
    """Through the world's orchestrator, its identity provider (the Zitadel emulator) and management cluster
    (the Kubernetes emulator): the wiring of ``services.clusters.identity`` (its cases: the light API's
    ``test_cluster_identity``)."""
    created(api, "alice", "demo", cluster_input("gql-ident", networks["demo"]))
    [account] = [
        a for a in api(ACCOUNTS, user="alice").data["serviceAccounts"] if a["name"] == "k8s-gql-ident"
    ]
    assert account["createdBy"] == "flex.plane"
    api_client = config.new_client_from_config(config_file=str(world.kubeconfig))
    core = client.CoreV1Api(api_client)
    try:
        secret = core.read_namespaced_secret(cloud_controller_secret("gql-ident"), "vdc-demo")
        key = json.loads(base64.b64decode((secret.data or {})[CLOUD_CONTROLLER_KEY]))
        assert key["userId"] == account["id"]
        assert key["key"].startswith("-----BEGIN")  # a private key the controller signs its assertions with

        deleted = api(DELETE, user="alice", vdc="demo", variables={"cluster": "gql-ident"})
        assert deleted.data["deleteKubernetesCluster"]["errors"] == []
        names = [s.metadata.name for s in core.list_namespaced_secret("vdc-demo").items if s.metadata]
        assert cloud_controller_secret("gql-ident") not in names
    finally:
        api_client.close()
    assert "k8s-gql-ident" not in [a["name"] for a in api(ACCOUNTS, user="alice").data["serviceAccounts"]]


def test_kubernetes_versions_are_admins_to_write_and_users_to_read(
    api: GraphQL, networks: dict[str, str]
) -> None:
    listed = api("{ kubernetesVersions { version image } }", user="bob")
    assert {"version": NEXT, "image": "ubuntu-24.04"} in listed.data["kubernetesVersions"]
    mutation = """mutation($input: KubernetesVersionInput!) { createKubernetesVersion(input: $input) {
      kubernetesVersion { version } errors { field code } } }"""
    refused = api(mutation, user="alice", variables={"input": {"version": "v1.35.0", "image": "debian-12"}})
    assert refused.codes == ["FORBIDDEN"]
    bad = api(mutation, user="admin", variables={"input": {"version": "1.35", "image": "debian-12"}})
    assert bad.data["createKubernetesVersion"]["errors"] == [{"field": "version", "code": "INVALID"}]


def test_a_kubeconfig_of_a_cluster_without_an_endpoint_is_a_conflict_and_is_audited(
    api: GraphQL, networks: dict[str, str]
) -> None:
    created(api, "alice", "demo", cluster_input("gql-conf", networks["demo"]))
    answer = api(KUBECONFIG, user="alice", vdc="demo", variables={"cluster": "gql-conf"})
    assert answer.codes == ["CONFLICT"]
    records = api(
        'query { auditRecords(vdc: "demo", first: 50) { operation outcome targets { key value } } }',
        user="alice",
    )
    assert any(
        r["operation"] == "kubeconfig" and {"key": "cluster", "value": "gql-conf"} in r["targets"]
        for r in records.data["auditRecords"]
    ), records.body


def test_a_control_plane_has_a_load_balancer_of_its_own_where_no_shared_address_is_offered(
    api: GraphQL, networks: dict[str, str]
) -> None:
    """The world's orchestrator has no FLEXPLANE_CONTROL_PLANE_SHARED_PORT: loadBalancer is the default and
    the only choice (services/test_cluster_exposure.py has the installation with a shared address)."""
    asked = cluster_input("gql-shared", networks["demo"]) | {"controlPlane": {"exposure": "shared"}}
    refused = created(api, "alice", "demo", asked)
    assert [(e["field"], e["code"]) for e in refused["errors"]] == [("controlPlane.exposure", "INVALID")]
    assert "no shared control-plane address" in refused["errors"][0]["message"]
    made = created(api, "alice", "demo", cluster_input("gql-own", networks["demo"]))
    assert made["kubernetesCluster"]["controlPlane"]["exposure"] == "loadBalancer"
    api(DELETE, user="alice", vdc="demo", variables={"cluster": "gql-own"})
