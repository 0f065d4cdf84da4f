"""An upgrade's workers follow the control plane: a pool rolls once the control plane runs the version.

Kubernetes' version-skew policy forbids a kubelet newer than its API server. An upgrade therefore
moves the control plane first and the workers after it, and the order is kept by the objects
themselves, not by anyone's memory:

- the tenant API (the orchestrator) writes each pool's new templates, and on each MachineDeployment
  the annotation ``controlplane.flexplane.io/pending-upgrade``: JSON ``{"version", "infrastructureRef",
  "bootstrapConfigRef"}`` (v1beta2 references; ``bootstrapConfigRef`` may be absent: the one it has is
  kept). It leaves the MachineDeployment's ``spec`` alone, so Cluster API core rolls nothing yet. It
  then patches the FlexControlPlane's ``spec.version`` with the annotation
  ``controlplane.flexplane.io/workers-pending: <version>``: there are pools to look at once the control
  plane is there (without it a resync reads no MachineDeployment);
- this provider, once the control plane's rollout to ``spec.version`` is complete (``status.version``
  is it and every replica is up to date and ready: :func:`.steps.converged`), patches each pending
  MachineDeployment of the cluster (the version and the references, the annotation removed) and core
  rolls its workers; then it removes the FlexControlPlane's annotation.

Every step is idempotent and safe against a change meanwhile: each patch names the resourceVersion it
read, so a newer pending upgrade written between the read and the patch is kept (the patch is refused
and the next reconcile sees it). A pending version above the version the control plane runs waits.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.sources.kube_objects import (
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    MACHINE_DEPLOYMENT,
    PENDING_UPGRADE_ANNOTATION,
    WORKERS_PENDING_ANNOTATION,
)
from providers.controlplane.kube import MERGE_PATCH, Body, Kube, KubeError, resource_path

log = logging.getLogger(__name__)

_VERSION = re.compile(r"v(\d+)\.(\d+)\.(\d+)")
_REF_KEYS = ("apiGroup", "kind", "name")


@dataclass(frozen=True)
class PendingUpgrade:
    """A pool's upgrade as the tenant API recorded it on its MachineDeployment."""

    version: str
    infrastructure_ref: Mapping[str, str]
    bootstrap_ref: Mapping[str, str] | None = None

    def encode(self) -> str:
        body: dict[str, Any] = {"version": self.version, "infrastructureRef": dict(self.infrastructure_ref)}
        if self.bootstrap_ref:
            body["bootstrapConfigRef"] = dict(self.bootstrap_ref)
        return json.dumps(body, sort_keys=True)


def _ref(value: Any) -> dict[str, str] | None:
    if not isinstance(value, Mapping) or not all(
        isinstance(value.get(k), str) and value[k] for k in _REF_KEYS
    ):
        return None
    return {k: str(value[k]) for k in _REF_KEYS}


def parse(value: str | None) -> PendingUpgrade | None:
    """The annotation's upgrade; None when it is absent or not one (a malformed one is never applied)."""
    if not value:
        return None
    try:
        body = json.loads(value)
    except ValueError:
        return None
    if not isinstance(body, Mapping) or not _VERSION.fullmatch(str(body.get("version") or "")):
        return None
    infrastructure = _ref(body.get("infrastructureRef"))
    if infrastructure is None:
        return None
    bootstrap = _ref(body.get("bootstrapConfigRef")) if "bootstrapConfigRef" in body else None
    if "bootstrapConfigRef" in body and bootstrap is None:
        return None
    return PendingUpgrade(str(body["version"]), infrastructure, bootstrap)


