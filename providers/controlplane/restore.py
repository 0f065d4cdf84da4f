"""A control plane's etcd restored from a snapshot, when its FlexControlPlane asks for it; and the snapshots
there are to restore, listed from the bucket into its status.

A restore is asked for declaratively: ``spec.restore`` ``{id, snapshot}`` (a snapshot's name in the
cluster's folder of the bucket, "" for the newest). A request whose id differs from ``status.restore.id``
is run once, as the manual procedure of docs/operating.md ("Tenant control planes' etcd") is, one phase
per reconcile, never waiting in one:

- ``Stopping``: the API servers' Deployment and the etcd StatefulSet scaled to none, until their status
  says no pod is left (the Jobs take the members' volumes);
- ``Restoring``: one Job per member (:func:`.render.render_etcd_restore_job`, the snapshot as source),
  until every one is complete; a failed Job ends the restore;
- ``Starting``: the Jobs deleted, and the reconcile goes on as usual, which scales etcd and the API
  servers back to the spec; ``Succeeded`` once the control plane is available again.

A control plane made anew by a restore of the management plane's backup (``manage.py restore``: its
FlexControlPlane created again, its namespace new) is asked ``newControlPlane: true`` (and the newest
snapshot): it has no etcd yet, so there is nothing to stop, and its etcd must not start empty. The
request goes to ``Restoring`` at once: the etcd snapshots' Secret and each member's volume claim
(``data-etcd-<member>``, which the StatefulSet then takes as its own, by name) are made first, then the
Jobs; the API servers and etcd are made only once the data is back (``Starting``), so no API server ever
serves the new control plane empty. Without that flag, a control plane with no etcd has nothing to
restore.

``Failed`` ends it otherwise, saying why: no bucket, no etcd yet, a Job's failure, a phase past its
deadline. While it is ``Stopping`` or ``Restoring`` the reconcile goes no further (:attr:`Progress.hold`),
so nothing scales the control plane back up meanwhile. ``status.restore`` (``id``, ``snapshot``,
``phase``, ``message``, ``startedAt``, ``since``: when the phase began, ``finishedAt``) is written with the
rest of the status, and a request already handled (its id there) is never run again, however often the
provider restarts. The condition ``EtcdRestoring`` is True while one is under way (its reason the phase),
False once it ended (``Restored``, or ``NotRestored`` with the reason).

The bucket's snapshots of the cluster are listed at most every :data:`LISTING_INTERVAL` into
``status.etcdBackup`` (the newest :data:`LISTED` first: name, time, size), for the orchestrator, which
holds no credentials of the bucket, to offer them.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.services.backup.sealed import BackupError
from orchestrator.services.backup.stores import DUMP_SUFFIX, S3Settings, S3Store
from providers.common import conditions
from providers.common.settings import seconds
from providers.controlplane import etcd, model, render
from providers.controlplane.kube import Body, Kube

log = logging.getLogger(__name__)

STOPPING, RESTORING, STARTING, SUCCEEDED, FAILED = "Stopping", "Restoring", "Starting", "Succeeded", "Failed"
UNDER_WAY = (STOPPING, RESTORING, STARTING)
CONDITION = "EtcdRestoring"
RESTORED, NOT_RESTORED = "Restored", "NotRestored"
# Available's reason while the control plane is held stopped.
AVAILABLE_REASON = "RestoringEtcd"
# How long each phase may take: the pods to stop; the Jobs (their own deadline is 30 minutes, their pods'
# scheduling on top); the API server to answer again. Past it, the restore ends Failed.
DEADLINES = {
    STOPPING: seconds("RESTORE_STOPPING_DEADLINE", 600.0),
    RESTORING: seconds("RESTORE_RESTORING_DEADLINE", 2100.0),
    STARTING: seconds("RESTORE_STARTING_DEADLINE", 900.0),
}
NO_BUCKET = (
    "the providers have no bucket for etcd snapshots (FLEXPLANE_PROVIDERS_ETCD_BACKUP_S3_URL is not set): "
    "there is no snapshot to restore"
)
# The snapshots listed: the newest, at most this many, at most this often.
LISTED = 50
LISTING_INTERVAL = seconds("SNAPSHOT_LISTING_INTERVAL", 300.0)
LISTING_TIMEOUT = 10.0
UNCHANGED: Any = object()  # :func:`snapshots`: nothing to write
MAX_MESSAGE = 4096  # status.restore.message, as the CRD bounds it


@dataclass(frozen=True)
class Progress:
    """Where a restore is: ``status.restore`` to write (None: none was ever asked for), and whether the
    control plane stays stopped (the reconcile goes no further)."""

    status: Body | None = None
    hold: bool = False


def _now(now: datetime.datetime | None) -> datetime.datetime:
    return now or datetime.datetime.now(datetime.UTC)


def _parse(stamp: Any) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def _snapshot(status: Mapping[str, Any]) -> str:
    return str(status.get("snapshot") or "") or "the newest snapshot"


def _phase(status: Mapping[str, Any], phase: str, message: str, now: datetime.datetime) -> Body:
    moved = {**status, "phase": phase, "message": message[:MAX_MESSAGE], "since": conditions.timestamp(now)}
    if phase in (SUCCEEDED, FAILED):
        moved["finishedAt"] = conditions.timestamp(now)
    return moved


def under_way(fcp: Mapping[str, Any]) -> bool:
    """Whether a restore is asked for and not ended yet (not picked up, or in one of its phases)."""
    asked = str(((fcp.get("spec") or {}).get("restore") or {}).get("id") or "")
    status = (fcp.get("status") or {}).get("restore") or {}
    return bool(asked) and (asked != status.get("id") or status.get("phase") in UNDER_WAY)


def jobs(cp: model.ControlPlane, backup: model.EtcdBackup, snapshot: str) -> list[Body]:
    """The restore Jobs, one per member, from ``snapshot`` ("": the newest)."""
    return [render.render_etcd_restore_job(cp, backup, member, snapshot) for member in range(cp.etcd_members)]


def advance(
    kube: Kube,
    fcp: Mapping[str, Any],
    cp: model.ControlPlane,
    backup: model.EtcdBackup,
    now: datetime.datetime | None = None,
) -> Progress:
    """Take the restore a step further, if one is asked for or under way; nothing is read otherwise."""
    moment = _now(now)
    asked = (fcp.get("spec") or {}).get("restore") or {}
    status: Body = dict((fcp.get("status") or {}).get("restore") or {})
    asked_id = str(asked.get("id") or "")
    if asked_id and asked_id != status.get("id"):
        status = _begin(kube, cp, backup, asked, moment)
    phase = status.get("phase")
    if phase not in UNDER_WAY:
        return Progress(status or None)
    began = _parse(status.get("since")) or moment
    if (moment - began).total_seconds() > DEADLINES[str(phase)]:
        return _past_deadline(kube, cp, status, moment)
    if phase == STOPPING:
        return _stop(kube, cp, backup, status, moment)
    if phase == RESTORING:
        return _restore(kube, cp, backup, status, moment)
    for member in range(cp.etcd_members):  # Starting: the Jobs are done with
        kube.delete("batch/v1", "Job", render.etcd_restore_job_name(member), cp.namespace)
    return Progress(status)


def _begin(
    kube: Kube,
    cp: model.ControlPlane,
    backup: model.EtcdBackup,
    asked: Mapping[str, Any],
    now: datetime.datetime,
) -> Body:
    """A new request's status: Stopping, or Failed when it cannot be run."""
    status: Body = {
        "id": str(asked["id"]),
        "snapshot": str(asked.get("snapshot") or ""),
        "startedAt": conditions.timestamp(now),
        "finishedAt": None,  # an earlier restore's, taken away
    }
    if not backup.enabled:
        return _phase(status, FAILED, NO_BUCKET, now)
    if kube.get("apps/v1", "StatefulSet", model.ETCD, cp.namespace) is None:
        if not asked.get("newControlPlane"):
            return _phase(
                status, FAILED, "the control plane has no etcd yet: there is nothing to restore", now
            )
        _prepare_new(kube, cp, backup)
        return _phase(
            status, RESTORING, f"making etcd anew from {_snapshot(status)} before it first starts", now
        )
    # What an earlier restore left (a failed Job is kept to be looked at): a Job's spec cannot be changed.
    for member in range(cp.etcd_members):
        kube.delete("batch/v1", "Job", render.etcd_restore_job_name(member), cp.namespace)
    return _phase(status, STOPPING, "stopping the API servers and etcd", now)


