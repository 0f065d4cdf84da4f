"""kopf's registrations for the control-plane provider: each handler calls :mod:`.steps` and nothing else.

A FlexControlPlane is reconciled on create, on a spec change (version, replicas, service type) and
on resume; the handler keeps being called (kopf's temporary error) until the control plane is all
its spec asks (available, every replica ready at the spec's version), so ``status`` follows a
rollout. A timer then checks every minute for drift (a replica lost, an endpoint moved). Deletion
waits on the finalizer ``controlplane.flexplane.io/finalizer`` (kopf's, per provider) until the
control plane's namespace and the VDC's two Secrets are gone.

What a control plane waits for wakes its reconcile at once (:mod:`providers.common.wakeups`), as an
owner's reconcile follows its owned objects in controller-runtime: its Service (the LoadBalancer's
address), its Deployment (the pods' status) and its etcd StatefulSet (the members' readiness, which
``status.health`` reports), watched by the label ``flexplane.io/control-plane``, and
its Cluster until the control plane is initialized (Cluster API core's ownerReference). The retry delays
stay as the safety net.

Settings, from the environment: ``FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS`` (the address nodes reach a
NodePort Service on), ``FLEXPLANE_PROVIDERS_SNI_DOMAIN``, ``FLEXPLANE_PROVIDERS_SNI_PORT`` and
``FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS`` (for ``serviceType: SNI``: the domain the clusters' host names
are made under, the port of the SNI router's address, 443, and the address each tenant node's proxy holds
for the ``kubernetes`` Service, 100.64.255.254; :mod:`providers.sni`),
``FLEXPLANE_PROVIDERS_ETCD_MEMBERS`` (1 or 3; see :mod:`.render`),
``FLEXPLANE_PROVIDERS_IMAGE_REGISTRY`` (the registry every image of a control plane and of what it
installs in the tenant cluster is pulled from, paths and tags kept: an air-gapped mirror; default
registry.k8s.io), ``FLEXPLANE_PROVIDERS_ETCD_BACKUP_*`` (the bucket, key and retention of every
control plane's etcd snapshots: :class:`.model.EtcdBackup`; no bucket, no snapshots),
``FLEXPLANE_PROVIDERS_CLOUD_*`` (flex.plane's URL, the identity provider's URL and project, the CA bundle
and the image of the tenant clusters' cloud controllers: :class:`.model.CloudController`; no URL, no cloud
controllers), ``FLEXPLANE_PROVIDERS_SERVICE_MONITOR_*`` (the providers chart's ``metrics.serviceMonitor``:
whether each control plane gets a ServiceMonitor of its API server's /metrics, its interval, timeout and
labels: :class:`.monitoring.ServiceMonitors`; off by default), and the retry
delays in seconds: ``FLEXPLANE_PROVIDERS_RETRY_DELAY`` (waiting on another controller, 5),
``FLEXPLANE_PROVIDERS_CONVERGING_DELAY`` (a rollout under way, 5),
``FLEXPLANE_PROVIDERS_DELETING_DELAY`` (the namespace going, 2).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Mapping
from typing import Any

import kopf

from orchestrator.sources.kube_objects import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    CONTROL_PLANE_LABEL,
    CONTROLPLANE_GROUP,
    FLEX_CONTROL_PLANE,
    VDC_LABEL,
    namespace_of,
)
from providers.common.access import SecretsAccess
from providers.common.kube import TRANSIENT
from providers.common.kube import kube as management
from providers.common.operator import Provider
from providers.common.settings import image_registry, seconds
from providers.common.wakeups import Key, Wakeups, run_woken
from providers.controlplane import model, monitoring, steps
from providers.controlplane.kube import Kube, KubeError, path_of

PROVIDER = Provider("controlplane", steps.FINALIZER, CONTROLPLANE_GROUP)
registry = PROVIDER.registry
_FCP = (FLEX_CONTROL_PLANE.group, FLEX_CONTROL_PLANE.version, FLEX_CONTROL_PLANE.plural)
# How soon to look again while the control plane converges, and how often once it has.
CONVERGING_DELAY = seconds("CONVERGING_DELAY", 5.0)
DELETING_DELAY = seconds("DELETING_DELAY", 2.0)
DRIFT_INTERVAL = 60.0
WAKEUPS = Wakeups()


def settings() -> steps.Settings:
    members = int(os.environ.get("FLEXPLANE_PROVIDERS_ETCD_MEMBERS", "1"))
    if members not in (1, 3):
        raise kopf.PermanentError("FLEXPLANE_PROVIDERS_ETCD_MEMBERS must be 1 or 3")
    return steps.Settings(
        nodeport_address=os.environ.get("FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS", ""),
        sni_domain=_sni_domain(),
        sni_port=_sni_port(),
        sni_node_address=_sni_node_address(),
        etcd_members=members,
        image_registry=_image_registry(),
        secrets=secrets_access(),
        etcd_backup=_etcd_backup(),
        cloud=_cloud_controller(),
        service_monitors=_service_monitors(),
    )


def _service_monitors() -> monitoring.ServiceMonitors:
    try:
        return monitoring.ServiceMonitors.from_environment(os.environ)
    except ValueError as exc:
        raise kopf.PermanentError(str(exc)) from None


def _cloud_controller() -> model.CloudController:
    try:
        return model.CloudController.from_environment(os.environ)
    except ValueError as exc:
        raise kopf.PermanentError(str(exc)) from None


def _etcd_backup() -> model.EtcdBackup:
    try:
        return model.EtcdBackup.from_environment(os.environ)
    except ValueError as exc:
        raise kopf.PermanentError(str(exc)) from None


def _sni_domain() -> str:
    """FLEXPLANE_PROVIDERS_SNI_DOMAIN: a DNS name (its trailing dot dropped), or empty (no SNI mode)."""
    raw = os.environ.get("FLEXPLANE_PROVIDERS_SNI_DOMAIN", "").strip().rstrip(".").lower()
    labels = raw.split(".") if raw else []
    if any(not label or len(label) > 63 or not label.replace("-", "").isalnum() for label in labels):
        raise kopf.PermanentError(f"FLEXPLANE_PROVIDERS_SNI_DOMAIN must be a DNS name, not {raw!r}")
    return raw


def _sni_port() -> int:
    raw = os.environ.get("FLEXPLANE_PROVIDERS_SNI_PORT", "").strip() or "443"
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise kopf.PermanentError(f"FLEXPLANE_PROVIDERS_SNI_PORT must be a port, not {raw!r}")
    return int(raw)


def _sni_node_address() -> str:
    """FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS: an IPv4 address Kubernetes takes as an endpoint."""
    raw = os.environ.get("FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS", "").strip() or model.NODE_LOCAL_ADDRESS
    try:
        address = ipaddress.IPv4Address(raw)
    except ValueError:
        raise kopf.PermanentError(
            f"FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS must be an IPv4 address, not {raw!r}"
        ) from None
    if address.is_loopback or address.is_link_local or address.is_multicast or address.is_unspecified:
        raise kopf.PermanentError(
            f"FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS {raw} is loopback, link-local, multicast or unspecified, "
            "which Kubernetes refuses as an endpoint"
        )
    return raw


def _image_registry() -> str:
    try:
        return image_registry(model.REGISTRY)
    except ValueError as exc:
        raise kopf.PermanentError(str(exc)) from None


def secrets_access() -> SecretsAccess:
    try:
        return SecretsAccess.from_environment()
    except ValueError as exc:  # the process refused it at start already (providers.common.kube)
        raise kopf.PermanentError(str(exc)) from None


def _kube() -> Kube:
    return Kube(management().api_client)


def _key(fcp: Mapping[str, Any]) -> Key:
    return str(fcp["metadata"]["namespace"]), str(fcp["metadata"]["name"])


def _reconcile(body: kopf.Body, *, converge: bool) -> None:
    """One reconcile at a time per control plane; woken meanwhile, a wait is retried at once."""
    key = _key(body)
    with WAKEUPS.serial(key):
        try:
            _reconcile_once(dict(body), converge=converge)
        except kopf.TemporaryError as error:
            if WAKEUPS.woken(key):
                raise kopf.TemporaryError(str(error), delay=0) from error
            raise


def _reconcile_once(fcp: dict[str, Any], *, converge: bool) -> None:
    kube = _kube()
    try:
        outcome = steps.reconcile(kube, fcp, settings())
    except steps.Waiting as waiting:
        steps.write(kube, fcp, steps.Outcome(status=steps.waiting_status(fcp, waiting)))
        raise kopf.TemporaryError(str(waiting), delay=waiting.delay) from waiting
    except KubeError as error:
        if error.status in TRANSIENT:
            raise kopf.TemporaryError(str(error), delay=CONVERGING_DELAY) from error
        raise kopf.PermanentError(str(error)) from error
    if outcome is None:
        return  # paused: the timer looks again
    steps.write(kube, fcp, outcome)
    if converge and not steps.converged(fcp, outcome.status):
        raise kopf.TemporaryError("the control plane is converging", delay=CONVERGING_DELAY)


@kopf.on.resume(*_FCP, registry=registry)
@kopf.on.create(*_FCP, registry=registry)
@kopf.on.update(*_FCP, field="spec", registry=registry)
def reconcile_control_plane(body: kopf.Body, **_: Any) -> None:
    _reconcile(body, converge=True)


@kopf.timer(*_FCP, interval=DRIFT_INTERVAL, idle=DRIFT_INTERVAL, registry=registry)
def check_control_plane(body: kopf.Body, **_: Any) -> None:
    if body.get("metadata", {}).get("deletionTimestamp"):
        return
    with contextlib.suppress(kopf.TemporaryError):  # the next tick looks again
        _reconcile(body, converge=False)


@kopf.on.delete(*_FCP, registry=registry)
def delete_control_plane(body: kopf.Body, **_: Any) -> None:
    with WAKEUPS.serial(_key(body)):
        if not steps.delete(_kube(), dict(body), settings()):
            raise kopf.TemporaryError("the control plane's namespace is being deleted", delay=DELETING_DELAY)


# ------------------------------------------------------------------------------------ wakes


def owner_of(kube: Kube, namespace: str, cluster: str) -> str | None:
    """The FlexControlPlane of ``cluster`` in its VDC's ``namespace`` (its owner Cluster's, else labelled)."""
    found = kube.request("GET", path_of(steps.FCP_API, "FlexControlPlane", None, namespace)) or {}
    for fcp in found.get("items") or []:
        meta = fcp.get("metadata") or {}
        owners = [r.get("name") for r in meta.get("ownerReferences") or [] if r.get("kind") == "Cluster"]
        labelled = (meta.get("labels") or {}).get(CLUSTER_NAME_LABEL)
        if cluster in owners or (not owners and labelled == cluster):
            return str(meta["name"])
    return None


def wake(key: Key) -> None:
    """Reconcile control plane ``key`` now (read afresh), unless a reconcile of it runs (it retries)."""

    def reconcile() -> None:
        fcp = _kube().get(steps.FCP_API, "FlexControlPlane", key[1], key[0])
        if fcp is None or fcp["metadata"].get("deletionTimestamp"):
            return
        with contextlib.suppress(kopf.TemporaryError):  # its handler's retry looks again
            _reconcile_once(fcp, converge=False)

    run_woken(WAKEUPS, key, reconcile)


@kopf.on.event("", "v1", "services", labels={CONTROL_PLANE_LABEL: kopf.PRESENT}, registry=registry)
@kopf.on.event("apps", "v1", "deployments", labels={CONTROL_PLANE_LABEL: kopf.PRESENT}, registry=registry)
@kopf.on.event("apps", "v1", "statefulsets", labels={CONTROL_PLANE_LABEL: kopf.PRESENT}, registry=registry)
def control_plane_object_changed(body: kopf.Body, type: str | None, **_: Any) -> None:
    """The Service got its address, the Deployment's pods or etcd's members moved: its control plane's
    reconcile, now."""
    if type is None:  # the watch's first listing: the control planes' resume handlers run anyway
        return
    labels = body.get("metadata", {}).get("labels") or {}
    vdc, cluster = labels.get(VDC_LABEL), labels.get(CONTROL_PLANE_LABEL)
    if not vdc or not cluster:
        return
    namespace = namespace_of(vdc)
    name = owner_of(_kube(), namespace, str(cluster))
    if name is not None:
        wake((namespace, name))


def _adopting(body: kopf.Body, **_: Any) -> bool:
    """A Cluster whose control plane is ours and not initialized yet (it may wait for the adoption)."""
    ref = body.get("spec", {}).get("controlPlaneRef") or {}
    initialized = (body.get("status", {}).get("initialization") or {}).get("controlPlaneInitialized")
    ours = ref.get("kind") == "FlexControlPlane" and ref.get("apiGroup") == CONTROLPLANE_GROUP
    return ours and not initialized


@kopf.on.event(CLUSTER.group, CLUSTER.version, CLUSTER.plural, when=_adopting, registry=registry)
def cluster_changed(body: kopf.Body, type: str | None, **_: Any) -> None:
    """Cluster API core adopted the control plane (its ownerReference): its reconcile, now. A pause
    later is seen by the drift timer, as before."""
    ref = body.get("spec", {}).get("controlPlaneRef") or {}
    if type is None or not _adopting(body):
        return
    wake((str(body["metadata"]["namespace"]), str(ref["name"])))
