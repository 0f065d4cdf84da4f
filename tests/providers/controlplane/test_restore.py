"""An etcd restore asked for on the FlexControlPlane (``spec.restore``), run by the reconcile as a
state machine against the devstack's Kubernetes emulator; and the snapshots listed from moto's S3 server
into its status.

The tenant's API server is an emulator over TLS at the address the test hands the Service, as in
test_steps.py. Nothing runs the pods or the Jobs: the test writes the statuses their controllers would
(the Deployment's, the etcd StatefulSet's, a restore Job's Complete or Failed). The reconcile tests run
in order, each from where the previous one left the world.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from devstack.kube import KubeServer
from orchestrator.services.backup.dumps import store_dump
from orchestrator.services.backup.stores import DUMP_SUFFIX, S3Settings, S3Store
from orchestrator.sources.kube_objects import CLUSTER
from providers.common.objects import owner_reference_to
from providers.controlplane import model, restore, steps
from providers.controlplane.kube import Kube
from tests import addresses
from tests.providers.controlplane.test_steps import secret_files, written

VDC_NS = "vdc-demo"
NAME = "rst"
CP_NS = "fpcp-demo-rst"
LB_ADDRESS = addresses.address(addresses.ETCD_RESTORE, 1)
BUCKET = "etcd-restores"
KEY = bytes(range(32))
EARLY = datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC)


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(
        ip_address=addresses.address(addresses.ETCD_RESTORE, 2), port=0, verbose=False
    )
    server.start()
    host, port = server.get_host_and_port()
    try:
        endpoint = f"http://{host}:{port}"
        S3Settings(endpoint, access_key="test", secret_key="test").client().create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(scope="module")
def settings(s3_endpoint: str) -> steps.Settings:
    backup = model.EtcdBackup(
        s3_url=f"s3://{BUCKET}/flexplane",
        endpoint=s3_endpoint,
        key=base64.b64encode(KEY).decode(),
        access_key="test",
        secret_key="test",
    )
    return steps.Settings(etcd_backup=backup)


def snapshot(s3_endpoint: str, tmp_path: Path, hour: int, size: int) -> str:
    """A snapshot of the cluster sealed into the bucket as the CronJob's backup_dump does; its name."""
    taken = tmp_path / f"etcd-{hour}.db"
    taken.write_bytes(b"s" * size)
    store = S3Store(
        f"s3://{BUCKET}/flexplane",
        S3Settings(s3_endpoint, access_key="test", secret_key="test").client(),
        DUMP_SUFFIX,
    )
    sealed = store_dump(taken, store, KEY, name="etcd-demo-rst", now=EARLY.replace(hour=hour))
    return sealed.where.rsplit("/", 1)[-1]


def fcp(kube: Kube) -> dict[str, Any]:
    found = kube.get(steps.FCP_API, "FlexControlPlane", NAME, VDC_NS)
    assert found is not None
    return found


def reconcile(kube: Kube, settings: steps.Settings) -> dict[str, Any]:
    """One reconcile, written; the FlexControlPlane's status as the server has it then."""
    current = fcp(kube)
    outcome = steps.reconcile(kube, current, settings)
    assert outcome is not None, "paused"
    steps.write(kube, current, outcome)
    status: dict[str, Any] = fcp(kube)["status"]
    return status


def obj(kube: Kube, kind: str, name: str) -> dict[str, Any]:
    found = kube.get("apps/v1" if kind != "Job" else "batch/v1", kind, name, CP_NS)
    assert found is not None, (kind, name)
    return found


def replicas(kube: Kube) -> tuple[int, int]:
    """The replicas the API servers' Deployment and the etcd StatefulSet are asked for."""
    return obj(kube, "Deployment", model.DEPLOYMENT)["spec"]["replicas"], obj(
        kube, "StatefulSet", model.ETCD
    )["spec"]["replicas"]


