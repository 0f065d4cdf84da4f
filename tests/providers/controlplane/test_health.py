"""What the provider sees of a control plane's health (``status.health``): the pure reading of what the
objects say, then the reconcile against the devstack's Kubernetes emulator.

The management cluster is an emulator over HTTP; the tenant's API server another, over TLS with the
serving certificate the provider made, at the address the test gives the Service as a LoadBalancer
controller would. Nothing runs the pods: the test writes the statuses their controllers would (the
Deployment's, the etcd StatefulSet's, the tenant's konnectivity-agent DaemonSet's). The tests after the
pure ones run in order, each from where the previous one left the world.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devstack.kube import KubeServer
from orchestrator.sources.kube_objects import CLUSTER
from providers.common.objects import owner_reference_to
from providers.controlplane import health, model, steps
from providers.controlplane.kube import Kube
from tests import addresses
from tests.providers.controlplane.test_steps import secret_files, written

VDC_NS = "vdc-demo"
CLUSTER_NAME = "api"
CP_NS = "fpcp-demo-api"
LB_ADDRESS = f"127.{addresses.WORLD}.205.4"
SETTINGS = steps.Settings()
NOT_READY = (
    "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]poststarthook/rbac ok\nreadyz check failed"
)


# ------------------------------------------------------------------------------------ pure


def test_a_readyz_answer_is_reduced_to_the_checks_that_failed() -> None:
    assert health.failed_checks(NOT_READY) == "etcd failed: reason withheld"
    assert health.failed_checks("") == "no answer"
    assert health.failed_checks("connection refused") == "connection refused"


def test_the_agents_are_the_daemonsets_ready_of_its_scheduled_and_none_without_a_status() -> None:
    assert health.agents_of({"status": {"desiredNumberScheduled": 3, "numberReady": 2}}) == (2, 3)
    assert health.agents_of({"status": {}}) == (0, 0)
    assert health.agents_of(None) == (0, 0)


def test_etcd_members_are_the_statefulsets_ready_of_its_replicas() -> None:
    assert health.etcd_members({"spec": {"replicas": 3}, "status": {"readyReplicas": 2}}) == (2, 3)
    assert health.etcd_members({"spec": {"replicas": 1}}) == (0, 1)
    assert health.etcd_members(None) == (0, 0)


def test_the_block_writes_every_key_so_a_merge_patch_leaves_nothing_stale() -> None:
    unreachable = health.block(health.Tenant(health.UNREACHABLE, "connection refused"), None)
    ready = health.block(health.Tenant(health.READY, agents=(2, 2)), {"spec": {"replicas": 1}})

    assert unreachable == {
        "apiServer": {"ready": False, "reason": "Unreachable", "message": "connection refused"},
        "etcd": {"members": 0, "readyMembers": 0},
        "konnectivity": {"observed": False, "agents": 0, "connectedAgents": 0},
    }
    assert ready["apiServer"] == {"ready": True, "reason": "Ready", "message": ""}
    assert ready["konnectivity"] == {"observed": True, "agents": 2, "connectedAgents": 2}
    assert {key: set(value) for key, value in ready.items()} == {
        key: set(value) for key, value in unreachable.items()
    }


def test_why_an_api_server_did_not_answer_reads_the_same_at_every_reconcile() -> None:
    first = OSError("<HTTPSConnection object at 0x7f3a2b1c>: Failed to establish a new connection")
    again = OSError("<HTTPSConnection object at 0x7f99ee00>: Failed to establish a new connection")

    assert steps._unreachable(first) == steps._unreachable(again)
    assert steps._unreachable(first) == "<HTTPSConnection object>: Failed to establish a new connection"


# ------------------------------------------------------------------------------------ the reconcile


@pytest.fixture(scope="module")
def tenant_server(kube: Kube) -> Iterator[KubeServer]:
    """The tenant's API server, started once the provider made its serving certificate."""
    files = secret_files(kube, CP_NS, "pki")
    with KubeServer.start(LB_ADDRESS, 6443, tls=(files["apiserver.crt"], files["apiserver.key"])) as tenant:
        yield tenant


@pytest.fixture(scope="module")
def tenant_kube(kube: Kube, tenant_server: KubeServer) -> Iterator[Kube]:
    """The provider's own client of the tenant cluster (its admin, TLS verified against the cluster CA)."""
    cp = model.ControlPlane("demo", CLUSTER_NAME, "v1.34.2", endpoint_host=LB_ADDRESS)
    client = steps.tenant_client(cp, secret_files(kube, CP_NS, "pki"))
    yield client
    client.close()


def fcp(kube: Kube) -> dict[str, Any]:
    found = kube.get(steps.FCP_API, "FlexControlPlane", CLUSTER_NAME, VDC_NS)
    assert found is not None
    return found


def reconcile(kube: Kube) -> dict[str, Any]:
    """One reconcile, written; the FlexControlPlane's status.health as the server has it then."""
    current = fcp(kube)
    outcome = steps.reconcile(kube, current, SETTINGS)
    assert outcome is not None, "paused"
    steps.write(kube, current, outcome)
    status: dict[str, Any] = fcp(kube)["status"]
    return status