def _prepare_new(kube: Kube, cp: model.ControlPlane, backup: model.EtcdBackup) -> None:
    """What the restore Jobs of a control plane with no etcd yet need: the snapshots' Secret (the key and
    the bucket's credentials) and each member's volume claim, as the StatefulSet's claim template makes it."""
    kube.ensure(render.render_etcd_backup(cp, backup)[0])
    statefulset = next(m for m in etcd.render_etcd(cp) if m["kind"] == "StatefulSet")
    [template] = statefulset["spec"]["volumeClaimTemplates"]
    for member in range(cp.etcd_members):
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                **template["metadata"],
                "name": f"{template['metadata']['name']}-{model.ETCD}-{member}",
                "namespace": cp.namespace,
            },
            "spec": template["spec"],
        }
        kube.ensure(claim)


def _running(obj: Mapping[str, Any] | None) -> int:
    """The pods a Deployment's or StatefulSet's controller still reports (0 once it saw the scale to none)."""
    if obj is None:
        return 0
    seen = int((obj.get("status") or {}).get("observedGeneration") or 0)
    if seen < int((obj.get("metadata") or {}).get("generation") or 0):
        return max(1, int((obj.get("status") or {}).get("replicas") or 0))
    return int((obj.get("status") or {}).get("replicas") or 0)


