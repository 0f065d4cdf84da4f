"""A cluster's control-plane health (``KubernetesCluster.health``) through the GraphQL API in this process:
read from what the control-plane provider writes in its FlexControlPlane's ``status.health``
(providers/controlplane/health.py), on the tenant clusters' objects in memory.

No provider runs here: each test writes the objects a create makes (the services' own builders) and the
health block as the provider writes it, in a cluster of its own.
"""

from __future__ import annotations

from typing import Any

from orchestrator.models.clusters import FLEX_CONTROL_PLANE, ControlPlaneHealth, namespace_of
from tests.orchestrator.fakekube import FakeClusterApi
from tests.orchestrator.inprocess import InProcessApi

HEALTH = """query($name: String!) { kubernetesCluster(name: $name) { name health {
  healthy apiServerUp apiServerReason apiServerMessage etcdMembers etcdMembersReady
  konnectivityAgents konnectivityAgentsConnected } } }"""
NAMESPACE = namespace_of("demo")


def provider_wrote(clusters: FakeClusterApi, name: str, health: dict[str, Any]) -> None:
    clusters.patch(FLEX_CONTROL_PLANE, NAMESPACE, name, {"status": {"health": health}})


def read(api: InProcessApi, name: str, user: str = "alice") -> Any:
    answer = api(HEALTH, user=user, vdc="demo", variables={"name": name})
    assert answer.errors == [], answer.body
    return answer.data["kubernetesCluster"]["health"]


def test_before_the_provider_has_looked_there_is_no_health(api: InProcessApi, cluster: str) -> None:
    assert read(api, cluster) is None


def test_a_healthy_control_plane_reads_up_with_every_member_and_agent(
    api: InProcessApi, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        {
            "apiServer": {"ready": True, "reason": "Ready", "message": ""},
            "etcd": {"members": 3, "readyMembers": 3},
            "konnectivity": {"observed": True, "agents": 4, "connectedAgents": 4},
        },
    )

    assert read(api, cluster) == {
        "healthy": True,
        "apiServerUp": True,
        "apiServerReason": "Ready",
        "apiServerMessage": "",
        "etcdMembers": 3,
        "etcdMembersReady": 3,
        "konnectivityAgents": 4,
        "konnectivityAgentsConnected": 4,
    }


def test_an_agent_not_connected_or_an_etcd_member_down_is_not_healthy(
    api: InProcessApi, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        {
            "apiServer": {"ready": True, "reason": "Ready", "message": ""},
            "etcd": {"members": 3, "readyMembers": 2},
            "konnectivity": {"observed": True, "agents": 4, "connectedAgents": 3},
        },
    )

    health = read(api, cluster)

    assert health["healthy"] is False
    assert (health["etcdMembersReady"], health["etcdMembers"]) == (2, 3)
    assert (health["konnectivityAgentsConnected"], health["konnectivityAgents"]) == (3, 4)


def test_an_unreachable_api_server_says_why_and_leaves_the_agents_unknown(
    api: InProcessApi, tenant_clusters: FakeClusterApi, cluster: str
) -> None:
    provider_wrote(
        tenant_clusters,
        cluster,
        {
            "apiServer": {"ready": False, "reason": "Unreachable", "message": "connection refused"},
            "etcd": {"members": 1, "readyMembers": 1},
            "konnectivity": {"observed": False, "agents": 0, "connectedAgents": 0},
        },
    )

    health = read(api, cluster)

    assert (health["apiServerUp"], health["apiServerReason"], health["apiServerMessage"]) == (
        False,
        "Unreachable",
        "connection refused",
    )
    assert health["konnectivityAgents"] is health["konnectivityAgentsConnected"] is None
    assert health["healthy"] is False


def test_another_vdcs_member_reads_no_health_of_it(api: InProcessApi, cluster: str) -> None:
    answer = api(HEALTH, user="bob", vdc="other", variables={"name": cluster})
    assert answer.codes == ["NOT_FOUND"]


def test_a_health_block_of_the_wrong_shape_reads_as_what_it_can_say() -> None:
    assert ControlPlaneHealth.of({}) is None
    assert ControlPlaneHealth.of({"health": "up"}) is None
    odd = ControlPlaneHealth.of({"health": {"apiServer": {"ready": "yes"}, "etcd": {"members": -1}}})
    assert odd == ControlPlaneHealth(
        api_server_up=False,
        api_server_reason="",
        api_server_message="",
        etcd_members=0,
        etcd_members_ready=0,
        konnectivity_agents=None,
        konnectivity_agents_connected=None,
    )
