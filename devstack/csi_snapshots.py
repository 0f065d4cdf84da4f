"""Test-only stand-ins for what drives a CSI controller's snapshots in a real tenant cluster: SIG Storage's
snapshot-controller and its external-snapshotter sidecar, as :mod:`devstack.csi_sidecars` plays the others.

Never shipped. Against a tenant cluster's API server holding the snapshot CRDs the control-plane provider
installs (``providers.controlplane.snapshots``) and the driver's controller over its gRPC socket, one
:meth:`SnapshotSidecars.sweep` does what they would each do once, as their documentation describes it:

- **a VolumeSnapshot** of a class whose driver is the driver's, of a bound claim, not ready yet: the
  snapshot is taken (``CreateSnapshot`` named ``snapshot-<its uid>`` of the claim's volume, with the
  sidecar's ``csi.storage.k8s.io/volumesnapshot*`` parameters), its VolumeSnapshotContent
  ``snapcontent-<its uid>`` is made (the class's deletion policy, the volume as its source), and both
  statuses say what the controller answered (``readyToUse``, ``restoreSize``, ``snapshotHandle``); a
  snapshot the controller refuses stays unready, the refusal in ``failures``;
- **a VolumeSnapshotContent** whose VolumeSnapshot is gone, of policy ``Delete``: the snapshot is deleted
  (``DeleteSnapshot``), then the content goes;
- **a claim's data source** (the external-provisioner's part, :meth:`handle`): the snapshot handle of a
  VolumeSnapshot once it is ready.

What it does NOT do: finalizers, pre-provisioned contents, group snapshots, events, retries with back-off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from providers.cloud.tenant import MERGE_PATCH
from providers.controlplane.snapshots import GROUP, VERSION
from providers.csi.identity import DRIVER
from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc

log = logging.getLogger(__name__)

SNAPSHOTS, CONTENTS, CLASSES = "volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses"
NANOSECONDS = 1_000_000_000


def _document(answer: object) -> dict[str, Any]:
    """An answer of the custom objects' API (typed ``object`` by the client), as the dict it is."""
    assert isinstance(answer, dict), answer
    return answer


