"""A tenant cluster's cloud controller's identity (``services.clusters.identity``), over the API in this
process on the light world, Zitadel in memory and the management cluster's tenant-cluster objects in
memory: the service account ``k8s-<cluster>`` of the cluster's VDC and the Secret
``<cluster>-cloud-controller`` holding its key, made with the cluster and gone with it, taken back when
the create fails after them, and a create refused, having written nothing, when Zitadel cannot make them.

Each test makes clusters of its own names in VDC demo and deletes what it made.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from orchestrator.errors import Unavailable
from orchestrator.models.clusters import (
    CLUSTER_NAME_LABEL,
    KUBEADM_CONFIG_TEMPLATE,
    VDC_LABEL,
    WRITTEN,
    namespace_of,
)
from orchestrator.services.service_accounts import MAX_LIFETIME, PLATFORM
from orchestrator.sources.kube_objects import (
    CLOUD_CONTROLLER_KEY,
    cloud_controller_account,
    cloud_controller_secret,
)
from orchestrator.sources.zitadel import MachineUser
from tests.orchestrator.clusterkit import (
    CREATE_CLUSTER,
    cluster_input,
    ensure_default_network,
    ensure_versions,
)
from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi

VDC = "demo"
NAMESPACE = namespace_of(VDC)
DELETE = """mutation($cluster: String!) { deleteKubernetesCluster(cluster: $cluster) {
  kubernetesCluster { name phase } errors { field message code } } }"""
ACCOUNTS = "query($v: ID) { serviceAccounts(vdc: $v) { id name vdc expires createdBy } }"
CREATE_ACCOUNT = """mutation($v: ID!, $n: String!, $e: DateTime!) {
  createServiceAccount(vdc: $v, name: $n, expiresAt: $e) {
    serviceAccount { id } errors { field code message } } }"""
REVOKE = "mutation($id: ID!) { revokeServiceAccount(id: $id) { serviceAccount { id } errors { code } } }"


@dataclass
class FlakyZitadel(FakeZitadel):
    """Zitadel in memory that, ``down``, answers no request to make a machine user (as one that does not
    answer in time: ``Unavailable``)."""

    down: bool = False

    def create_machine_user(
        self, organization_id: str, username: str, name: str, description: str = ""
    ) -> str:
        if self.down:
            raise Unavailable("Zitadel", "Zitadel did not answer in time")
        return super().create_machine_user(organization_id, username, name, description)


@pytest.fixture(scope="module")
def zitadel() -> FlakyZitadel:
    """The module's Zitadel (the light conftest's, with a switch to take it down)."""
    fake = FlakyZitadel.seeded()
    assert isinstance(fake, FlakyZitadel)
    return fake


@pytest.fixture(scope="module")
def network(api: InProcessApi) -> str:
    ensure_versions(api)
    return ensure_default_network(api, VDC)


@pytest.fixture
def clusters(
    api: InProcessApi, tenant_clusters: FakeClusterApi, zitadel: FlakyZitadel, network: str
) -> Iterator[list[str]]:
    """The names of the clusters a test makes; deleted afterwards, whatever the test left."""
    names: list[str] = []
    yield names
    zitadel.down = False
    tenant_clusters.refusals.clear()
    for name in names:
        api(DELETE, user="alice", vdc=VDC, variables={"cluster": name})


def create(api: InProcessApi, network: str, name: str) -> dict[str, Any]:
    answer = api(CREATE_CLUSTER, user="alice", vdc=VDC, variables={"input": cluster_input(name, network)})
    assert answer.errors == [], answer.body
    payload: dict[str, Any] = answer.data["createKubernetesCluster"]
    return payload


def accounts_of(zitadel: FakeZitadel, cluster: str) -> list[MachineUser]:
    username = f"sa.{VDC}.{cloud_controller_account(cluster)}"
    return [m for m in zitadel.machine_users(username) if m.username == username]


def kubelet_args(tenant_clusters: FakeClusterApi, cluster: str) -> list[dict[str, str]]:
    [template] = tenant_clusters.list(KUBEADM_CONFIG_TEMPLATE, NAMESPACE, f"{CLUSTER_NAME_LABEL}={cluster}")
    args: list[dict[str, str]] = template.spec["template"]["spec"]["joinConfiguration"]["nodeRegistration"][
        "kubeletExtraArgs"
    ]
    return args


def nothing_of(tenant_clusters: FakeClusterApi, zitadel: FakeZitadel, cluster: str) -> None:
    """No object, no Secret and no service account of ``cluster`` is left."""
    for resource in WRITTEN:
        assert tenant_clusters.list(resource, NAMESPACE, f"{CLUSTER_NAME_LABEL}={cluster}") == []
    assert tenant_clusters.secret(NAMESPACE, cloud_controller_secret(cluster)) is None
    assert accounts_of(zitadel, cluster) == []


def test_a_cluster_gets_a_service_account_of_its_vdc_and_its_key_in_a_secret(
    api: InProcessApi,
    tenant_clusters: FakeClusterApi,
    zitadel: FakeZitadel,
    network: str,
    clusters: list[str],
) -> None:
    clusters.append("ident-a")
    before = datetime.datetime.now(datetime.UTC)
    payload = create(api, network, "ident-a")
    assert payload["errors"] == []

    [account] = accounts_of(zitadel, "ident-a")
    assert account.name == "cluster ident-a's cloud controller"
    assert json.loads(account.description)["createdBy"] == PLATFORM
    assert zitadel.roles_of(account.id).keys() == {"USER", f"vdc:{VDC}"}
    assert account.id in zitadel.jwt_machines
    [expires] = zitadel.machine_keys[account.id].values()
    assert before + MAX_LIFETIME <= expires <= datetime.datetime.now(datetime.UTC) + MAX_LIFETIME

    secret = tenant_clusters.secret(NAMESPACE, cloud_controller_secret("ident-a"))
    assert secret is not None
    assert secret.labels == {VDC_LABEL: VDC, CLUSTER_NAME_LABEL: "ident-a"}
    assert set(secret.data) == {CLOUD_CONTROLLER_KEY}
    key = json.loads(secret.data[CLOUD_CONTROLLER_KEY])
    assert (key["type"], key["userId"]) == ("serviceaccount", account.id)
    assert key["keyId"] in zitadel.machine_keys[account.id]

    # Its kubelets leave their nodes to the controller, beside their provider ID.
    args = kubelet_args(tenant_clusters, "ident-a")
    assert {"name": "cloud-provider", "value": "external"} in args
    assert args[0]["name"] == "provider-id"


def test_the_tenant_sees_it_among_the_vdcs_service_accounts_and_names_like_it_are_kept(
    api: InProcessApi, network: str, clusters: list[str]
) -> None:
    clusters.append("ident-b")
    create(api, network, "ident-b")

    listed = api(ACCOUNTS, user="alice", variables={"v": VDC}).data["serviceAccounts"]
    [shown] = [a for a in listed if a["name"] == cloud_controller_account("ident-b")]
    assert (shown["vdc"], shown["createdBy"]) == (VDC, PLATFORM)

    expires = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    mine = api(CREATE_ACCOUNT, user="alice", variables={"v": VDC, "n": "k8s-mine", "e": expires})
    [error] = mine.data["createServiceAccount"]["errors"]
    assert (error["field"], error["code"]) == ("name", "INVALID")
    assert "k8s-" in error["message"]


def test_deleting_the_cluster_revokes_its_account_and_deletes_the_secret(
    api: InProcessApi,
    tenant_clusters: FakeClusterApi,
    zitadel: FakeZitadel,
    network: str,
    clusters: list[str],
) -> None:
    clusters.append("ident-c")
    create(api, network, "ident-c")
    assert accounts_of(zitadel, "ident-c") != []

    deleted = api(DELETE, user="alice", vdc=VDC, variables={"cluster": "ident-c"})
    assert deleted.data["deleteKubernetesCluster"]["errors"] == []
    nothing_of(tenant_clusters, zitadel, "ident-c")


def test_a_member_may_revoke_it_by_hand_and_the_cluster_still_deletes(
    api: InProcessApi,
    tenant_clusters: FakeClusterApi,
    zitadel: FakeZitadel,
    network: str,
    clusters: list[str],
) -> None:
    """Revoking it is the tenant's right: the controller then gets no next token (the docs say what that
    costs); the cluster's delete finds it gone and goes on."""
    clusters.append("ident-d")
    create(api, network, "ident-d")
    [account] = accounts_of(zitadel, "ident-d")

    revoked = api(REVOKE, user="alice", variables={"id": account.id})
    assert revoked.data["revokeServiceAccount"]["errors"] == []
    assert accounts_of(zitadel, "ident-d") == []

    deleted = api(DELETE, user="alice", vdc=VDC, variables={"cluster": "ident-d"})
    assert deleted.data["deleteKubernetesCluster"]["errors"] == []
    nothing_of(tenant_clusters, zitadel, "ident-d")


