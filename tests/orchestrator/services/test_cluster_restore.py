"""A tenant cluster's etcd restored through the services: the request written on its FlexControlPlane
(``spec.restore``), checked against the snapshots the control-plane provider listed, refused while the
cluster goes or a restore is under way; and the snapshots and the last restore read from its status.

No provider runs here: the test writes ``status.etcdBackup`` and ``status.restore`` as the control-plane
provider would (tests/providers/controlplane/test_restore.py runs the provider's side).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from orchestrator.errors import Conflict, NotFound, ValidationFailed
from orchestrator.models.clusters import CLUSTER, FLEX_CONTROL_PLANE, namespace_of
from orchestrator.services import clusters
from tests.orchestrator.services.clusterkit import alice, spec
from tests.orchestrator.services.conftest import MakeContext

OLDER, NEWER = "20261201T100000Z-a1b2c3.fpdump", "20261201T110000Z-d4e5f6.fpdump"
LISTED = {
    "listedAt": "2026-12-01T11:02:00Z",
    "snapshots": [
        {"name": NEWER, "time": "2026-12-01T11:00:00Z", "size": 40960},
        {"name": OLDER, "time": "2026-12-01T10:00:00Z", "size": 36864},
    ],
}


def control_plane(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    r = FLEX_CONTROL_PLANE
    found: Any = custom.get_namespaced_custom_object(r.group, r.version, namespace_of("demo"), r.plural, name)
    return dict(found)


def provider_reports(custom: client.CustomObjectsApi, name: str, status: dict[str, Any]) -> None:
    """What the control-plane provider would write in the FlexControlPlane's status."""
    r = FLEX_CONTROL_PLANE
    custom.patch_namespaced_custom_object_status(
        r.group, r.version, namespace_of("demo"), r.plural, name, {"status": status}
    )


def test_a_restore_asks_the_provider_for_the_snapshot_with_a_fresh_id(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "back"))
    provider_reports(custom, "back", {"etcdBackup": LISTED})
    listed = clusters.get_cluster(ctx, "back").snapshots
    assert [(s.name, s.size) for s in listed] == [(NEWER, 40960), (OLDER, 36864)]
    assert listed[0].taken_at is not None
    assert listed[0].taken_at.isoformat() == "2026-12-01T11:00:00+00:00"

    asked = clusters.restore_cluster(ctx, "back", OLDER)

    restore = control_plane(custom, "back")["spec"]["restore"]
    assert restore["snapshot"] == OLDER
    assert len(restore["id"]) == 36  # a UUID
    assert asked.restore is not None
    assert (asked.restore.id, asked.restore.phase, asked.restore.under_way) == (
        restore["id"],
        "Requested",
        True,
    )


def test_no_snapshot_named_is_the_newest_and_a_second_restore_waits_for_the_first(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "twice"))
    provider_reports(custom, "twice", {"etcdBackup": LISTED})
    clusters.restore_cluster(ctx, "twice")
    first = control_plane(custom, "twice")["spec"]["restore"]
    assert first["snapshot"] == ""
    with pytest.raises(Conflict, match="under way \\(Requested\\)"):
        clusters.restore_cluster(ctx, "twice", NEWER)
    taken_up = {"id": first["id"], "snapshot": "", "phase": "Restoring", "message": "restoring etcd"}
    provider_reports(custom, "twice", {"restore": taken_up | {"startedAt": "2026-12-01T11:05:00Z"}})
    with pytest.raises(Conflict, match="under way \\(Restoring\\)"):
        clusters.restore_cluster(ctx, "twice", NEWER)
    assert control_plane(custom, "twice")["spec"]["restore"] == first  # untouched

    ended = taken_up | {
        "phase": "Succeeded",
        "message": "etcd restored",
        "finishedAt": "2026-12-01T11:09:00Z",
    }
    provider_reports(custom, "twice", {"restore": ended})
    done = clusters.get_cluster(ctx, "twice").restore
    assert done is not None
    assert (done.phase, done.under_way, done.message) == ("Succeeded", False, "etcd restored")
    assert done.finished_at is not None
    again = clusters.restore_cluster(ctx, "twice", NEWER)
    assert again.restore is not None
    assert again.restore.id != first["id"]
    assert again.restore.snapshot == NEWER


@pytest.mark.parametrize("snapshot", ["20200101T000000Z-000000.fpdump", "../etcd-other-web/x.fpdump"])
def test_a_snapshot_not_listed_is_invalid_naming_the_field(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None, snapshot: str
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "bad"))
    provider_reports(custom, "bad", {"etcdBackup": LISTED})
    with pytest.raises(ValidationFailed) as invalid:
        clusters.restore_cluster(ctx, "bad", snapshot)
    assert invalid.value.field == "snapshot"
    assert "restore" not in control_plane(custom, "bad")["spec"]


def test_a_cluster_without_snapshots_has_nothing_to_restore(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "bare"))
    assert clusters.get_cluster(ctx, "bare").snapshots == ()
    assert clusters.get_cluster(ctx, "bare").restore is None
    with pytest.raises(ValidationFailed, match="no etcd snapshot") as invalid:
        clusters.restore_cluster(ctx, "bare")
    assert invalid.value.field == "snapshot"


def test_a_cluster_being_deleted_is_not_restored(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "going"))
    provider_reports(custom, "going", {"etcdBackup": LISTED})
    r = CLUSTER
    finalizer = {"metadata": {"finalizers": ["test.flexplane.io/hold"]}}
    custom.patch_namespaced_custom_object(
        r.group, r.version, namespace_of("demo"), r.plural, "going", finalizer
    )
    custom.delete_namespaced_custom_object(r.group, r.version, namespace_of("demo"), r.plural, "going")
    try:
        with pytest.raises(Conflict, match="being deleted"):
            clusters.restore_cluster(ctx, "going")
    finally:
        custom.patch_namespaced_custom_object(
            r.group, r.version, namespace_of("demo"), r.plural, "going", {"metadata": {"finalizers": None}}
        )


def test_another_vdcs_cluster_is_not_found(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    clusters.create_cluster(ctx, spec(ctx, "mine"))
    provider_reports(custom, "mine", {"etcdBackup": LISTED})
    bob = make_context("USER", "vdc:other")
    bob.vdc = "other"
    with pytest.raises(NotFound):
        clusters.restore_cluster(bob, "mine")
    assert "restore" not in control_plane(custom, "mine")["spec"]
