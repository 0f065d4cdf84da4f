"""Replacing and patching, and the optimistic concurrency of resourceVersions: a stale write conflicts."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client import ApiException

from tests.devstack.kube.support import (
    NAMESPACE,
    config_map,
    holder_of,
    lease,
    meta,
    status_of,
    version_of,
)


def test_replace_swaps_the_whole_object(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", data={"old": "1", "kept": "1"}))

    replaced = core.replace_namespaced_config_map(
        "catalog", NAMESPACE, config_map("catalog", data={"kept": "2"})
    )

    assert replaced.data == {"kept": "2"}
    assert core.read_namespaced_config_map("catalog", NAMESPACE).data == {"kept": "2"}


def test_replacing_a_missing_object_answers_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_config_map("absent", NAMESPACE, config_map("absent"))

    assert raised.value.status == 404
    assert status_of(raised.value)["reason"] == "NotFound"


def test_a_stale_lease_update_conflicts(leases: client.CoordinationV1Api) -> None:
    created = leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    stale = version_of(created)
    leases.replace_namespaced_lease("quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-a", stale))

    with pytest.raises(ApiException) as raised:
        leases.replace_namespaced_lease(
            "quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-b", stale)
        )

    assert raised.value.status == 409
    assert status_of(raised.value)["kind"] == "Status"
    assert status_of(raised.value)["reason"] == "Conflict"
    assert holder_of(leases, "quota-vdc-demo") == "replica-a"


def test_a_stale_config_map_patch_conflicts(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog"))
    core.patch_namespaced_config_map("catalog", NAMESPACE, {"data": {"zone": "zone-b"}})
    stale_patch = {
        "metadata": {"resourceVersion": version_of(created)},
        "data": {"zone": "zone-c"},
    }

    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_config_map("catalog", NAMESPACE, stale_patch)

    assert raised.value.status == 409
    assert status_of(raised.value)["reason"] == "Conflict"


def test_an_update_without_a_resource_version_is_unconditional(leases: client.CoordinationV1Api) -> None:
    leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    leases.replace_namespaced_lease("quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-a"))

    replaced = leases.replace_namespaced_lease(
        "quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", "replica-b")
    )

    assert replaced.spec is not None
    assert replaced.spec.holder_identity == "replica-b"


def test_two_concurrent_updates_of_one_lease_version_let_exactly_one_win(
    leases: client.CoordinationV1Api, kubeconfig: Path
) -> None:
    """The quota lock: two replicas read the same Lease and race to take (or renew) it; one must lose.

    Each take sets renewTime: as on a real cluster, a write that changes nothing is no write, and
    would let a second writer of the same resourceVersion through.
    """
    replicas = ["replica-a", "replica-b"]
    clients = {name: config.new_client_from_config(config_file=str(kubeconfig)) for name in replicas}
    barrier = threading.Barrier(len(replicas))

    def take(name: str, version: str) -> str | int:
        replica = client.CoordinationV1Api(clients[name])
        barrier.wait()
        try:
            replica.replace_namespaced_lease(
                "quota-vdc-demo", NAMESPACE, lease("quota-vdc-demo", name, version)
            )
        except ApiException as error:
            return int(error.status)
        return name

    leases.create_namespaced_lease(NAMESPACE, lease("quota-vdc-demo"))
    with ThreadPoolExecutor(len(replicas)) as pool:
        for _ in range(10):
            version = version_of(leases.read_namespaced_lease("quota-vdc-demo", NAMESPACE))
            outcomes = list(pool.map(take, replicas, [version] * len(replicas)))
            winners = [outcome for outcome in outcomes if outcome in replicas]

            assert sorted(outcomes, key=str) == sorted([409, *winners], key=str)
            assert winners == [holder_of(leases, "quota-vdc-demo")]
    for api_client in clients.values():
        api_client.close()


def test_a_patch_that_changes_nothing_keeps_the_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(NAMESPACE, config_map("catalog", data={"zone": "zone-a"}))

    patched = core.patch_namespaced_config_map("catalog", NAMESPACE, {"data": {"zone": "zone-a"}})

    assert version_of(patched) == version_of(created)


def test_a_json_patch_applies_its_operations(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(NAMESPACE, config_map("catalog", data={"zone": "zone-a", "old": "1"}))
    operations: list[dict[str, Any]] = [
        {"op": "replace", "path": "/data/zone", "value": "zone-b"},
        {"op": "remove", "path": "/data/old"},
        {"op": "add", "path": "/metadata/labels", "value": {"flexplane.io/kind": "zone"}},
    ]

    patched = core.patch_namespaced_config_map("catalog", NAMESPACE, operations)

    assert patched.data == {"zone": "zone-b"}
    assert meta(patched).labels == {"flexplane.io/kind": "zone"}