def test_a_create_that_fails_after_the_identity_takes_it_back(
    api: InProcessApi,
    tenant_clusters: FakeClusterApi,
    zitadel: FakeZitadel,
    network: str,
    clusters: list[str],
) -> None:
    clusters.append("ident-e")
    tenant_clusters.refusals["Cluster"] = Unavailable("the management cluster", "it did not answer in time")

    payload = create(api, network, "ident-e")
    [error] = payload["errors"]
    assert error["code"] == "UNAVAILABLE"
    assert "nothing was left behind" in error["message"]
    nothing_of(tenant_clusters, zitadel, "ident-e")


def test_a_create_is_refused_naming_the_identity_provider_when_it_cannot_make_the_account(
    api: InProcessApi,
    tenant_clusters: FakeClusterApi,
    zitadel: FlakyZitadel,
    network: str,
    clusters: list[str],
) -> None:
    clusters.append("ident-f")
    zitadel.down = True

    payload = create(api, network, "ident-f")
    [error] = payload["errors"]
    assert error["code"] == "UNAVAILABLE"
    assert "identity provider (Zitadel)" in error["message"]
    assert "cluster ident-f's cloud controller" in error["message"]
    nothing_of(tenant_clusters, zitadel, "ident-f")


def test_an_account_left_by_an_earlier_cluster_of_the_name_is_made_anew(
    api: InProcessApi,
    tenant_clusters: FakeClusterApi,
    zitadel: FakeZitadel,
    network: str,
    clusters: list[str],
) -> None:
    """A delete that could not revoke it (Zitadel down then) leaves it; the next cluster of that name gets
    a new one, and the key in its Secret is the new one's."""
    clusters.append("ident-g")
    create(api, network, "ident-g")
    [first] = accounts_of(zitadel, "ident-g")
    for resource in WRITTEN:  # the cluster gone, as if its delete had not reached Zitadel
        for obj in tenant_clusters.list(resource, NAMESPACE, f"{CLUSTER_NAME_LABEL}=ident-g"):
            tenant_clusters.delete(resource, NAMESPACE, obj.name)

    assert create(api, network, "ident-g")["errors"] == []
    [second] = accounts_of(zitadel, "ident-g")
    assert second.id != first.id
    secret = tenant_clusters.secret(NAMESPACE, cloud_controller_secret("ident-g"))
    assert secret is not None
    assert json.loads(secret.data[CLOUD_CONTROLLER_KEY])["userId"] == second.id