def report(kube: Kube, *, apiservers: int, members: int) -> None:
    """What the Deployment and StatefulSet controllers would write once that many pods run, ready."""
    for kind, name, count in (
        ("Deployment", model.DEPLOYMENT, apiservers),
        ("StatefulSet", model.ETCD, members),
    ):
        seen = obj(kube, kind, name)["metadata"]["generation"]
        status = {"observedGeneration": seen, "replicas": count, "readyReplicas": count}
        status |= {"updatedReplicas": count, "availableReplicas": count}
        kube.patch("apps/v1", kind, name, CP_NS, {"status": status}, subresource="status")


def end_job(kube: Kube, kind: str, reason: str = "", message: str = "") -> None:
    """The Job controller's status of etcd-restore-0 once it ended (Complete, or Failed with a reason)."""
    ended = {"type": kind, "status": "True", "reason": reason, "message": message}
    status: dict[str, Any] = {"conditions": [ended]}
    status |= {"succeeded": 1} if kind == "Complete" else {"failed": 1}
    kube.patch("batch/v1", "Job", "etcd-restore-0", CP_NS, {"status": status}, subresource="status")


def ask(kube: Kube, request: str, snapshot_name: str = "") -> None:
    kube.patch(
        steps.FCP_API,
        "FlexControlPlane",
        NAME,
        VDC_NS,
        {"spec": {"restore": {"id": request, "snapshot": snapshot_name}}},
    )


def condition(status: dict[str, Any], kind: str) -> tuple[str, str]:
    found = next(c for c in status["conditions"] if c["type"] == kind)
    return found["status"], found["reason"]


def job(kube: Kube) -> dict[str, Any] | None:
    return kube.get("batch/v1", "Job", "etcd-restore-0", CP_NS)


# ------------------------------------------------------------------------------------ pure


def test_a_restore_is_under_way_from_its_request_until_it_ended() -> None:
    asked = {"spec": {"restore": {"id": "r1"}}}
    assert not restore.under_way({"spec": {}})
    assert restore.under_way(asked)
    assert restore.under_way({**asked, "status": {"restore": {"id": "r1", "phase": "Restoring"}}})
    assert not restore.under_way({**asked, "status": {"restore": {"id": "r1", "phase": "Failed"}}})
    assert restore.under_way({**asked, "status": {"restore": {"id": "r0", "phase": "Succeeded"}}})


def test_a_snapshots_time_is_its_names_stamp() -> None:
    from orchestrator.services.backup.stores import StoredObject

    assert StoredObject("p/etcd-demo-web/20261201T093000Z-a1b2c3.fpdump", 5).created == "2026-12-01T09:30:00Z"
    assert StoredObject("p/etcd-demo-web/other.fpdump", 5).created == ""


def test_without_an_etcd_a_restore_ends_failed_at_once(kube: Kube, settings: steps.Settings) -> None:
    cp = model.ControlPlane("demo", "none", "v1.34.2")
    progress = restore.advance(kube, {"spec": {"restore": {"id": "r1"}}}, cp, settings.etcd_backup)
    assert progress.status is not None
    assert (progress.status["phase"], progress.hold) == ("Failed", False)
    assert "no etcd yet" in progress.status["message"]


def test_nothing_is_read_while_no_restore_is_asked_for(
    server: KubeServer, kube: Kube, settings: steps.Settings
) -> None:
    requests = len(list(server.emulator))
    cp = model.ControlPlane("demo", NAME, "v1.34.2")
    assert restore.advance(kube, {"spec": {}}, cp, settings.etcd_backup) == restore.Progress()
    assert len(list(server.emulator)) == requests


# ------------------------------------------------------------------------------------ the reconcile