class SnapshotSidecars:
    """The snapshot-controller and external-snapshotter of one tenant cluster: its API server (``api``),
    the driver's controller (``controller``), and ``call``, which makes a controller call and records a
    refusal by object (``CsiSidecars._call``)."""

    def __init__(
        self,
        api: client.ApiClient,
        controller: csi_pb2_grpc.ControllerStub,
        call: Callable[[str, Any, Any], Any],
    ) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.controller = controller
        self.call = call

    def _cluster(self, plural: str) -> list[dict[str, Any]]:
        return list(
            _document(self.custom.list_cluster_custom_object(GROUP, VERSION, plural)).get("items") or []
        )

    def sweep(self, volumes: dict[str, dict[str, Any]]) -> None:
        """Each one's pass, once: snapshots taken of the claims' volumes (``volumes``: the
        PersistentVolumes by name), then contents whose snapshot is gone deleted."""
        classes = {c["metadata"]["name"]: c for c in self._cluster(CLASSES) if c.get("driver") == DRIVER}
        for snapshot in self._cluster(SNAPSHOTS):
            cls = classes.get(snapshot["spec"].get("volumeSnapshotClassName") or "")
            if cls is not None and not (snapshot.get("status") or {}).get("readyToUse"):
                self._take(snapshot, cls, volumes)
        self._delete_orphans(
            {(s["metadata"]["namespace"], s["metadata"]["name"]) for s in self._cluster(SNAPSHOTS)}
        )

    def handle(self, namespace: str, name: str) -> str | None:
        """The snapshot handle of VolumeSnapshot ``name`` once it is ready (None before)."""
        try:
            snapshot = _document(
                self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, SNAPSHOTS, name)
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        status = snapshot.get("status") or {}
        if not status.get("readyToUse") or not status.get("boundVolumeSnapshotContentName"):
            return None
        content = _document(
            self.custom.get_cluster_custom_object(
                GROUP, VERSION, CONTENTS, status["boundVolumeSnapshotContentName"]
            )
        )
        handle: str | None = (content.get("status") or {}).get("snapshotHandle")
        return handle

    def _take(
        self, snapshot: dict[str, Any], cls: dict[str, Any], volumes: dict[str, dict[str, Any]]
    ) -> None:
        meta = snapshot["metadata"]
        namespace, name, uid = meta["namespace"], meta["name"], meta["uid"]
        what = f"snapshot {namespace}/{name}"
        claim_name = str((snapshot["spec"].get("source") or {}).get("persistentVolumeClaimName") or "")
        claim = self.api.sanitize_for_serialization(
            self.core.read_namespaced_persistent_volume_claim(claim_name, namespace)
        )
        pv = volumes.get(claim["spec"].get("volumeName") or "")
        if pv is None or "csi" not in pv["spec"]:
            log.info("%s: its claim %s is not bound to a volume of the driver's yet", what, claim_name)
            return
        handle = pv["spec"]["csi"]["volumeHandle"]
        content_name = f"snapcontent-{uid}"
        request = csi.CreateSnapshotRequest(
            source_volume_id=handle,
            name=f"snapshot-{uid}",
            parameters={
                "csi.storage.k8s.io/volumesnapshot/name": name,
                "csi.storage.k8s.io/volumesnapshot/namespace": namespace,
                "csi.storage.k8s.io/volumesnapshotcontent/name": content_name,
            },
        )
        taken = self.call(what, self.controller.CreateSnapshot, request)
        if taken is None:
            return
        made = taken.snapshot
        content = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "VolumeSnapshotContent",
            "metadata": {"name": content_name},
            "spec": {
                "driver": DRIVER,
                "deletionPolicy": cls.get("deletionPolicy") or "Delete",
                "source": {"volumeHandle": handle},
                "volumeSnapshotClassName": cls["metadata"]["name"],
                "volumeSnapshotRef": {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": "VolumeSnapshot",
                    "namespace": namespace,
                    "name": name,
                    "uid": uid,
                },
            },
        }
        try:
            self.custom.create_cluster_custom_object(GROUP, VERSION, CONTENTS, content)
        except ApiException as exc:
            if exc.status != 409:  # made by an earlier sweep, its snapshot not ready then
                raise
        created = made.creation_time.seconds * NANOSECONDS + made.creation_time.nanos
        self.custom.patch_cluster_custom_object_status(
            GROUP,
            VERSION,
            CONTENTS,
            content_name,
            {
                "status": {
                    "snapshotHandle": made.snapshot_id,
                    "readyToUse": made.ready_to_use,
                    "restoreSize": made.size_bytes,
                    "creationTime": created,
                }
            },
            _content_type=MERGE_PATCH,
        )
        self.custom.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            namespace,
            SNAPSHOTS,
            name,
            {
                "status": {
                    "boundVolumeSnapshotContentName": content_name,
                    "readyToUse": made.ready_to_use,
                    "restoreSize": str(made.size_bytes),
                }
            },
            _content_type=MERGE_PATCH,
        )

    def _delete_orphans(self, snapshots: set[tuple[str, str]]) -> None:
        for content in self._cluster(CONTENTS):
            spec, status = content["spec"], content.get("status") or {}
            ref = spec.get("volumeSnapshotRef") or {}
            if spec.get("driver") != DRIVER or (ref.get("namespace"), ref.get("name")) in snapshots:
                continue
            name = content["metadata"]["name"]
            if spec.get("deletionPolicy") == "Delete" and status.get("snapshotHandle"):
                request = csi.DeleteSnapshotRequest(snapshot_id=status["snapshotHandle"])
                if self.call(f"content {name}", self.controller.DeleteSnapshot, request) is None:
                    continue
            self.custom.delete_cluster_custom_object(GROUP, VERSION, CONTENTS, name)
