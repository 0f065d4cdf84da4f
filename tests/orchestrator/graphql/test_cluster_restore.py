"""A cluster's etcd snapshots and their restore through the GraphQL API of the world's orchestrator, over HTTP
with the identity provider's tokens: the snapshots and the last restore read from the FlexControlPlane's
status, ``restoreKubernetesCluster`` writing the request (audited), refused as CONFLICT while one is under
way, INVALID naming ``snapshot`` for one not listed, NOT_FOUND in another VDC. The service's finer cases:
``tests/orchestrator/services/test_cluster_restore.py``; the provider's side:
``tests/providers/controlplane/test_restore.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from devstack.world import World
from orchestrator.models.clusters import FLEX_CONTROL_PLANE, namespace_of
from tests.apikit import GraphQL
from tests.orchestrator.clusterkit import CREATE_CLUSTER, cluster_input, delete_all, prepare

OLDER, NEWER = "20261201T100000Z-a1b2c3.fpdump", "20261201T110000Z-d4e5f6.fpdump"
FIELDS = (
    "name snapshots { name takenAt size } restore { id snapshot phase message underWay startedAt finishedAt }"
)
CLUSTER = f"query($name: String!) {{ kubernetesCluster(name: $name) {{ {FIELDS} }} }}"
RESTORE = f"""mutation($cluster: String!, $snapshot: String) {{
  restoreKubernetesCluster(cluster: $cluster, snapshot: $snapshot) {{
    kubernetesCluster {{ {FIELDS} }} errors {{ field message code }} }} }}"""


@pytest.fixture(scope="module")
def custom(world: World, api: GraphQL) -> Iterator[client.CustomObjectsApi]:
    prepare(world, api)
    api_client = config.new_client_from_config(config_file=str(world.kubeconfig))
    yield client.CustomObjectsApi(api_client)
    api_client.close()
    delete_all(world, "demo")


def provider_writes(custom: client.CustomObjectsApi, name: str, status: dict[str, Any]) -> None:
    """What the control-plane provider writes in the FlexControlPlane's status."""
    r = FLEX_CONTROL_PLANE
    custom.patch_namespaced_custom_object_status(
        r.group, r.version, namespace_of("demo"), r.plural, name, {"status": status}
    )


def test_alice_restores_her_cluster_from_a_listed_snapshot_and_follows_it(
    api: GraphQL, custom: client.CustomObjectsApi, world: World
) -> None:
    network = prepare(world, api)["demo"]
    made = api(
        CREATE_CLUSTER, user="alice", vdc="demo", variables={"input": cluster_input("gql-back", network)}
    )
    assert made.data["createKubernetesCluster"]["errors"] == []
    listed = [
        {"name": NEWER, "time": "2026-12-01T11:00:00Z", "size": 40960},
        {"name": OLDER, "time": "2026-12-01T10:00:00Z", "size": 36864},
    ]
    provider_writes(
        custom, "gql-back", {"etcdBackup": {"listedAt": "2026-12-01T11:02:00Z", "snapshots": listed}}
    )

    read = api(CLUSTER, user="alice", vdc="demo", variables={"name": "gql-back"}).data["kubernetesCluster"]
    assert read["snapshots"][0] == {"name": NEWER, "takenAt": "2026-12-01T11:00:00+00:00", "size": 40960.0}
    assert read["restore"] is None

    bobs = api(RESTORE, user="bob", vdc="other", variables={"cluster": "gql-back"})
    assert [e["code"] for e in bobs.data["restoreKubernetesCluster"]["errors"]] == ["NOT_FOUND"]
    unknown = api(
        RESTORE, user="alice", vdc="demo", variables={"cluster": "gql-back", "snapshot": "nope.fpdump"}
    )
    assert [(e["code"], e["field"]) for e in unknown.data["restoreKubernetesCluster"]["errors"]] == [
        ("INVALID", "snapshot")
    ]

    asked = api(RESTORE, user="alice", vdc="demo", variables={"cluster": "gql-back", "snapshot": OLDER})
    payload = asked.data["restoreKubernetesCluster"]
    assert payload["errors"] == []
    restore = payload["kubernetesCluster"]["restore"]
    assert (restore["snapshot"], restore["phase"], restore["underWay"]) == (OLDER, "Requested", True)
    again = api(RESTORE, user="alice", vdc="demo", variables={"cluster": "gql-back"})
    assert [e["code"] for e in again.data["restoreKubernetesCluster"]["errors"]] == ["CONFLICT"]

    ended = {"id": restore["id"], "snapshot": OLDER, "phase": "Failed", "message": "the restore Job failed"}
    ended |= {"startedAt": "2026-12-01T11:05:00Z", "finishedAt": "2026-12-01T11:06:00Z"}
    provider_writes(custom, "gql-back", {"restore": ended})
    read = api(CLUSTER, user="alice", vdc="demo", variables={"name": "gql-back"}).data["kubernetesCluster"]
    assert read["restore"] | {"id": ""} == {
        "id": "",
        "snapshot": OLDER,
        "phase": "Failed",
        "message": "the restore Job failed",
        "underWay": False,
        "startedAt": "2026-12-01T11:05:00+00:00",
        "finishedAt": "2026-12-01T11:06:00+00:00",
    }
    retried = api(RESTORE, user="alice", vdc="demo", variables={"cluster": "gql-back"})
    assert retried.data["restoreKubernetesCluster"]["errors"] == []
    assert retried.data["restoreKubernetesCluster"]["kubernetesCluster"]["restore"]["id"] != restore["id"]
