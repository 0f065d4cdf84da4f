"""The control plane's reconcile, as small ``ensure_*`` steps that do nothing when the world matches.

Each step reads what it needs and writes only what differs (see :meth:`.kube.Kube.ensure`), so a
provider restarted mid-way resumes where it was: the PKI is read back from its Secret and only what
is missing is made (:func:`.pki.ensure_pki`), never a second CA. The steps know nothing of kopf: the
handlers call :func:`reconcile` and :func:`delete`, and turn :class:`Waiting` into a retry.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from orchestrator.sources.kube_objects import (
    CLOUD_CONTROLLER_KEY,
    CLUSTER,
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    PAUSED_ANNOTATION,
    PROXMOX_CLUSTER,
    cloud_controller_secret,
    vdc_of_namespace,
)
from providers.common import conditions
from providers.common.access import NO_BINDING, SecretsAccess
from providers.common.objects import owner_reference
from providers.common.settings import seconds
from providers.controlplane import (
    health,
    model,
    monitoring,
    network,
    pki,
    render,
    restore,
    storage,
    tenant,
    workers,
)
from providers.controlplane.kube import UNREACHABLE, Body, Kube, KubeError, path_of

log = logging.getLogger(__name__)

CLUSTER_API = CLUSTER.api_version
PROXMOX_CLUSTER_API = PROXMOX_CLUSTER.api_version
FCP_API = FLEX_CONTROL_PLANE.api_version
FINALIZER = "controlplane.flexplane.io/finalizer"
# The hash of what was last installed in the tenant cluster: installs run again only when it changes.
TENANT_HASH_ANNOTATION = "controlplane.flexplane.io/tenant-objects"
AVAILABLE = "Available"
# How soon a step that waits on another controller (Cluster API core, the LoadBalancer) looks again,
# should no event of what it waits for wake it first (see handlers).
RETRY_DELAY = seconds("RETRY_DELAY", 5.0)
# " at 0x7f...": an object's address in its repr, which differs at each reconcile.
OBJECT_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class Settings:
    """The provider's settings that shape every control plane."""

    nodeport_address: str = ""  # FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS
    sni_domain: str = ""  # FLEXPLANE_PROVIDERS_SNI_DOMAIN: the SNI mode's hosts are <cluster>.<vdc>.<it>
    sni_port: int = 443  # FLEXPLANE_PROVIDERS_SNI_PORT: where the SNI router's address takes connections
    # FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS: the SNI mode's node-local endpoint of the kubernetes Service
    sni_node_address: str = model.NODE_LOCAL_ADDRESS
    etcd_members: int = 1  # FLEXPLANE_PROVIDERS_ETCD_MEMBERS
    image_registry: str = model.REGISTRY  # FLEXPLANE_PROVIDERS_IMAGE_REGISTRY
    # FLEXPLANE_PROVIDERS_ETCD_BACKUP_*: the bucket every control plane's etcd snapshots go to (none: off).
    etcd_backup: model.EtcdBackup = model.NO_ETCD_BACKUP
    # FLEXPLANE_PROVIDERS_CLOUD_*: flex.plane's URL and identity for the clusters' cloud controllers
    # (no URL: none).
    cloud: model.CloudController = model.NO_CLOUD_CONTROLLER
    # FLEXPLANE_PROVIDERS_VDC_ROLE, FLEXPLANE_PROVIDERS_CONTROL_PLANE_ROLE, FLEXPLANE_SERVICE_ACCOUNT: the
    # RoleBindings made in the control plane's namespace and the VDC's before a Secret is touched there.
    secrets: SecretsAccess = NO_BINDING
    # FLEXPLANE_PROVIDERS_SERVICE_MONITOR_*: each control plane's ServiceMonitor of its API server's /metrics
    # (the providers chart's metrics.serviceMonitor; off: none).
    service_monitors: monitoring.ServiceMonitors = monitoring.NO_SERVICE_MONITORS


