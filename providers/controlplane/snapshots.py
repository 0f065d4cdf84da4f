"""Volume snapshots in a tenant cluster with flex.plane's CSI driver (:mod:`.storage`): Kubernetes' snapshot
API and the driver's snapshot class. Pure manifests.

Kubernetes serves no snapshot API of its own: SIG Storage defines it as three custom resources
(``snapshot.storage.k8s.io/v1``) and a controller of them, the snapshot-controller, which binds a
VolumeSnapshot to a VolumeSnapshotContent whose driver's csi-snapshotter sidecar takes the snapshot
(``CreateSnapshot``, :mod:`providers.csi.snapshots`). Here, installed with the driver's tenant half:

- the three CRDs (:func:`crds`), written from the API's types: structural schemas of every field the
  snapshot-controller and the sidecar read and write (nothing they write is pruned), the status of a
  VolumeSnapshot and of a VolumeSnapshotContent as a subresource (both write it there), and, as CEL rules,
  what SIG Storage's own CRDs refuse (a source of exactly one kind, set once);
- the driver's VolumeSnapshotClass (:func:`snapshot_class`): ``deletionPolicy: Delete`` (a VolumeSnapshot
  deleted deletes its copy, as a claim deleted deletes its volume), the cluster's default.

The snapshot-controller and the sidecar run beside the hosted control plane in the CSI controller's pod
(:func:`.storage.render_controller`), as the other sidecars do: the snapshot-controller is a controller of
the cluster's own, as kube-controller-manager is, and nothing of the control plane runs on the workers. Both
reach the tenant's API server as the CSI controller's user, whose role (:func:`.storage.rbac`) grants them
this API.
"""

from __future__ import annotations

from typing import Any

from providers.controlplane.cni import meta
from providers.controlplane.model import Manifest
from providers.csi.identity import DRIVER

GROUP = "snapshot.storage.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
SNAPSHOT_CLASS = "flexplane"
DEFAULT_CLASS_ANNOTATION = "snapshot.storage.kubernetes.io/is-default-class"
# A CRD of a k8s.io group names where Kubernetes approved its API, or the API server refuses it: SIG Storage's
# approval of the v1 snapshot API.
APPROVAL = "https://github.com/kubernetes-csi/external-snapshotter/pull/814"
# The quantity a VolumeSnapshot's status.restoreSize holds (an int or a string such as 10Gi).
_NUMBER = r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
QUANTITY = rf"^(\+|-)?{_NUMBER}(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?{_NUMBER}))?$"
DELETION_POLICIES = ["Delete", "Retain"]

# ------------------------------------------------------------------------------------------ schemas


def _string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def _object(
    properties: dict[str, Any], required: tuple[str, ...] = (), extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An object's schema; ``extra``: its ``x-kubernetes-*`` keys."""
    body: dict[str, Any] = {"type": "object", "properties": properties, **(extra or {})}
    if required:
        body["required"] = list(required)
    return body


def _once(*fields: str) -> list[dict[str, str]]:
    """CEL rules of an object of optional ``fields``: exactly one set, and none changed, added or removed."""
    has = [f"has(self.{name})" for name in fields]
    exactly_one = " + ".join(f"({check} ? 1 : 0)" for check in has) + " == 1"
    return [
        {"rule": exactly_one, "message": f"exactly one of {', '.join(fields)} must be set"},
        {"rule": "self == oldSelf", "message": "the source is immutable"},
    ]


def _error() -> dict[str, Any]:
    """The last error taking or binding a snapshot met (the controllers' ``status.error``)."""
    return _object({"message": _string(), "time": _string(format="date-time")})


def _document(kind_fields: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    """An object's schema: apiVersion, kind and metadata (the API server's) with the kind's own fields."""
    return {
        "openAPIV3Schema": _object(
            {
                "apiVersion": _string(),
                "kind": _string(),
                "metadata": {"type": "object"},
                **kind_fields,
            },
            required,
        )
    }


def volume_snapshot_schema() -> dict[str, Any]:
    source = _object(
        {"persistentVolumeClaimName": _string(), "volumeSnapshotContentName": _string()},
        extra={"x-kubernetes-validations": _once("persistentVolumeClaimName", "volumeSnapshotContentName")},
    )
    spec = _object({"source": source, "volumeSnapshotClassName": _string()}, ("source",))
    status = _object(
        {
            "boundVolumeSnapshotContentName": _string(),
            "creationTime": _string(format="date-time"),
            "error": _error(),
            "readyToUse": {"type": "boolean"},
            "restoreSize": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": QUANTITY,
                "x-kubernetes-int-or-string": True,
            },
            "volumeGroupSnapshotName": _string(),
        }
    )
    return _document({"spec": spec, "status": status}, ("spec",))


def volume_snapshot_content_schema() -> dict[str, Any]:
    source = _object(
        {"snapshotHandle": _string(), "volumeHandle": _string()},
        extra={"x-kubernetes-validations": _once("snapshotHandle", "volumeHandle")},
    )
    reference = _object(
        {
            name: _string()
            for name in ("apiVersion", "fieldPath", "kind", "name", "namespace", "resourceVersion", "uid")
        },
        extra={
            "x-kubernetes-map-type": "atomic",
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.name) && has(self.namespace)",
                    "message": "volumeSnapshotRef names its VolumeSnapshot and namespace",
                }
            ],
        },
    )
    spec = _object(
        {
            "deletionPolicy": _string(enum=DELETION_POLICIES),
            "driver": _string(),
            "source": source,
            "sourceVolumeMode": _string(enum=["Block", "Filesystem"]),
            "volumeSnapshotClassName": _string(),
            "volumeSnapshotRef": reference,
        },
        ("deletionPolicy", "driver", "source", "volumeSnapshotRef"),
    )
    status = _object(
        {
            "creationTime": {"type": "integer", "format": "int64"},  # nanoseconds since the epoch
            "error": _error(),
            "readyToUse": {"type": "boolean"},
            "restoreSize": {"type": "integer", "format": "int64", "minimum": 0},  # bytes
            "snapshotHandle": _string(),
            "volumeGroupSnapshotHandle": _string(),
        }
    )
    return _document({"spec": spec, "status": status}, ("spec",))