def patch_status(
    kube: Kube, api_version: str, kind: str, name: str, namespace: str, status: dict[str, Any]
) -> None:
    kube.patch(api_version, kind, name, namespace, {"status": status}, subresource="status")


def test_before_any_replica_is_ready_the_api_server_has_none_to_answer_with(kube: Kube) -> None:
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VDC_NS}})
    made = written(CLUSTER_NAME)
    kube.ensure(made["ProxmoxCluster"])
    cluster = kube.ensure(made["Cluster"])
    control_plane = made["FlexControlPlane"]
    control_plane["metadata"]["ownerReferences"] = [owner_reference_to(cluster, CLUSTER)]
    kube.ensure(control_plane)
    with pytest.raises(steps.Waiting):  # no LoadBalancer address yet: the Service is made
        steps.reconcile(kube, fcp(kube), SETTINGS)
    ingress = {"loadBalancer": {"ingress": [{"ip": LB_ADDRESS}]}}
    patch_status(kube, "v1", "Service", model.SERVICE, CP_NS, ingress)

    status = reconcile(kube)

    assert status["health"] == {
        "apiServer": {
            "ready": False,
            "reason": "NoReadyReplicas",
            "message": "no API server replica is ready",
        },
        "etcd": {"members": 1, "readyMembers": 0},
        "konnectivity": {"observed": False, "agents": 0, "connectedAgents": 0},
    }


def test_a_ready_api_server_and_etcd_member_are_seen_and_no_node_runs_an_agent_yet(
    kube: Kube, tenant_server: KubeServer
) -> None:
    deployment = kube.get("apps/v1", "Deployment", model.DEPLOYMENT, CP_NS)
    assert deployment is not None
    rolled = {"observedGeneration": deployment["metadata"]["generation"], "replicas": 2, "updatedReplicas": 2}
    patch_status(
        kube,
        "apps/v1",
        "Deployment",
        model.DEPLOYMENT,
        CP_NS,
        {**rolled, "readyReplicas": 2, "availableReplicas": 2},
    )
    patch_status(kube, "apps/v1", "StatefulSet", model.ETCD, CP_NS, {"replicas": 1, "readyReplicas": 1})

    status = reconcile(kube)

    assert status["health"] == {
        "apiServer": {"ready": True, "reason": "Ready", "message": ""},
        "etcd": {"members": 1, "readyMembers": 1},
        "konnectivity": {"observed": True, "agents": 0, "connectedAgents": 0},
    }
    assert status["conditions"][0]["status"] == "True"


def test_the_agents_connected_are_the_tenants_daemonset_ready_of_scheduled(
    kube: Kube, tenant_kube: Kube
) -> None:
    agents = {
        "desiredNumberScheduled": 3,
        "currentNumberScheduled": 3,
        "numberReady": 2,
        "numberAvailable": 2,
    }
    patch_status(tenant_kube, "apps/v1", "DaemonSet", model.KONNECTIVITY_AGENT, "kube-system", agents)

    status = reconcile(kube)

    assert status["health"]["konnectivity"] == {"observed": True, "agents": 3, "connectedAgents": 2}


def test_an_etcd_member_lost_is_seen(kube: Kube) -> None:
    patch_status(kube, "apps/v1", "StatefulSet", model.ETCD, CP_NS, {"readyReplicas": 0})

    status = reconcile(kube)

    assert status["health"]["etcd"] == {"members": 1, "readyMembers": 0}


def test_an_api_server_that_answers_not_ready_says_which_checks_failed(
    kube: Kube, tenant_server: KubeServer
) -> None:
    tenant_server.emulator["get /readyz"] << 500 << NOT_READY.encode()

    status = reconcile(kube)

    assert status["health"]["apiServer"] == {
        "ready": False,
        "reason": "NotReady",
        "message": "etcd failed: reason withheld",
    }
    assert status["health"]["konnectivity"]["observed"] is False
    available = status["conditions"][0]
    assert (available["status"], available["reason"]) == ("False", "APIServerNotReady")
    assert "etcd failed" in available["message"]


def test_an_api_server_that_does_not_answer_is_unreachable(kube: Kube, tenant_server: KubeServer) -> None:
    tenant_server.stop()

    status = reconcile(kube)

    api_server = status["health"]["apiServer"]
    assert (api_server["ready"], api_server["reason"]) == (False, "Unreachable")
    assert "Connection refused" in api_server["message"]
    assert api_server["message"]
    assert status["health"]["konnectivity"] == {"observed": False, "agents": 0, "connectedAgents": 0}
    assert status["conditions"][0]["reason"] == "APIServerUnreachable"


def test_a_reconcile_that_finds_the_same_health_writes_nothing(server: KubeServer, kube: Kube) -> None:
    reconcile(kube)
    before = server.emulator.revision

    reconcile(kube)

    assert server.emulator.revision == before