def test_a_running_control_plane_lists_its_snapshots_newest_first(kube: Kube, running: None) -> None:
    status = fcp(kube)["status"]
    listed = status["etcdBackup"]["snapshots"]
    assert [s["time"] for s in listed] == ["2026-12-01T11:00:00Z", "2026-12-01T10:00:00Z"]
    assert listed[0]["name"].startswith("20261201T110000Z-")
    assert listed[0]["name"].endswith(".fpdump")
    assert listed[0]["size"] > listed[1]["size"] > 2048  # sealed: the dump and its header
    assert "error" not in status["etcdBackup"]
    assert condition(status, "Available") == ("True", "Available")


@pytest.fixture(scope="module")
def running(
    kube: Kube, settings: steps.Settings, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The control plane made, its snapshots in the bucket, running and available."""
    folder = tmp_path_factory.mktemp("snapshots")
    snapshot(s3_endpoint, folder, 10, 3000)
    snapshot(s3_endpoint, folder, 11, 4000)
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VDC_NS}})
    made = written(NAME)
    kube.ensure(made["ProxmoxCluster"])
    cluster = kube.ensure(made["Cluster"])
    control_plane = made["FlexControlPlane"]
    control_plane["metadata"]["ownerReferences"] = [owner_reference_to(cluster, CLUSTER)]
    kube.ensure(control_plane)
    with pytest.raises(steps.Waiting):  # the Service is made, without an address yet
        steps.reconcile(kube, fcp(kube), settings)
    ingress = {"loadBalancer": {"ingress": [{"ip": LB_ADDRESS}]}}
    kube.patch("v1", "Service", model.SERVICE, CP_NS, {"status": ingress}, subresource="status")
    reconcile(kube, settings)
    files = secret_files(kube, CP_NS, "pki")
    with KubeServer.start(LB_ADDRESS, 6443, tls=(files["apiserver.crt"], files["apiserver.key"])):
        report(kube, apiservers=2, members=1)
        reconcile(kube, settings)
        yield


def test_the_bucket_is_listed_again_only_once_the_listing_is_old(
    kube: Kube, settings: steps.Settings, s3_endpoint: str, tmp_path: Path, running: None
) -> None:
    newest = snapshot(s3_endpoint, tmp_path, 12, 1000)
    assert len(reconcile(kube, settings)["etcdBackup"]["snapshots"]) == 2
    old = {"etcdBackup": {"listedAt": "2026-01-01T00:00:00Z"}}
    kube.patch(steps.FCP_API, "FlexControlPlane", NAME, VDC_NS, {"status": old}, subresource="status")
    assert reconcile(kube, settings)["etcdBackup"]["snapshots"][0]["name"] == newest


def test_a_restore_asked_for_stops_the_api_servers_and_etcd_first(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    chosen = fcp(kube)["status"]["etcdBackup"]["snapshots"][1]["name"]
    ask(kube, "r1", chosen)
    status = reconcile(kube, settings)
    assert status["restore"]["id"] == "r1"
    assert status["restore"]["snapshot"] == chosen
    assert status["restore"]["phase"] == "Stopping"
    assert status["restore"]["startedAt"]
    assert replicas(kube) == (0, 0)
    assert job(kube) is None
    assert condition(status, "EtcdRestoring") == ("True", "Stopping")
    assert condition(status, "Available") == ("False", "RestoringEtcd")


def test_while_pods_are_left_the_reconcile_does_not_scale_them_back(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    report(kube, apiservers=1, members=1)
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Stopping"
    assert "1 API server pod(s), 1 etcd member(s) left" in status["restore"]["message"]
    assert replicas(kube) == (0, 0)
    assert job(kube) is None


def test_once_they_are_gone_the_restore_jobs_run_from_the_snapshot(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    report(kube, apiservers=0, members=0)
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Restoring"
    made = job(kube)
    assert made is not None
    fetch = made["spec"]["template"]["spec"]["initContainers"][0]
    chosen = status["restore"]["snapshot"]
    assert f"--s3=s3://{BUCKET}/flexplane/etcd-demo-rst/{chosen}" in fetch["command"]
    volumes = {v["name"]: v for v in made["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"] == {"claimName": "data-etcd-0"}
    assert condition(status, "EtcdRestoring") == ("True", "Restoring")


def test_while_the_jobs_run_nothing_is_scaled_back(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Restoring"
    assert "0 of 1 member(s) restored" in status["restore"]["message"]
    assert replicas(kube) == (0, 0)


def test_once_they_complete_etcd_and_the_api_servers_start_again(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    end_job(kube, "Complete")
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Starting"
    assert replicas(kube) == (2, 1)
    assert condition(status, "EtcdRestoring") == ("True", "Starting")


def test_once_the_api_server_answers_the_restore_succeeded_and_its_jobs_are_gone(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    report(kube, apiservers=2, members=1)
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Succeeded"
    assert status["restore"]["finishedAt"] >= status["restore"]["startedAt"]
    assert job(kube) is None
    assert condition(status, "EtcdRestoring") == ("False", "Restored")
    assert condition(status, "Available") == ("True", "Available")


def test_a_restore_handled_is_not_run_again(
    server: KubeServer, kube: Kube, settings: steps.Settings, running: None
) -> None:
    before = server.emulator.revision
    status = reconcile(kube, settings)  # as a restarted provider would: status.restore says it is done
    assert server.emulator.revision == before
    assert status["restore"]["phase"] == "Succeeded"
    assert job(kube) is None
    assert replicas(kube) == (2, 1)


def test_a_failed_job_ends_the_restore_failed_with_its_reason_and_etcd_starts_again(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    ask(kube, "r2")
    reconcile(kube, settings)
    report(kube, apiservers=0, members=0)
    status = reconcile(kube, settings)
    assert (status["restore"]["phase"], status["restore"]["snapshot"]) == ("Restoring", "")
    assert "the newest snapshot" in status["restore"]["message"]
    assert "finishedAt" not in status["restore"]  # the last restore's, taken away
    end_job(kube, "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Failed"
    assert "etcd-restore-0 failed (BackoffLimitExceeded: Job has reached" in status["restore"]["message"]
    assert status["restore"]["finishedAt"]
    assert condition(status, "EtcdRestoring") == ("False", "NotRestored")
    assert replicas(kube) == (2, 1)
    assert job(kube) is not None  # kept, to be looked at


def test_the_next_restore_takes_the_failed_job_away_and_one_past_its_deadline_fails(
    kube: Kube, settings: steps.Settings, running: None
) -> None:
    report(kube, apiservers=2, members=1)
    ask(kube, "r3")
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Stopping"
    assert job(kube) is None
    late = {"restore": {"since": "2026-01-01T00:00:00Z"}}
    kube.patch(steps.FCP_API, "FlexControlPlane", NAME, VDC_NS, {"status": late}, subresource="status")
    status = reconcile(kube, settings)
    assert status["restore"]["phase"] == "Failed"
    assert "did not finish stopping within 10 minutes" in status["restore"]["message"]
    assert replicas(kube) == (2, 1)


def test_without_a_bucket_a_restore_ends_failed_saying_so_and_nothing_stops(
    kube: Kube, running: None
) -> None:
    ask(kube, "r4")
    status = reconcile(kube, steps.Settings())
    assert status["restore"]["id"] == "r4"
    assert status["restore"]["phase"] == "Failed"
    assert "no bucket for etcd snapshots" in status["restore"]["message"]
    assert replicas(kube) == (2, 1)
    assert "etcdBackup" not in status  # no bucket: no snapshots to offer


# ---------------------------------------------------------------------------- a control plane made anew

ANEW = "anew"
ANEW_NS = "fpcp-demo-anew"


def test_a_control_plane_made_anew_by_a_platform_restore_fills_etcd_before_anything_starts(
    kube: Kube, settings: steps.Settings, s3_endpoint: str, tmp_path: Path
) -> None:
    taken = tmp_path / "etcd.db"
    taken.write_bytes(b"s" * 100)
    store = S3Store(
        f"s3://{BUCKET}/flexplane",
        S3Settings(s3_endpoint, access_key="test", secret_key="test").client(),
        DUMP_SUFFIX,
    )
    store_dump(taken, store, KEY, name="etcd-demo-anew", now=EARLY)
    kube.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VDC_NS}})
    made = written(ANEW)
    kube.ensure(made["ProxmoxCluster"])
    cluster = kube.ensure(made["Cluster"])
    control_plane = made["FlexControlPlane"]
    control_plane["metadata"]["ownerReferences"] = [owner_reference_to(cluster, CLUSTER)]
    control_plane["spec"]["restore"] = {"id": "platform-restore-1", "snapshot": "", "newControlPlane": True}
    kube.ensure(control_plane)

    def anew() -> dict[str, Any]:
        found = kube.get(steps.FCP_API, "FlexControlPlane", ANEW, VDC_NS)
        assert found is not None
        return found

    def reconciled() -> dict[str, Any]:
        outcome = steps.reconcile(kube, anew(), settings)
        assert outcome is not None
        steps.write(kube, anew(), outcome)
        status: dict[str, Any] = anew()["status"]
        return status

    status = reconciled()
    assert status["restore"]["phase"] == "Restoring"
    assert condition(status, "Available") == ("False", "RestoringEtcd")
    # Nothing that would serve or start an empty etcd: only what the Jobs need.
    for kind in ("Deployment", "StatefulSet"):
        assert (
            kube.get("apps/v1", kind, model.DEPLOYMENT if kind == "Deployment" else model.ETCD, ANEW_NS)
            is None
        )
    assert kube.get("v1", "Service", model.SERVICE, ANEW_NS) is None
    claim = kube.get("v1", "PersistentVolumeClaim", "data-etcd-0", ANEW_NS)
    assert claim is not None
    assert claim["spec"]["resources"]["requests"]["storage"] == "4Gi"
    assert kube.get("v1", "Secret", model.ETCD_BACKUP, ANEW_NS) is not None
    restoring = kube.get("batch/v1", "Job", "etcd-restore-0", ANEW_NS)
    assert restoring is not None
    fetch = restoring["spec"]["template"]["spec"]["initContainers"][0]
    assert any(f"s3://{BUCKET}/flexplane/etcd-demo-anew" in part for part in fetch["command"])

    assert reconciled()["restore"]["phase"] == "Restoring"  # until the Job completes
    ended = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
    kube.patch("batch/v1", "Job", "etcd-restore-0", ANEW_NS, {"status": ended}, subresource="status")
    with pytest.raises(steps.Waiting):  # it goes on as any control plane: its Service waits for an address
        steps.reconcile(kube, anew(), settings)
    ingress = {"loadBalancer": {"ingress": [{"ip": addresses.address(addresses.ETCD_RESTORE, 3)}]}}
    kube.patch("v1", "Service", model.SERVICE, ANEW_NS, {"status": ingress}, subresource="status")
    status = reconciled()
    assert status["restore"]["phase"] == "Starting"
    assert kube.get("apps/v1", "StatefulSet", model.ETCD, ANEW_NS) is not None  # takes data-etcd-0
    assert kube.get("apps/v1", "Deployment", model.DEPLOYMENT, ANEW_NS) is not None
    reconciled()
    assert kube.get("batch/v1", "Job", "etcd-restore-0", ANEW_NS) is None


def test_a_new_control_plane_not_marked_so_has_nothing_to_restore(
    kube: Kube, settings: steps.Settings
) -> None:
    cp = model.ControlPlane("demo", "unmarked", "v1.34.2")
    progress = restore.advance(kube, {"spec": {"restore": {"id": "r1"}}}, cp, settings.etcd_backup)
    assert progress.status is not None
    assert progress.status["phase"] == "Failed"
    assert kube.get("v1", "PersistentVolumeClaim", "data-etcd-0", cp.namespace) is None
