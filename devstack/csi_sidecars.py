"""Test-only stand-ins for what drives a CSI controller in a real tenant cluster: the external-provisioner,
external-attacher and external-resizer sidecars, and the PV controller's binding (kube-controller-manager).

Never shipped. Against a tenant cluster's API server (the devstack's Kubernetes emulator) and the driver's
controller over its gRPC socket (``providers.csi``), one :meth:`CsiSidecars.sweep` does what they would
each do once, as the sidecars' documentation and the CSI spec describe it:

- **provisioner**: a PersistentVolumeClaim of a StorageClass whose provisioner is the driver, not yet bound,
  gets a volume (``CreateVolume`` named ``pvc-<claim's uid>``, its size the claim's request, its capability
  from the claim's access modes and volume mode, the class's parameters with the sidecar's
  ``csi.storage.k8s.io/pvc/*`` and ``pv/name`` ones, and, with ``WaitForFirstConsumer``, the topology of the
  node the scheduler chose, ``volume.kubernetes.io/selected-node``: no node chosen, no volume yet) and a
  PersistentVolume for it (``pv.kubernetes.io/provisioned-by``, the volume's topology as node affinity);
- **binding**: the claim and that volume are bound to each other (the PV controller's part);
- **deleter**: a released PersistentVolume (its claim deleted) of reclaim policy ``Delete`` has its volume
  deleted (``DeleteVolume``), then goes;
- **attacher**: a VolumeAttachment of the driver is published to its node (``ControllerPublishVolume``,
  ``status.attached`` and the publish context as ``attachmentMetadata``); one being deleted is unpublished,
  then its finalizer goes;
- **resizer**: a bound claim asking for more than its volume has gets it (``ControllerExpandVolume``): the
  PersistentVolume's capacity grows, and the claim's once the node need not grow its file system.

Snapshots are :mod:`devstack.csi_snapshots`' (the snapshot-controller and external-snapshotter), swept
first; a claim whose ``dataSource`` is a VolumeSnapshot is provisioned from its snapshot once it is ready.

What it does NOT do: leader election, retries with back-off, events, secrets, cloning, the kubelet's
staging and mounting (the node plugin's own tests do those, against loop devices).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import grpc
from kubernetes import client
from kubernetes.client.rest import ApiException

from devstack.csi_snapshots import SnapshotSidecars
from providers.cloud.tenant import MERGE_PATCH
from providers.csi.identity import DRIVER
from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc

log = logging.getLogger(__name__)

SELECTED_NODE = "volume.kubernetes.io/selected-node"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ATTACHER_FINALIZER = f"external-attacher/{DRIVER.replace('.', '-')}"
SIZE_UNITS = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "": 1}
_MODES = {
    "ReadWriteOnce": csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER,
    "ReadWriteOncePod": csi.VolumeCapability.AccessMode.SINGLE_NODE_SINGLE_WRITER,
    "ReadOnlyMany": csi.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY,
    "ReadWriteMany": csi.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER,
}
TIMEOUT = 60.0


def quantity(text: str) -> int:
    """Bytes of a Kubernetes quantity in binary units (``10Gi``)."""
    for unit, factor in SIZE_UNITS.items():
        if unit and text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def _capability(modes: Iterable[str], block: bool, fs_type: str) -> csi.VolumeCapability:
    mode = next((_MODES[m] for m in modes if m in _MODES), csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER)
    access = csi.VolumeCapability.AccessMode(mode=mode)
    if block:
        return csi.VolumeCapability(block=csi.VolumeCapability.BlockVolume(), access_mode=access)
    return csi.VolumeCapability(mount=csi.VolumeCapability.MountVolume(fs_type=fs_type), access_mode=access)


class CsiSidecars:
    """The sidecars of one tenant cluster: its API server (``api``), the driver's controller (``channel``).
    Objects travel as the dicts the API answers, patches as JSON merge patches."""

    def __init__(self, api: client.ApiClient, channel: grpc.Channel) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.storage = client.StorageV1Api(api)
        self.controller = csi_pb2_grpc.ControllerStub(channel)
        # What the last sweep could not do, by object: the controller's refusal (the sidecars' events).
        self.failures: dict[str, str] = {}
        self.snapshots = SnapshotSidecars(api, self.controller, self._call)

    def _items(self, listed: Any) -> list[dict[str, Any]]:
        return list(self.api.sanitize_for_serialization(listed).get("items") or [])

    def _claims(self) -> list[dict[str, Any]]:
        return self._items(self.core.list_persistent_volume_claim_for_all_namespaces())

    def _volumes(self) -> dict[str, dict[str, Any]]:
        return {pv["metadata"]["name"]: pv for pv in self._items(self.core.list_persistent_volume())}

    def _patch_claim(self, claim: dict[str, Any], patch: dict[str, Any], *, status: bool = False) -> None:
        meta = claim["metadata"]
        call = (
            self.core.patch_namespaced_persistent_volume_claim_status
            if status
            else self.core.patch_namespaced_persistent_volume_claim
        )
        call(meta["name"], meta["namespace"], patch, _content_type=MERGE_PATCH)

    def sweep(self) -> None:
        """Each sidecar's pass, once, in the order a claim goes through them."""
        self.failures.clear()
        classes = {
            c["metadata"]["name"]: c
            for c in self._items(self.storage.list_storage_class())
            if c.get("provisioner") == DRIVER
        }
        self.snapshots.sweep(self._volumes())
        self._provision(classes)
        self._delete_released()
        self._attach()
        self._resize(classes)

    def _call(self, what: str, call: Any, request: Any) -> Any:
        try:
            return call(request, timeout=TIMEOUT)
        except grpc.RpcError as exc:
            self.failures[what] = f"{exc.code().name}: {exc.details()}"
            log.info("%s: %s", what, self.failures[what])
            return None

    # ------------------------------------------------------------------------------------------ provisioner

    def _provision(self, classes: dict[str, dict[str, Any]]) -> None:
        for claim in self._claims():
            spec = claim["spec"]
            cls = classes.get(spec.get("storageClassName") or "")
            if cls is None or spec.get("volumeName"):
                continue
            requirement = None
            if cls.get("volumeBindingMode") == "WaitForFirstConsumer":
                node = (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE)
                if not node:
                    continue  # the scheduler has not chosen a node: nothing to make yet
                node_labels = self.api.sanitize_for_serialization(self.core.read_node(node))["metadata"]
                segments = {
                    k: v for k, v in (node_labels.get("labels") or {}).items() if k.startswith("topology.")
                }
                topology = csi.Topology(segments=segments)
                requirement = csi.TopologyRequirement(requisite=[topology], preferred=[topology])
            self._provision_one(claim, cls, requirement)

    def _provision_one(
        self, claim: dict[str, Any], cls: dict[str, Any], requirement: csi.TopologyRequirement | None
    ) -> None:
        meta, spec = claim["metadata"], claim["spec"]
        name = f"pvc-{meta['uid']}"
        parameters = dict(cls.get("parameters") or {})
        fs_type = parameters.pop("csi.storage.k8s.io/fstype", "ext4")
        parameters.update(
            {
                "csi.storage.k8s.io/pvc/name": meta["name"],
                "csi.storage.k8s.io/pvc/namespace": meta["namespace"],
                "csi.storage.k8s.io/pv/name": name,
            }
        )
        block = spec.get("volumeMode") == "Block"
        modes = spec.get("accessModes") or []
        requested = quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi"))
        what = f"claim {meta['namespace']}/{meta['name']}"
        source = spec.get("dataSource") or {}
        content_source = None
        if source.get("kind") == "VolumeSnapshot":
            handle = self.snapshots.handle(meta["namespace"], source.get("name") or "")
            if handle is None:
                self.failures[what] = f"its data source, VolumeSnapshot {source.get('name')}, is not ready"
                return
            snapshot = csi.VolumeContentSource.SnapshotSource(snapshot_id=handle)
            content_source = csi.VolumeContentSource(snapshot=snapshot)
        request = csi.CreateVolumeRequest(
            name=name,
            capacity_range=csi.CapacityRange(required_bytes=requested),
            volume_capabilities=[_capability(modes, block, fs_type)],
            parameters=parameters,
            accessibility_requirements=requirement,
            volume_content_source=content_source,
        )
        made = self._call(what, self.controller.CreateVolume, request)
        if made is None:
            return
        volume = made.volume
        affinity = [
            {"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in t.segments.items()]}
            for t in volume.accessible_topology
        ]
        csi_source = {
            "driver": DRIVER,
            "volumeHandle": volume.volume_id,
            "volumeAttributes": dict(volume.volume_context),
        }
        if not block:
            csi_source["fsType"] = fs_type
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY: DRIVER}},
            "spec": {
                "capacity": {"storage": str(volume.capacity_bytes)},
                "accessModes": modes,
                "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
                "storageClassName": cls["metadata"]["name"],
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "csi": csi_source,
                **({"nodeAffinity": {"required": {"nodeSelectorTerms": affinity}}} if affinity else {}),
            },
        }
        try:
            typed = client.V1PersistentVolume.from_dict(pv)
            assert typed is not None  # from_dict answers None for None only
            self.core.create_persistent_volume(typed)
        except ApiException as exc:
            if exc.status != 409:  # made by an earlier sweep that stopped before binding
                raise
        # The PV controller's part: the claim names the volume, both are Bound.
        self._patch_claim(claim, {"spec": {"volumeName": name}})
        bound = {"phase": "Bound", "accessModes": modes, "capacity": {"storage": str(volume.capacity_bytes)}}
        self._patch_claim(claim, {"status": bound}, status=True)
        self.core.patch_persistent_volume_status(
            name, {"status": {"phase": "Bound"}}, _content_type=MERGE_PATCH
        )

    # ------------------------------------------------------------------------------------------ deleter

    def _delete_released(self) -> None:
        claims = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in self._claims()}
        for name, pv in self._volumes().items():
            spec = pv["spec"]
            if (pv["metadata"].get("annotations") or {}).get(PROVISIONED_BY) != DRIVER or "csi" not in spec:
                continue
            ref = spec.get("claimRef") or {}
            if not ref or (ref.get("namespace"), ref.get("name")) in claims:
                continue
            if spec.get("persistentVolumeReclaimPolicy") != "Delete":
                released = {"status": {"phase": "Released"}}
                self.core.patch_persistent_volume_status(name, released, _content_type=MERGE_PATCH)
                continue
            request = csi.DeleteVolumeRequest(volume_id=spec["csi"]["volumeHandle"])
            if self._call(f"volume {name}", self.controller.DeleteVolume, request) is not None:
                self.core.delete_persistent_volume(name, _preload_content=False)

    # ------------------------------------------------------------------------------------------ attacher

    def _attach(self) -> None:
        volumes = self._volumes()
        for attachment in self._items(self.storage.list_volume_attachment()):
            meta, spec = attachment["metadata"], attachment["spec"]
            if spec.get("attacher") != DRIVER:
                continue
            name = meta["name"]
            pv = volumes.get((spec.get("source") or {}).get("persistentVolumeName") or "")
            if pv is None or "csi" not in pv["spec"]:
                self.failures[f"attachment {name}"] = "its PersistentVolume is not the driver's"
                continue
            source = pv["spec"]["csi"]
            handle, node = source["volumeHandle"], spec["nodeName"]
            finalizers = list(meta.get("finalizers") or [])
            if meta.get("deletionTimestamp"):
                unpublish = csi.ControllerUnpublishVolumeRequest(volume_id=handle, node_id=node)
                if (
                    self._call(f"attachment {name}", self.controller.ControllerUnpublishVolume, unpublish)
                    is not None
                ):
                    kept = [f for f in finalizers if f != ATTACHER_FINALIZER]
                    self.storage.patch_volume_attachment(
                        name, {"metadata": {"finalizers": kept}}, _content_type=MERGE_PATCH
                    )
                continue
            if (attachment.get("status") or {}).get("attached"):
                continue
            if ATTACHER_FINALIZER not in finalizers:
                patch = {"metadata": {"finalizers": [*finalizers, ATTACHER_FINALIZER]}}
                self.storage.patch_volume_attachment(name, patch, _content_type=MERGE_PATCH)
            block = pv["spec"].get("volumeMode") == "Block"
            request = csi.ControllerPublishVolumeRequest(
                volume_id=handle,
                node_id=node,
                volume_capability=_capability(
                    pv["spec"].get("accessModes") or [], block, source.get("fsType") or "ext4"
                ),
                volume_context=source.get("volumeAttributes") or {},
            )
            published = self._call(f"attachment {name}", self.controller.ControllerPublishVolume, request)
            if published is not None:
                status = {"status": {"attached": True, "attachmentMetadata": dict(published.publish_context)}}
                self.storage.patch_volume_attachment_status(name, status, _content_type=MERGE_PATCH)

    # ------------------------------------------------------------------------------------------ resizer

    def _resize(self, classes: dict[str, dict[str, Any]]) -> None:
        volumes = self._volumes()
        for claim in self._claims():
            spec = claim["spec"]
            cls = classes.get(spec.get("storageClassName") or "")
            pv = volumes.get(spec.get("volumeName") or "")
            if cls is None or not cls.get("allowVolumeExpansion") or pv is None or "csi" not in pv["spec"]:
                continue
            wanted = quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
            if wanted <= quantity(pv["spec"]["capacity"]["storage"]):
                continue
            block = pv["spec"].get("volumeMode") == "Block"
            source = pv["spec"]["csi"]
            request = csi.ControllerExpandVolumeRequest(
                volume_id=source["volumeHandle"],
                capacity_range=csi.CapacityRange(required_bytes=wanted),
                volume_capability=_capability(
                    pv["spec"].get("accessModes") or [], block, source.get("fsType") or "ext4"
                ),
            )
            what = f"claim {claim['metadata']['namespace']}/{claim['metadata']['name']}"
            grown = self._call(what, self.controller.ControllerExpandVolume, request)
            if grown is None:
                continue
            capacity = {"storage": str(grown.capacity_bytes)}
            self.core.patch_persistent_volume(
                pv["metadata"]["name"], {"spec": {"capacity": capacity}}, _content_type=MERGE_PATCH
            )
            if not grown.node_expansion_required:
                self._patch_claim(claim, {"status": {"capacity": capacity}}, status=True)