def volume_snapshot_class_schema() -> dict[str, Any]:
    return _document(
        {
            "deletionPolicy": _string(enum=DELETION_POLICIES),
            "driver": _string(),
            "parameters": {"type": "object", "additionalProperties": _string()},
        },
        ("deletionPolicy", "driver"),
    )


# ------------------------------------------------------------------------------------------ manifests


def _column(name: str, path: str, kind: str = "string") -> dict[str, str]:
    return {"name": name, "jsonPath": path, "type": kind}


def _crd(
    kind: str,
    plural: str,
    short: list[str],
    schema: dict[str, Any],
    columns: list[dict[str, str]],
    *,
    namespaced: bool,
    status: bool,
) -> Manifest:
    metadata = meta(f"{plural}.{GROUP}")
    metadata["annotations"] = {"api-approved.kubernetes.io": APPROVAL}
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": schema,
        "additionalPrinterColumns": [*columns, _column("Age", ".metadata.creationTimestamp", "date")],
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
            },
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [version],
        },
    }


def crds() -> list[Manifest]:
    """The snapshot API's three kinds: the classes, the contents (cluster-wide, as PersistentVolumes are), and
    the snapshots (in a namespace, as claims are)."""
    ready = _column("ReadyToUse", ".status.readyToUse", "boolean")
    return [
        _crd(
            "VolumeSnapshotClass",
            "volumesnapshotclasses",
            ["vsclass", "vsclasses"],
            volume_snapshot_class_schema(),
            [_column("Driver", ".driver"), _column("DeletionPolicy", ".deletionPolicy")],
            namespaced=False,
            status=False,
        ),
        _crd(
            "VolumeSnapshotContent",
            "volumesnapshotcontents",
            ["vsc", "vscs"],
            volume_snapshot_content_schema(),
            [
                ready,
                _column("RestoreSize", ".status.restoreSize", "integer"),
                _column("DeletionPolicy", ".spec.deletionPolicy"),
                _column("Driver", ".spec.driver"),
                _column("VolumeSnapshot", ".spec.volumeSnapshotRef.name"),
                _column("VolumeSnapshotNamespace", ".spec.volumeSnapshotRef.namespace"),
            ],
            namespaced=False,
            status=True,
        ),
        _crd(
            "VolumeSnapshot",
            "volumesnapshots",
            ["vs"],
            volume_snapshot_schema(),
            [
                ready,
                _column("SourcePVC", ".spec.source.persistentVolumeClaimName"),
                _column("RestoreSize", ".status.restoreSize"),
                _column("SnapshotClass", ".spec.volumeSnapshotClassName"),
                _column("SnapshotContent", ".status.boundVolumeSnapshotContentName"),
                _column("CreationTime", ".status.creationTime", "date"),
            ],
            namespaced=True,
            status=True,
        ),
    ]


def snapshot_class() -> Manifest:
    """The driver's VolumeSnapshotClass, the cluster's default: a VolumeSnapshot deleted deletes its copy."""
    metadata = meta(SNAPSHOT_CLASS)
    metadata["annotations"] = {DEFAULT_CLASS_ANNOTATION: "true"}
    return {
        "apiVersion": API_VERSION,
        "kind": "VolumeSnapshotClass",
        "metadata": metadata,
        "driver": DRIVER,
        "deletionPolicy": "Delete",
    }