def version_key(version: str) -> tuple[int, ...]:
    """``v1.34.2`` -> (1, 34, 2); an unparsable one sorts above every real one (never reached)."""
    match = _VERSION.fullmatch(version or "")
    return tuple(int(part) for part in match.groups()) if match else (1 << 30,)


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def worker_patch(deployment: Mapping[str, Any], control_plane_version: str) -> Body | None:
    """The merge patch that applies a MachineDeployment's pending upgrade, once the control plane runs
    ``control_plane_version``; None while there is nothing to apply (or it must wait).

    A malformed annotation is removed and nothing else changes. The patch names the resourceVersion read.
    """
    raw = _annotations(deployment).get(PENDING_UPGRADE_ANNOTATION)
    if raw is None:
        return None
    meta = deployment.get("metadata") or {}
    clear: Body = {
        "annotations": {PENDING_UPGRADE_ANNOTATION: None},
        "resourceVersion": meta.get("resourceVersion"),
    }
    pending = parse(raw)
    if pending is None:
        return {"metadata": clear}
    if version_key(pending.version) > version_key(control_plane_version):
        return None  # the control plane is not there yet
    template: Body = {"version": pending.version, "infrastructureRef": dict(pending.infrastructure_ref)}
    if pending.bootstrap_ref:
        template["bootstrap"] = {"configRef": dict(pending.bootstrap_ref)}
    return {"metadata": clear, "spec": {"template": {"spec": template}}}


def apply_pending(kube: Kube, fcp: Mapping[str, Any], cluster: str, rolled_out: bool) -> int:
    """Apply the cluster's pending worker upgrades when the control plane's rollout is complete
    (``rolled_out``) and the FlexControlPlane says there are some; the number of pools moved.

    Reads nothing unless both hold: a resync of a settled control plane costs no read here. A refusal
    (say, RBAC without ``machinedeployments`` patch) is logged and left to the next reconcile: it never
    stops the control plane's own.
    """
    try:
        return _apply_pending(kube, fcp, cluster, rolled_out)
    except KubeError as error:
        meta = fcp["metadata"]
        log.warning("%s/%s: the node pools' upgrade waits: %s", meta["namespace"], cluster, error)
        return 0


def _apply_pending(kube: Kube, fcp: Mapping[str, Any], cluster: str, rolled_out: bool) -> int:
    meta = fcp["metadata"]
    version = str((fcp.get("spec") or {}).get("version") or "")  # rolled out: what the control plane runs
    waiting = _annotations(fcp).get(WORKERS_PENDING_ANNOTATION)
    if waiting is None or not rolled_out:
        return 0
    namespace = meta["namespace"]
    path = resource_path(MACHINE_DEPLOYMENT, namespace=namespace)
    found = kube.request("GET", path, query=[("labelSelector", f"{CLUSTER_NAME_LABEL}={cluster}")]) or {}
    moved, left = 0, False
    for deployment in found.get("items") or []:
        patch = worker_patch(deployment, version)
        if patch is None:
            left = left or PENDING_UPGRADE_ANNOTATION in _annotations(deployment)
            continue
        name = deployment["metadata"]["name"]
        try:
            kube.request("PATCH", f"{path}/{name}", patch, content_type=MERGE_PATCH)
        except KubeError as error:
            if error.status not in (404, 409):
                raise
            left = True  # changed meanwhile (or gone): the next reconcile looks again
            continue
        moved += "spec" in patch
        log.info(
            "%s/%s: node pool %s upgraded to %s after its control plane", namespace, cluster, name, version
        )
    if not left and version_key(waiting) <= version_key(version):
        _clear_flag(kube, namespace, meta["name"], waiting)
    return moved


def _clear_flag(kube: Kube, namespace: str, name: str, waiting: str) -> None:
    """Remove the FlexControlPlane's flag if it still names what was applied (a newer one is kept)."""
    path = resource_path(FLEX_CONTROL_PLANE, name, namespace)
    current = kube.request("GET", path)
    if current is None or _annotations(current).get(WORKERS_PENDING_ANNOTATION) != waiting:
        return
    patch = {
        "metadata": {
            "annotations": {WORKERS_PENDING_ANNOTATION: None},
            "resourceVersion": current["metadata"]["resourceVersion"],
        }
    }
    try:
        kube.request("PATCH", path, patch, content_type=MERGE_PATCH)
    except KubeError as error:
        if error.status not in (404, 409):
            raise