def _stop(
    kube: Kube, cp: model.ControlPlane, backup: model.EtcdBackup, status: Body, now: datetime.datetime
) -> Progress:
    running = []
    for kind, name in (("Deployment", model.DEPLOYMENT), ("StatefulSet", model.ETCD)):
        obj = kube.get("apps/v1", kind, name, cp.namespace)
        if obj is not None and (obj.get("spec") or {}).get("replicas") != 0:
            obj = kube.patch("apps/v1", kind, name, cp.namespace, {"spec": {"replicas": 0}})
        running.append(_running(obj))
    apiservers, members = running
    if apiservers or members:
        waiting = (
            f"stopping the API servers and etcd: {apiservers} API server pod(s), "
            f"{members} etcd member(s) left"
        )
        return Progress({**status, "message": waiting}, hold=True)
    for job in jobs(cp, backup, str(status.get("snapshot") or "")):
        kube.ensure(job)
    restoring = f"restoring etcd from {_snapshot(status)}"
    return Progress(_phase(status, RESTORING, restoring, now), hold=True)


def _job_failure(job: Mapping[str, Any]) -> str | None:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Failed" and condition.get("status") == conditions.TRUE:
            said = ": ".join(str(c) for c in (condition.get("reason"), condition.get("message")) if c)
            return said or "failed"
    return None


def _complete(job: Mapping[str, Any]) -> bool:
    return conditions.is_true((job.get("status") or {}).get("conditions"), "Complete")


def _restore(
    kube: Kube, cp: model.ControlPlane, backup: model.EtcdBackup, status: Body, now: datetime.datetime
) -> Progress:
    done = 0
    for manifest in jobs(cp, backup, str(status.get("snapshot") or "")):
        name = manifest["metadata"]["name"]
        job = kube.get("batch/v1", "Job", name, cp.namespace) or kube.ensure(manifest)  # gone: made again
        failure = _job_failure(job)
        if failure is not None:
            _delete_running(kube, cp)
            message = (
                f"the restore Job {cp.namespace}/{name} failed ({failure}); etcd starts again on its data"
            )
            return Progress(_phase(status, FAILED, message, now))
        done += _complete(job)
    if done < cp.etcd_members:
        message = f"restoring etcd from {_snapshot(status)}: {done} of {cp.etcd_members} member(s) restored"
        return Progress({**status, "message": message}, hold=True)
    starting = f"etcd restored from {_snapshot(status)}; starting etcd and the API servers"
    return Progress(_phase(status, STARTING, starting, now))


def _delete_running(kube: Kube, cp: model.ControlPlane) -> None:
    """Delete the restore Jobs still running (none may write a member's data once etcd starts again); a
    failed or complete one is kept, to be looked at, until the next restore."""
    for member in range(cp.etcd_members):
        name = render.etcd_restore_job_name(member)
        job = kube.get("batch/v1", "Job", name, cp.namespace)
        if job is not None and _job_failure(job) is None and not _complete(job):
            kube.delete("batch/v1", "Job", name, cp.namespace)