class Waiting(Exception):
    """The control plane cannot go further yet (reason, message): retry later."""

    def __init__(self, reason: str, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.delay = RETRY_DELAY if delay is None else delay


@dataclass
class Outcome:
    """What a reconcile leaves to write on the FlexControlPlane itself."""

    status: Body = field(default_factory=dict)
    spec: Body = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    # The cluster whose node pools' pending upgrades follow once the status is written (None: none do).
    cluster: str | None = None


# ------------------------------------------------------------------------------------ reading


def vdc_of(namespace: str) -> str:
    """The VDC of a namespace ``vdc-<vdc>``."""
    vdc = vdc_of_namespace(namespace)
    if vdc is None:
        raise Waiting("NotInVdcNamespace", f"namespace {namespace!r} is no VDC's (vdc-<vdc>)", delay=60)
    return vdc


def owner_cluster(kube: Kube, fcp: Mapping[str, Any]) -> Body:
    """The Cluster that owns this control plane (Cluster API sets the ownerReference)."""
    ref = owner_reference(fcp, CLUSTER)
    if ref is None:
        raise Waiting("WaitingForCluster", "no owner Cluster yet")
    cluster = kube.get(CLUSTER_API, CLUSTER.kind, ref["name"], fcp["metadata"]["namespace"])
    if cluster is None:
        raise Waiting("WaitingForCluster", f"the owner Cluster {ref['name']} is not there yet")
    return cluster


def is_paused(fcp: Mapping[str, Any], cluster: Mapping[str, Any]) -> bool:
    """Cluster API's pause: ``Cluster.spec.paused`` or the ``cluster.x-k8s.io/paused`` annotation."""
    annotations = (fcp.get("metadata") or {}).get("annotations") or {}
    return bool((cluster.get("spec") or {}).get("paused")) or PAUSED_ANNOTATION in annotations


def _first_cidr(cluster: Mapping[str, Any], which: str, default: str) -> str:
    blocks = (((cluster.get("spec") or {}).get("clusterNetwork") or {}).get(which) or {}).get(
        "cidrBlocks"
    ) or []
    return str(blocks[0]) if blocks else default


def control_plane(
    fcp: Mapping[str, Any], cluster: Mapping[str, Any], settings: Settings
) -> model.ControlPlane:
    spec = fcp.get("spec") or {}
    endpoint = spec.get("controlPlaneEndpoint") or {}
    return model.ControlPlane(
        vdc=vdc_of(fcp["metadata"]["namespace"]),
        cluster=cluster["metadata"]["name"],
        version=str(spec["version"]),
        replicas=int(spec.get("replicas", 2)),
        service_type=str(spec.get("serviceType") or "LoadBalancer"),
        service_cidr=_first_cidr(cluster, "services", pki.DEFAULT_SERVICE_CIDR),
        pod_cidr=_first_cidr(cluster, "pods", "10.244.0.0/16"),
        endpoint_host=str(endpoint.get("host") or ""),
        endpoint_port=int(endpoint.get("port") or model.APISERVER_PORT),
        etcd_members=settings.etcd_members,
        registry=settings.image_registry,
        etcd_backup_schedule=str((spec.get("etcdBackup") or {}).get("schedule") or ""),
        network_plugin=_network_plugin(spec),
        node_local_address=settings.sni_node_address,
        zone=str((spec.get("storage") or {}).get("zone") or ""),
        storage_profiles=tuple(str(p) for p in (spec.get("storage") or {}).get("storageProfiles") or ()),
    )


def _network_plugin(spec: Mapping[str, Any]) -> str:
    """spec.networkPlugin (the CRD's enum holds it to one this provider installs; an object written past
    that schema waits, saying so)."""
    try:
        return network.network_plugin(spec.get("networkPlugin"))
    except network.UnknownNetworkPlugin as error:
        raise Waiting("UnknownNetworkPlugin", str(error), delay=60) from None


def _decoded(secret: Mapping[str, Any] | None) -> dict[str, bytes]:
    return {key: base64.b64decode(value) for key, value in ((secret or {}).get("data") or {}).items()}


# ------------------------------------------------------------------------------------ steps


def ensure_namespace(kube: Kube, cp: model.ControlPlane) -> None:
    kube.ensure(render.render_namespace(cp))


def ensure_secrets_access(kube: Kube, namespace: str, settings: Settings) -> None:
    """The providers' RoleBinding to their Secrets role in ``namespace`` (:mod:`providers.common.access`):
    the chart grants them no Secret of any namespace but through it."""
    binding = settings.secrets.binding(namespace)
    if binding is not None:
        kube.ensure(binding)


def ensure_service(kube: Kube, cp: model.ControlPlane, settings: Settings) -> model.ControlPlane:
    """The ``kube-apiserver`` Service, and ``cp`` with the endpoint it gives (:class:`Waiting` until it does).

    The endpoint is read from the Service as it is before it is rendered again: behind a NodePort the
    rendered Service states its allocated nodePorts, which are known only from the server.
    """
    current = kube.get("v1", "Service", model.SERVICE, cp.namespace)
    if current is None:  # made as new: no nodePorts stated, the server allocates them
        current = kube.ensure(render.render_service(dataclasses.replace(cp, endpoint_host="")))
    host, port, agents_port = find_endpoint(current, cp, settings)
    cp = dataclasses.replace(cp, endpoint_host=host, endpoint_port=port, konnectivity_port=agents_port)
    if cp.sni:
        cp = dataclasses.replace(
            cp, konnectivity_host=model.sni_hosts(cp.vdc, cp.cluster, settings.sni_domain)[1]
        )
    kube.ensure(render.render_service(cp), current)
    return cp


def find_endpoint(
    service: Mapping[str, Any], cp: model.ControlPlane, settings: Settings
) -> tuple[str, int, int]:
    """Where nodes reach the control plane: (host, API server port, Konnectivity agents' port).

    A LoadBalancer's address and the Service's ports, or a node address and the nodePorts; in the SNI
    mode the cluster's host name under the operator's domain and the SNI router's port, for both (the
    agents dial Konnectivity's own name there, :func:`.model.sni_hosts`).
    """
    if cp.sni:
        if not settings.sni_domain:
            raise Waiting("NoSNIDomain", "FLEXPLANE_PROVIDERS_SNI_DOMAIN is not set", delay=60)
        host = model.sni_hosts(cp.vdc, cp.cluster, settings.sni_domain)[0]
        return host, settings.sni_port, settings.sni_port
    if cp.service_type == "NodePort":
        if not settings.nodeport_address:
            raise Waiting("NoNodePortAddress", "FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS is not set", delay=60)
        ports = (service.get("spec") or {}).get("ports") or []
        node_ports = {port.get("name"): port.get("nodePort") for port in ports}
        if node_ports.get("https") and node_ports.get("konnectivity"):
            return settings.nodeport_address, int(node_ports["https"]), int(node_ports["konnectivity"])
        raise Waiting("WaitingForEndpoint", "the Service has no nodePorts yet")
    for ingress in ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        host = ingress.get("ip") or ingress.get("hostname")
        if host:
            return str(host), model.APISERVER_PORT, model.KONNECTIVITY_AGENT_PORT
    raise Waiting("WaitingForEndpoint", "the LoadBalancer has not given the Service an address yet")


def ensure_pki(kube: Kube, cp: model.ControlPlane) -> dict[str, bytes]:
    """The PKI's files: the Secret's, completed (made once; kept across restarts)."""
    secret = kube.get("v1", "Secret", model.PKI_SECRET, cp.namespace)
    current = _decoded(secret)
    files = pki.ensure_pki(current, cp.names)
    if files != current:
        write_pki(kube, cp, secret, files)
    return files


def write_pki(
    kube: Kube, cp: model.ControlPlane, read: Mapping[str, Any] | None, files: Mapping[str, bytes]
) -> None:
    """Write the PKI's files over the Secret as it was ``read`` (None: it was not there), or not at all.

    A create, or a patch naming the resourceVersion it read: two reconciles at once (a retry and the
    drift timer) cannot each make a CA and leave the last one written.
    """
    manifest = render.render_pki_secret(cp, files)
    try:
        if read is None:
            kube.request("POST", path_of("v1", "Secret", None, cp.namespace), manifest)
        else:
            manifest["metadata"]["resourceVersion"] = read["metadata"]["resourceVersion"]
            kube.patch("v1", "Secret", model.PKI_SECRET, cp.namespace, manifest)
    except KubeError as error:
        if error.status == 409:
            raise Waiting(
                "PKIChanged", "the PKI's Secret changed meanwhile: read it again", delay=0.5
            ) from error
        raise


def ensure_control_plane_objects(
    kube: Kube,
    cp: model.ControlPlane,
    files: Mapping[str, bytes],
    backup: model.EtcdBackup = model.NO_ETCD_BACKUP,
) -> tuple[Body, Body]:
    """Every other object of the namespace (the etcd snapshots' with a bucket); returns the Deployment and
    the etcd StatefulSet as the server has them (their status too)."""
    deployment: Body = {}
    statefulset: Body = {}
    # The kubeconfigs are rendered from the kept files, the same bytes each time: they match unless
    # a certificate was reissued.
    for manifest in render.management_manifests(cp, files, backup):
        if manifest["kind"] == "Secret" and manifest["metadata"]["name"] == model.PKI_SECRET:
            continue  # ensure_pki's
        written = kube.ensure(manifest)
        if manifest["kind"] == "Deployment":
            deployment = written
        elif manifest["kind"] == "StatefulSet" and manifest["metadata"]["name"] == model.ETCD:
            statefulset = written
    return deployment, statefulset


def ensure_vdc_secrets(
    kube: Kube, cp: model.ControlPlane, files: Mapping[str, bytes], fcp: Mapping[str, Any]
) -> None:
    meta = fcp["metadata"]
    owner = {"apiVersion": FCP_API, "kind": "FlexControlPlane", "name": meta["name"], "uid": meta["uid"]}
    for manifest in render.vdc_secrets(cp, files, meta["namespace"], {**owner, "controller": True}):
        kube.ensure(manifest)


def _account_key(kube: Kube, cp: model.ControlPlane, vdc_namespace: str) -> bytes:
    """The cluster's service account key, as the orchestrator left it in the VDC's namespace (b"": none)."""
    secret = kube.get("v1", "Secret", cloud_controller_secret(cp.cluster), vdc_namespace)
    return _decoded(secret).get(CLOUD_CONTROLLER_KEY, b"")


def ensure_cloud_controller(
    kube: Kube, cp: model.ControlPlane, files: Mapping[str, bytes], vdc_namespace: str, settings: Settings
) -> bool:
    """The cluster's cloud controller, while the providers have flex.plane's URL and the VDC's namespace
    holds the cluster's key (``<cluster>-cloud-controller``, the orchestrator's); otherwise none (one
    there before is deleted: without a key it could only fail). True when it is there.

    The key is copied into the control plane's namespace (a pod mounts no Secret of another namespace);
    a key that appears later is found by the next reconcile or the drift timer.
    """
    key = _account_key(kube, cp, vdc_namespace) if settings.cloud.enabled else b""
    if not key:
        # One read when there is nothing to do: the Secret goes first, so a Deployment gone means both are.
        if kube.get("apps/v1", "Deployment", model.CLOUD_CONTROLLER, cp.namespace) is not None:
            kube.delete("v1", "Secret", model.CLOUD_CONTROLLER, cp.namespace)
            kube.delete("apps/v1", "Deployment", model.CLOUD_CONTROLLER, cp.namespace)
        return False
    for manifest in render.render_cloud_controller(cp, settings.cloud, files, key):
        kube.ensure(manifest)
    return True


def ensure_csi_controller(
    kube: Kube, cp: model.ControlPlane, files: Mapping[str, bytes], vdc_namespace: str, settings: Settings
) -> bool:
    """The CSI driver's controller and its sidecars (:mod:`.storage`), as the cloud controller is: while the
    providers have flex.plane's URL, the VDC's namespace holds the cluster's key and the cluster has storage
    profiles (``spec.storage``); otherwise none (one there before is deleted). True when it is there."""
    key = _account_key(kube, cp, vdc_namespace) if settings.cloud.enabled and cp.storage_profiles else b""
    if not key:
        if kube.get("apps/v1", "Deployment", storage.CONTROLLER, cp.namespace) is not None:
            kube.delete("v1", "Secret", storage.CONTROLLER, cp.namespace)
            kube.delete("apps/v1", "Deployment", storage.CONTROLLER, cp.namespace)
        return False
    server = render.cloud_controller_server(cp)
    for manifest in storage.render_controller(cp, settings.cloud, files, key, server):
        kube.ensure(manifest)
    return True


def ensure_apiserver_metrics(
    kube: Kube, cp: model.ControlPlane, files: Mapping[str, bytes], monitors: monitoring.ServiceMonitors
) -> bool:
    """The ServiceMonitor of the API server's /metrics and its scraper's Secret (:mod:`.monitoring`) while
    the providers chart's ServiceMonitor is on; otherwise none (those there before are deleted). True when
    they are there.

    A refusal (the ServiceMonitor kind not installed, the providers not granted it) is logged and ends the
    step only: the API server's metrics wait for the next reconcile, the control plane does not.
    """
    try:
        if monitors.enabled:
            for manifest in monitoring.render_apiserver_metrics(cp, files, monitors):
                kube.ensure(manifest)
            return True
        # One read when there is nothing to do: the ServiceMonitor is written first and deleted last.
        if kube.get(monitoring.API_VERSION, "ServiceMonitor", monitoring.NAME, cp.namespace) is not None:
            kube.delete("v1", "Secret", monitoring.NAME, cp.namespace)
            kube.delete(monitoring.API_VERSION, "ServiceMonitor", monitoring.NAME, cp.namespace)
    except KubeError as error:
        level = logging.WARNING if monitors.enabled else logging.INFO
        log.log(level, "the API server's ServiceMonitor %s/%s: %s", cp.namespace, monitoring.NAME, error)
    return False


def ensure_infrastructure_endpoint(kube: Kube, cluster: Mapping[str, Any], cp: model.ControlPlane) -> None:
    """``ProxmoxCluster.spec.controlPlaneEndpoint``: the endpoint, once (patched only when it differs)."""
    ref = (cluster.get("spec") or {}).get("infrastructureRef") or {}
    if ref.get("kind") != "ProxmoxCluster" or not ref.get("name"):
        return
    namespace = cluster["metadata"]["namespace"]
    infra = kube.get(PROXMOX_CLUSTER_API, "ProxmoxCluster", ref["name"], namespace)
    if infra is None:
        raise Waiting("WaitingForInfrastructure", f"ProxmoxCluster {ref['name']} is not there yet")
    endpoint = {"host": cp.endpoint_host, "port": cp.endpoint_port}
    if (infra.get("spec") or {}).get("controlPlaneEndpoint") != endpoint:
        kube.patch(
            PROXMOX_CLUSTER_API,
            "ProxmoxCluster",
            ref["name"],
            namespace,
            {"spec": {"controlPlaneEndpoint": endpoint}},
        )


def tenant_client(cp: model.ControlPlane, files: Mapping[str, bytes]) -> Kube:
    server = pki.server_url(cp.endpoint_host, cp.endpoint_port)
    return Kube.from_kubeconfig_dict(
        yaml.safe_load(pki.admin_kubeconfig(files, cluster=cp.cluster, server=server))
    )


def tenant_hash(manifests: list[Body]) -> str:
    return hashlib.sha256(json.dumps(manifests, sort_keys=True).encode()).hexdigest()[:16]


def ensure_tenant_objects(
    cp: model.ControlPlane, files: Mapping[str, bytes], installed: str
) -> tuple[str | None, health.Tenant]:
    """Install the tenant's objects when its API server answers ready over verified TLS: their hash (None
    when not installed), and what the tenant's API server showed of its health (:mod:`.health`).

    Nothing is sent when ``installed`` (the last install's hash) matches: a resync costs a /readyz and a
    read of the Konnectivity agents' DaemonSet.
    """
    manifests = tenant.tenant_manifests(cp, files["ca.crt"])
    digest = tenant_hash(manifests)
    tenant_kube = tenant_client(cp, files)
    try:
        seen = _install_and_observe(cp, tenant_kube, manifests, install=installed != digest)
    finally:
        tenant_kube.close()
    return (digest if seen.ready else None), seen


def _install_and_observe(
    cp: model.ControlPlane, tenant_kube: Kube, manifests: list[Body], *, install: bool
) -> health.Tenant:
    """/readyz; ready, the install (when ``install``) and the agents' DaemonSet; what was seen."""
    try:
        ready, said = tenant_kube.readyz()
        if not ready:
            log.info("tenant API of %s/%s not ready: %s", cp.vdc, cp.cluster, said)
            return health.Tenant(health.NOT_READY, health.failed_checks(said))
        if install:
            for manifest in manifests:
                tenant_kube.ensure(manifest)
    except (*UNREACHABLE, KubeError) as error:
        log.info("tenant API of %s/%s not ready: %s", cp.vdc, cp.cluster, error)
        return health.Tenant(health.UNREACHABLE, _unreachable(error))
    try:
        daemonset = tenant_kube.get("apps/v1", "DaemonSet", model.KONNECTIVITY_AGENT, "kube-system")
    except (*UNREACHABLE, KubeError) as error:  # installed all the same: only the agents are unknown
        log.info("the Konnectivity agents of %s/%s were not read: %s", cp.vdc, cp.cluster, error)
        return health.Tenant(health.READY)
    return health.Tenant(health.READY, agents=health.agents_of(daemonset))


def _unreachable(error: BaseException) -> str:
    """Why the tenant's API server did not answer (or refused), in one line, without the addresses of
    Python objects a connection error may name: the same failure reads the same at every reconcile (the
    status is written only when it changes)."""
    said = " ".join(OBJECT_ADDRESS.sub("", str(error)).split()) or type(error).__name__
    return said[: health.MAX_MESSAGE]


# ------------------------------------------------------------------------------------ status


def deployment_status(
    deployment: Mapping[str, Any], cp: model.ControlPlane, previous: Mapping[str, Any]
) -> Body:
    """The contract's replica counts from the Deployment; ``status.version`` follows its rollout."""
    status = deployment.get("status") or {}
    replicas = int(status.get("replicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    updated = int(status.get("updatedReplicas") or 0)
    rolled_out = (
        int(status.get("observedGeneration") or 0)
        >= int(deployment.get("metadata", {}).get("generation") or 0)
        and updated == cp.replicas
        and replicas == cp.replicas
        and available == cp.replicas
    )
    version = cp.version if rolled_out else previous.get("version")
    result: Body = {
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": available,
        "upToDateReplicas": updated,
        "selector": model.selector_string(cp),
        "externalManagedControlPlane": True,
    }
    if version:
        result["version"] = version
    return result


def reconcile(kube: Kube, fcp: Mapping[str, Any], settings: Settings) -> Outcome | None:
    """Make the world match one FlexControlPlane; what to write on it (None: paused, nothing done).

    Raises :class:`Waiting` when it cannot go further yet.
    """
    cluster = owner_cluster(kube, fcp)
    if is_paused(fcp, cluster):
        return None
    cp = control_plane(fcp, cluster, settings)
    ensure_namespace(kube, cp)
    ensure_secrets_access(kube, cp.namespace, settings)
    ensure_secrets_access(kube, fcp["metadata"]["namespace"], settings)
    # An etcd restore asked for (spec.restore) holds the control plane stopped until its data is back (a new
    # one's: unmade until then).
    restoring = restore.advance(kube, fcp, cp, settings.etcd_backup)
    if restoring.hold:
        return Outcome(status=restore.held_status(fcp, restoring))
    known = (cp.endpoint_host, cp.endpoint_port)
    cp = ensure_service(kube, cp, settings)
    outcome = Outcome()
    if known != (cp.endpoint_host, cp.endpoint_port):
        outcome.spec = {"controlPlaneEndpoint": {"host": cp.endpoint_host, "port": cp.endpoint_port}}
    files = ensure_pki(kube, cp)
    deployment, etcd_statefulset = ensure_control_plane_objects(kube, cp, files, settings.etcd_backup)
    ensure_vdc_secrets(kube, cp, files, fcp)
    ensure_cloud_controller(kube, cp, files, fcp["metadata"]["namespace"], settings)
    ensure_csi_controller(kube, cp, files, fcp["metadata"]["namespace"], settings)
    ensure_apiserver_metrics(kube, cp, files, settings.service_monitors)
    ensure_infrastructure_endpoint(kube, cluster, cp)

    previous = fcp.get("status") or {}
    status = deployment_status(deployment, cp, previous)
    installed = (fcp["metadata"].get("annotations") or {}).get(TENANT_HASH_ANNOTATION, "")
    if status["readyReplicas"] > 0:
        digest, seen = ensure_tenant_objects(cp, files, installed)
    else:
        digest, seen = None, health.Tenant(health.NO_READY_REPLICAS, "no API server replica is ready")
    status["health"] = health.block(seen, etcd_statefulset)
    initialized = (
        bool((previous.get("initialization") or {}).get("controlPlaneInitialized")) or digest is not None
    )
    if digest is not None and digest != installed:
        outcome.annotations[TENANT_HASH_ANNOTATION] = digest
    if initialized:
        status["initialization"] = {"controlPlaneInitialized": True}
    available = digest is not None and status["availableReplicas"] > 0
    reason = "Available" if available else "APIServerUnreachable"
    message = (
        "the API server answers" if available else "the API server does not answer over its endpoint yet"
    )
    if seen.reason == health.NOT_READY:
        reason, message = "APIServerNotReady", f"the API server answers not ready: {seen.message}"
    if not status["readyReplicas"]:
        reason = "WaitingForReplicas"
    status["conditions"] = conditions.set_condition(
        previous.get("conditions"),
        conditions.condition(
            AVAILABLE,
            available,
            reason,
            message,
            generation=int(fcp["metadata"].get("generation") or 0),
        ),
    )
    restored = restore.conclude(restoring, available)
    if restored is not None:
        status["restore"] = restored
        status["conditions"] = conditions.set_condition(
            status["conditions"], restore.condition(restored, int(fcp["metadata"].get("generation") or 0))
        )
    listed = restore.snapshots(fcp, cp, settings.etcd_backup)
    if listed is not restore.UNCHANGED:
        status["etcdBackup"] = listed
    status["observedGeneration"] = int(fcp["metadata"].get("generation") or 0)
    outcome.status = status
    outcome.cluster = cp.cluster
    return outcome


def waiting_status(fcp: Mapping[str, Any], waiting: Waiting) -> Body:
    """The status to show while a step waits: Available False with the step's reason."""
    previous = fcp.get("status") or {}
    return {
        "externalManagedControlPlane": True,
        "conditions": conditions.set_condition(
            previous.get("conditions"),
            conditions.condition(
                AVAILABLE,
                False,
                waiting.reason,
                str(waiting),
                generation=int(fcp["metadata"].get("generation") or 0),
            ),
        ),
    }


def converged(fcp: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Whether the control plane is all the spec asks: available, every replica ready at its version."""
    spec = fcp.get("spec") or {}
    replicas = int(spec.get("replicas", 2))
    return (
        conditions.is_true(status.get("conditions"), AVAILABLE)
        and status.get("version") == spec.get("version")
        and status.get("readyReplicas") == replicas
        and status.get("upToDateReplicas") == replicas
    )


def write(kube: Kube, fcp: Mapping[str, Any], outcome: Outcome) -> None:
    """Write an outcome on the FlexControlPlane: its spec's endpoint and annotations, then its status; then
    the node pools' pending upgrades, once that status says the control plane runs their version."""
    meta = fcp["metadata"]
    patch: Body = {}
    if outcome.spec:
        patch["spec"] = outcome.spec
    if outcome.annotations:
        patch["metadata"] = {"annotations": outcome.annotations}
    if patch:
        kube.patch(FCP_API, "FlexControlPlane", meta["name"], meta["namespace"], patch)
    current = fcp.get("status") or {}
    changed = any(current.get(key) != value for key, value in outcome.status.items() if key != "conditions")
    if changed or not conditions.same(current.get("conditions"), outcome.status.get("conditions")):
        kube.patch(
            FCP_API,
            "FlexControlPlane",
            meta["name"],
            meta["namespace"],
            {"status": outcome.status},
            subresource="status",
        )
    if outcome.cluster is not None:
        # Workers after the control plane, and after its status says so: no reader (Cluster API core, a
        # tenant) sees a pool asking for a version its control plane's status does not run yet.
        workers.apply_pending(kube, fcp, outcome.cluster, converged(fcp, outcome.status))


# ------------------------------------------------------------------------------------ etcd restore


def etcd_restore_jobs(settings: Settings, vdc: str, cluster: str, source: str = "") -> list[Body]:
    """The Jobs that make a cluster's etcd members anew from its newest snapshot, or ``source`` (a
    snapshot's key in the cluster's folder): one per member, for the operator to apply while the control
    plane is paused and scaled to none (docs/operating.md, "Tenant control planes' etcd")."""
    if not settings.etcd_backup.enabled:
        raise ValueError("FLEXPLANE_PROVIDERS_ETCD_BACKUP_S3_URL is not set: there is no snapshot to restore")
    cp = model.ControlPlane(
        vdc=vdc,
        cluster=cluster,
        version="",  # the Jobs run no Kubernetes component
        etcd_members=settings.etcd_members,
        registry=settings.image_registry,
    )
    return [
        render.render_etcd_restore_job(cp, settings.etcd_backup, member, source)
        for member in range(cp.etcd_members)
    ]


# ------------------------------------------------------------------------------------ deletion


def delete(kube: Kube, fcp: Mapping[str, Any], settings: Settings) -> bool:
    """Delete the control plane's namespace and the VDC's two Secrets; True once all are gone."""
    namespace = fcp["metadata"]["namespace"]
    cluster = _cluster_name(fcp)
    if cluster is None:
        return True
    if _bound_for_secrets(kube, namespace, settings):
        for name in (f"{cluster}-kubeconfig", f"{cluster}-ca"):
            kube.delete("v1", "Secret", name, namespace)
    target = model.namespace_name(vdc_of(namespace), cluster)
    if kube.get("v1", "Namespace", target) is None:
        return True
    kube.delete("v1", "Namespace", target)
    return kube.get("v1", "Namespace", target) is None


def _bound_for_secrets(kube: Kube, namespace: str, settings: Settings) -> bool:
    """:func:`ensure_secrets_access`; False when the namespace refuses the binding because it is being
    deleted (its own RoleBinding may be gone already): its Secrets go with it, the garbage collector
    takes them too (they are owned by the FlexControlPlane), and the deletion must not wait for them."""
    try:
        ensure_secrets_access(kube, namespace, settings)
    except KubeError as error:
        if error.status != 403:
            raise
        log.warning("not deleting the Secrets of namespace %s: %s", namespace, error)
        return False
    return True


def _cluster_name(fcp: Mapping[str, Any]) -> str | None:
    """The cluster's name: its owner Cluster's, or Cluster API's label if the reference is gone."""
    for ref in fcp["metadata"].get("ownerReferences") or []:
        if ref.get("kind") == "Cluster":
            return str(ref["name"])
    label = (fcp["metadata"].get("labels") or {}).get(CLUSTER_NAME_LABEL)
    return str(label) if label else None