def _past_deadline(kube: Kube, cp: model.ControlPlane, status: Body, now: datetime.datetime) -> Progress:
    phase = str(status.get("phase"))
    minutes = round(DEADLINES[phase] / 60)
    if phase == STARTING:
        message = (
            f"etcd was restored from {_snapshot(status)}, but the API server did not answer within "
            f"{minutes} minutes"
        )
    else:
        _delete_running(kube, cp)
        message = (
            f"the restore did not finish {phase.lower()} within {minutes} minutes; etcd starts again on its "
            "data"
        )
    return Progress(_phase(status, FAILED, message, now))


def conclude(progress: Progress, available: bool, now: datetime.datetime | None = None) -> Body | None:
    """``status.restore`` once the reconcile went on: Starting ends Succeeded once the control plane is
    available again."""
    status = progress.status
    if status is None or status.get("phase") != STARTING or not available:
        return status
    return _phase(
        status, SUCCEEDED, f"etcd restored from {_snapshot(status)}; the API server answers", _now(now)
    )


def condition(status: Mapping[str, Any], generation: int) -> conditions.Condition:
    """``EtcdRestoring`` for a restore's status."""
    phase = str(status.get("phase") or "")
    message = str(status.get("message") or "")
    if phase in UNDER_WAY:
        return conditions.condition(CONDITION, True, phase, message, generation=generation)
    reason = RESTORED if phase == SUCCEEDED else NOT_RESTORED
    return conditions.condition(CONDITION, False, reason, message, generation=generation)


def held_status(fcp: Mapping[str, Any], progress: Progress) -> Body:
    """What to write while the control plane is held stopped: the restore, and Available False saying so."""
    assert progress.status is not None
    generation = int(fcp["metadata"].get("generation") or 0)
    message = f"the control plane is stopped while its etcd is restored: {progress.status.get('message')}"
    found = conditions.set_condition(
        (fcp.get("status") or {}).get("conditions"),
        conditions.condition("Available", False, AVAILABLE_REASON, message, generation=generation),
    )
    return {
        "restore": progress.status,
        "conditions": conditions.set_condition(found, condition(progress.status, generation)),
    }


# ------------------------------------------------------------------------------------ snapshots


def list_snapshots(cp: model.ControlPlane, backup: model.EtcdBackup) -> list[Body]:
    """The cluster's snapshots in the bucket, newest first (at most :data:`LISTED`): name (its key in the
    cluster's folder, what ``spec.restore.snapshot`` names), time and size. Raises ``BackupError``."""
    s3 = S3Settings(
        endpoint=backup.endpoint or None,
        region=backup.region,
        access_key=backup.access_key or None,
        secret_key=backup.secret_key or None,
        timeout=LISTING_TIMEOUT,
    ).client()
    found = S3Store(backup.s3_url, s3, suffix=DUMP_SUFFIX).objects(backup.dump_name(cp))
    return [{"name": o.name, "time": o.created, "size": o.size} for o in reversed(found[-LISTED:])]


def snapshots(
    fcp: Mapping[str, Any],
    cp: model.ControlPlane,
    backup: model.EtcdBackup,
    now: datetime.datetime | None = None,
) -> Any:
    """``status.etcdBackup`` to write: the snapshots listed again when the last listing is older than
    :data:`LISTING_INTERVAL` (a bucket that does not answer keeps the last list and says why), None to take
    an old list away once there is no bucket, :data:`UNCHANGED` otherwise."""
    previous = (fcp.get("status") or {}).get("etcdBackup")
    if not backup.enabled:
        return None if previous else UNCHANGED
    moment = _now(now)
    listed = _parse((previous or {}).get("listedAt"))
    if listed is not None and 0 <= (moment - listed).total_seconds() < LISTING_INTERVAL:
        return UNCHANGED
    block: Body = {"listedAt": conditions.timestamp(moment)}
    try:
        block["snapshots"] = list_snapshots(cp, backup)
        block["error"] = None  # an earlier listing's, taken away
    except BackupError as error:
        log.warning("the etcd snapshots of %s/%s were not listed: %s", cp.vdc, cp.cluster, error)
        block["snapshots"] = list((previous or {}).get("snapshots") or [])
        block["error"] = str(error)[:1024]
    return block
