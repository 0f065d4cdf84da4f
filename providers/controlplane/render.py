"""What a tenant's hosted control plane is made of, on the management cluster: pure manifests.

Everything lives in the namespace ``fpcp-<vdc>-<cluster>``: the ``pki`` and ``kubeconfigs`` Secrets
(:mod:`.pki`'s files under kubeadm's names, mounted where kubeadm puts them), the ``konnectivity``
ConfigMap (the API server's egress selector configuration), the ``control-plane`` Deployment
(kube-apiserver, kube-controller-manager, kube-scheduler and the konnectivity-server sidecar, which
share a Unix socket), the datastore, the ``kube-apiserver`` Service (6443 ``https``, 8132
``konnectivity``: a LoadBalancer, a NodePort, or a ClusterIP behind the SNI router), a
PodDisruptionBudget, and the ``control-plane-metrics`` Service (the pods' metrics ports, for the providers
chart's ServiceMonitor: :func:`render_metrics_service`), and, while flex.plane's URL is set and the VDC
holds the cluster's key, the tenant cluster's cloud controller (:func:`render_cloud_controller`).

The datastore is :mod:`.etcd`'s; the names, labels and pod pieces both use are :mod:`.model`'s.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

import yaml

from orchestrator.sources.kube_objects import CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, VDC_LABEL
from providers.controlplane import etcd, pki
from providers.controlplane.model import (
    APISERVER_HOST_ANNOTATION,
    APISERVER_PORT,
    BACKUP_KEY_DIR,
    CLOUD_CONTROLLER,
    CLOUD_CONTROLLER_DIGEST_ANNOTATION,
    CLOUD_CONTROLLER_DIR,
    CLOUD_CONTROLLER_PROBES_PORT,
    CONF_DIR,
    CONTROLLER_MANAGER_PORT,
    DEPLOYMENT,
    EGRESS_SELECTOR_FILE,
    ETCD,
    ETCD_BACKUP,
    ETCD_BACKUP_SCHEDULE,
    ETCD_CLIENT_PORT,
    ETCD_DATA_DIR,
    ETCD_IMAGE,
    ETCD_VOLUME_DIR,
    FLEXPLANE_IMAGE,
    KONNECTIVITY_ADMIN_PORT,
    KONNECTIVITY_AGENT,
    KONNECTIVITY_AGENT_PORT,
    KONNECTIVITY_AUDIENCE,
    KONNECTIVITY_CONFIG_DIR,
    KONNECTIVITY_CONFIGMAP,
    KONNECTIVITY_HEALTH_PORT,
    KONNECTIVITY_HOST_ANNOTATION,
    KONNECTIVITY_SERVER_IMAGE,
    KUBECONFIG_SECRET,
    METRICS_CONTROL_PLANE,
    METRICS_LABEL,
    METRICS_SERVICE,
    PKI_DIGEST_ANNOTATION,
    PKI_DIR,
    PKI_SECRET,
    SCHEDULER_PORT,
    SERVICE,
    SNAPSHOT_DIR,
    SNAPSHOT_FILE,
    UDS_DIR,
    UDS_NAME,
    CloudController,
    ControlPlane,
    EtcdBackup,
    Manifest,
    b64,
    conf_volume,
    etcd_servers,
    flexplane_tag,
    labels,
    meta,
    mount,
    pair,
    pki_volume,
    pod_security,
    probe,
    resources,
    security_context,
    selector_labels,
    spread,
)

# ------------------------------------------------------------------------------------ config


def render_namespace(cp: ControlPlane) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cp.namespace, "labels": labels(cp)}}


def _opaque_secret(cp: ControlPlane, name: str, files: Mapping[str, bytes]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": meta(cp, name),
        "data": {file: b64(files[file]) for file in sorted(files)},
    }


def render_pki_secret(cp: ControlPlane, files: Mapping[str, bytes]) -> Manifest:
    return _opaque_secret(cp, PKI_SECRET, files)


def render_kubeconfig_secret(cp: ControlPlane, files: Mapping[str, bytes]) -> Manifest:
    confs = pki.kubeconfig_files(files, cluster=cp.cluster, server=f"https://127.0.0.1:{cp.secure_port}")
    return _opaque_secret(cp, KUBECONFIG_SECRET, confs)


def egress_selector_configuration() -> dict[str, Any]:
    """Traffic from the API server to the cluster (nodes, pods, services) goes through Konnectivity."""
    return {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {"proxyProtocol": "GRPC", "transport": {"uds": {"udsName": UDS_NAME}}},
            }
        ],
    }


def render_konnectivity_configmap(cp: ControlPlane) -> Manifest:
    document = yaml.safe_dump(egress_selector_configuration(), sort_keys=False)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(cp, KONNECTIVITY_CONFIGMAP),
        "data": {"egress-selector-configuration.yaml": document},
    }


# ------------------------------------------------------------------------------------ the Deployment


def apiserver_args(cp: ControlPlane) -> list[str]:
    args = [
        "--allow-privileged=true",
        "--authorization-mode=Node,RBAC",
        "--anonymous-auth=true",  # kube-public/cluster-info and /livez, /readyz for the probes
        f"--client-ca-file={PKI_DIR}/ca.crt",
        "--enable-admission-plugins=NodeRestriction",
        "--enable-bootstrap-token-auth=true",
        f"--egress-selector-config-file={EGRESS_SELECTOR_FILE}",
        f"--etcd-servers={etcd_servers(cp)}",
        f"--etcd-cafile={PKI_DIR}/etcd-ca.crt",
        f"--etcd-certfile={PKI_DIR}/apiserver-etcd-client.crt",
        f"--etcd-keyfile={PKI_DIR}/apiserver-etcd-client.key",
        f"--kubelet-client-certificate={PKI_DIR}/apiserver-kubelet-client.crt",
        f"--kubelet-client-key={PKI_DIR}/apiserver-kubelet-client.key",
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
        f"--proxy-client-cert-file={PKI_DIR}/front-proxy-client.crt",
        f"--proxy-client-key-file={PKI_DIR}/front-proxy-client.key",
        "--requestheader-allowed-names=front-proxy-client",
        f"--requestheader-client-ca-file={PKI_DIR}/front-proxy-ca.crt",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        f"--secure-port={cp.secure_port}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={PKI_DIR}/sa.pub",
        f"--service-account-signing-key-file={PKI_DIR}/sa.key",
        f"--service-cluster-ip-range={cp.service_cidr}",
        f"--tls-cert-file={PKI_DIR}/apiserver.crt",
        f"--tls-private-key-file={PKI_DIR}/apiserver.key",
    ]
    if cp.sni:
        # Behind the SNI router no address leads to this API server; each node's proxy holds this one and
        # carries what pods send the ``kubernetes`` Service to the router, naming the cluster
        # (providers.sni.nodelocal).
        args.insert(0, f"--advertise-address={cp.node_local_address}")
    elif _is_ip(cp.endpoint_host):
        # The tenant's ``kubernetes`` Service must point at the address nodes reach, not the pod's.
        args.insert(0, f"--advertise-address={cp.endpoint_host}")
    return args


# The controller manager and the scheduler authorize every request but their probes' against the tenant's
# API server (delegated authorization); /metrics is added to those let through, so that the chart's
# ServiceMonitor scrapes it without a credential of each tenant cluster. Only the management cluster's
# pod network reaches these ports (the control-plane-metrics Service is a ClusterIP).
ALWAYS_ALLOWED_PATHS = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"


def controller_manager_args(cp: ControlPlane) -> list[str]:
    conf = f"{CONF_DIR}/controller-manager.conf"
    return [
        "--allocate-node-cidrs=true",
        f"--authentication-kubeconfig={conf}",
        ALWAYS_ALLOWED_PATHS,
        f"--authorization-kubeconfig={conf}",
        f"--client-ca-file={PKI_DIR}/ca.crt",
        f"--cluster-cidr={cp.pod_cidr}",
        f"--cluster-name={cp.cluster}",
        f"--cluster-signing-cert-file={PKI_DIR}/ca.crt",
        f"--cluster-signing-key-file={PKI_DIR}/ca.key",
        "--controllers=*,bootstrapsigner,tokencleaner",
        f"--kubeconfig={conf}",
        "--leader-elect=true",
        f"--requestheader-client-ca-file={PKI_DIR}/front-proxy-ca.crt",
        f"--root-ca-file={PKI_DIR}/ca.crt",
        f"--service-account-private-key-file={PKI_DIR}/sa.key",
        f"--service-cluster-ip-range={cp.service_cidr}",
        "--use-service-account-credentials=true",
    ]


def scheduler_args() -> list[str]:
    conf = f"{CONF_DIR}/scheduler.conf"
    return [
        f"--authentication-kubeconfig={conf}",
        ALWAYS_ALLOWED_PATHS,
        f"--authorization-kubeconfig={conf}",
        f"--kubeconfig={conf}",
        "--leader-elect=true",
    ]


def konnectivity_server_args(cp: ControlPlane) -> list[str]:
    """apiserver-network-proxy's server: GRPC over the UDS to the API server, agents on 8132."""
    return [
        f"--uds-name={UDS_NAME}",
        "--delete-existing-uds-file",
        f"--cluster-cert={PKI_DIR}/konnectivity-server.crt",
        f"--cluster-key={PKI_DIR}/konnectivity-server.key",
        "--mode=grpc",
        "--server-port=0",
        f"--agent-port={KONNECTIVITY_AGENT_PORT}",
        f"--admin-port={KONNECTIVITY_ADMIN_PORT}",
        f"--health-port={KONNECTIVITY_HEALTH_PORT}",
        "--agent-namespace=kube-system",
        f"--agent-service-account={KONNECTIVITY_AGENT}",
        f"--kubeconfig={CONF_DIR}/konnectivity-server.conf",
        f"--authentication-audience={KONNECTIVITY_AUDIENCE}",
        # Agents connect through the Service until they hold a tunnel to every replica.
        f"--server-count={cp.replicas}",
    ]


def _kube_component(
    cp: ControlPlane,
    name: str,
    args: list[str],
    port: tuple[str, int],
    sizing: dict[str, Any],
    mounts: list[dict[str, Any]],
) -> dict[str, Any]:
    """kube-controller-manager or kube-scheduler: the image of the cluster's version, health over HTTPS
    on ``port`` (its name and number)."""
    port_name, number = port
    return {
        "name": name,
        "image": cp.component_image(name),
        "command": [name],
        "args": args,
        "ports": [{"name": port_name, "containerPort": number, "protocol": "TCP"}],
        "startupProbe": probe("/healthz", number, failures=24, delay=5),
        "livenessProbe": probe("/healthz", number, failures=8),
        "resources": sizing,
        "securityContext": security_context(),
        "volumeMounts": mounts,
    }


def _containers(cp: ControlPlane) -> list[dict[str, Any]]:
    uds = {"name": "konnectivity-uds", "mountPath": UDS_DIR}
    apiserver = {
        "name": "kube-apiserver",
        "image": cp.component_image("kube-apiserver"),
        "command": ["kube-apiserver"],
        "args": apiserver_args(cp),
        "ports": [{"name": "https", "containerPort": cp.secure_port, "protocol": "TCP"}],
        "startupProbe": probe("/livez", cp.secure_port, failures=24, delay=5),
        "livenessProbe": probe("/livez", cp.secure_port, failures=8),
        "readinessProbe": probe("/readyz", cp.secure_port),
        "resources": resources("250m", "512Mi", "2Gi"),
        "securityContext": security_context(),
        "volumeMounts": [
            mount("apiserver-pki", PKI_DIR),
            mount("konnectivity-config", KONNECTIVITY_CONFIG_DIR),
            uds,
        ],
    }
    controller_manager = _kube_component(
        cp,
        "kube-controller-manager",
        controller_manager_args(cp),
        ("cm-https", CONTROLLER_MANAGER_PORT),
        resources("100m", "128Mi", "512Mi"),
        [
            mount("controller-manager-pki", PKI_DIR),
            {
                **mount("controller-manager-conf", f"{CONF_DIR}/controller-manager.conf"),
                "subPath": "controller-manager.conf",
            },
        ],
    )
    scheduler = _kube_component(
        cp,
        "kube-scheduler",
        scheduler_args(),
        ("sched-https", SCHEDULER_PORT),
        resources("50m", "64Mi", "256Mi"),
        [{**mount("scheduler-conf", f"{CONF_DIR}/scheduler.conf"), "subPath": "scheduler.conf"}],
    )
    konnectivity = {
        "name": "konnectivity-server",
        "image": cp.image(KONNECTIVITY_SERVER_IMAGE),
        "command": ["/proxy-server"],
        "args": konnectivity_server_args(cp),
        "ports": [
            {"name": "konnectivity", "containerPort": KONNECTIVITY_AGENT_PORT, "protocol": "TCP"},
            {"name": "knp-admin", "containerPort": KONNECTIVITY_ADMIN_PORT, "protocol": "TCP"},
            {"name": "knp-health", "containerPort": KONNECTIVITY_HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": probe("/healthz", KONNECTIVITY_HEALTH_PORT, "HTTP", delay=10),
        # No readiness probe: its /readyz is false until an agent connects, and agents come with
        # nodes, which join only once this pod is ready: the pod would never be.
        "resources": resources("20m", "32Mi", "256Mi"),
        "securityContext": security_context(),
        "volumeMounts": [
            mount("konnectivity-pki", PKI_DIR),
            {
                **mount("konnectivity-conf", f"{CONF_DIR}/konnectivity-server.conf"),
                "subPath": "konnectivity-server.conf",
            },
            uds,
        ],
    }
    return [apiserver, controller_manager, scheduler, konnectivity]


def _volumes() -> list[dict[str, Any]]:
    return [
        pki_volume(
            "apiserver-pki",
            [
                "ca.crt",
                "front-proxy-ca.crt",
                "etcd-ca.crt",
                "sa.pub",
                "sa.key",
                *pair("apiserver", "apiserver-kubelet-client", "apiserver-etcd-client", "front-proxy-client"),
            ],
        ),
        pki_volume("controller-manager-pki", [*pair("ca"), "front-proxy-ca.crt", "sa.key"]),
        pki_volume("konnectivity-pki", pair("konnectivity-server")),
        conf_volume("controller-manager-conf", "controller-manager.conf"),
        conf_volume("scheduler-conf", "scheduler.conf"),
        conf_volume("konnectivity-conf", "konnectivity-server.conf"),
        {"name": "konnectivity-config", "configMap": {"name": KONNECTIVITY_CONFIGMAP}},
        {"name": "konnectivity-uds", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]


def render_deployment(cp: ControlPlane, pki_digest: str = "") -> Manifest:
    """The control plane's pods; ``pki_digest`` on their template rolls them when a certificate changes
    (the kubeconfigs are mounted by subPath, which a Secret's update does not reach)."""
    match = selector_labels(cp)
    annotations = {PKI_DIGEST_ANNOTATION: pki_digest} if pki_digest else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(cp, DEPLOYMENT),
        "spec": {
            "replicas": cp.replicas,
            "selector": {"matchLabels": match},
            # Control plane first and never below its replicas: a new pod is ready before an old one goes.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {"labels": {**labels(cp), **match}, "annotations": annotations},
                "spec": {
                    "automountServiceAccountToken": False,  # nothing here talks to the management cluster
                    "enableServiceLinks": False,
                    "securityContext": pod_security(),
                    "affinity": spread(match),
                    "containers": _containers(cp),
                    "volumes": _volumes(),
                },
            },
        },
    }


# ------------------------------------------------------------------------------------ exposure


def render_service(cp: ControlPlane) -> Manifest:
    """The ``kube-apiserver`` Service: a LoadBalancer, a NodePort, or in the SNI mode a ClusterIP that names
    the control plane's two host names for the SNI router (:mod:`providers.sni.routes`), once known."""
    metadata = meta(cp, SERVICE)
    if cp.sni and cp.endpoint_host:
        metadata["annotations"] = {
            APISERVER_HOST_ANNOTATION: cp.endpoint_host,
            KONNECTIVITY_HOST_ANNOTATION: cp.agents_host,
        }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "type": "ClusterIP" if cp.sni else cp.service_type,
            "selector": selector_labels(cp),
            "ports": _service_ports(cp),
        },
    }


def _service_ports(cp: ControlPlane) -> list[dict[str, Any]]:
    """6443 and 8132; behind a NodePort, once known, its nodePorts stated (a patch keeps them allocated)."""
    https = {"name": "https", "port": APISERVER_PORT, "targetPort": cp.secure_port, "protocol": "TCP"}
    agents = {
        "name": "konnectivity",
        "port": KONNECTIVITY_AGENT_PORT,
        "targetPort": KONNECTIVITY_AGENT_PORT,
        "protocol": "TCP",
    }
    if cp.service_type == "NodePort" and cp.endpoint_host:
        https["nodePort"], agents["nodePort"] = cp.endpoint_port, cp.konnectivity_port
    return [https, agents]


def render_metrics_service(cp: ControlPlane) -> Manifest:
    """``control-plane-metrics``: a ClusterIP Service of the control plane pods' metrics ports, labelled for
    the providers chart's ServiceMonitor (``metrics.serviceMonitor``).

    ``controller-manager`` and ``scheduler`` serve /metrics over HTTPS with a certificate they make
    themselves (scraped unverified, in the management cluster only); ``konnectivity-metrics`` is the
    Konnectivity server's health port, whose /metrics has
    ``konnectivity_network_proxy_server_ready_backend_connections`` (the agents connected to that replica).
    etcd's metrics port is on the ``etcd`` Service (:mod:`.etcd`). The API server's /metrics is not here:
    it answers only a client certificate of the tenant cluster's own CA, which no one ServiceMonitor holds;
    while the chart's ServiceMonitor is on, the provider writes the control plane's own ServiceMonitor of
    it, scraping the ``kube-apiserver`` Service with such a certificate (:mod:`.monitoring`).
    """
    ports = [
        ("controller-manager", CONTROLLER_MANAGER_PORT),
        ("scheduler", SCHEDULER_PORT),
        ("konnectivity-metrics", KONNECTIVITY_HEALTH_PORT),
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(cp, METRICS_SERVICE, **{METRICS_LABEL: METRICS_CONTROL_PLANE}),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(cp),
            "ports": [
                {"name": name, "port": port, "targetPort": port, "protocol": "TCP"} for name, port in ports
            ],
        },
    }


def render_pdb(cp: ControlPlane) -> Manifest:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(cp, DEPLOYMENT),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels(cp)}},
    }


def management_manifests(
    cp: ControlPlane, files: Mapping[str, bytes], backup: EtcdBackup | None = None
) -> list[Manifest]:
    """Everything in the control plane's namespace, in the order to create it (the Service apart); the
    etcd snapshots' Secret and CronJob when ``backup`` has a bucket."""
    return [
        render_pki_secret(cp, files),
        render_kubeconfig_secret(cp, files),
        render_konnectivity_configmap(cp),
        *etcd.render_etcd(cp),
        render_deployment(cp, pki.digest(files)),
        render_pdb(cp),
        render_metrics_service(cp),
        *(render_etcd_backup(cp, backup) if backup is not None and backup.enabled else []),
    ]


# ------------------------------------------------------------------------------------ etcd snapshots


def render_etcd_backup(cp: ControlPlane, backup: EtcdBackup) -> list[Manifest]:
    """The ``etcd-backup`` Secret (the backup key, the bucket's credentials) and CronJob: ``etcdctl snapshot
    save`` from the cluster's etcd, then flex.plane's ``backup_dump`` seals the snapshot into the bucket
    under ``etcd-<vdc>-<cluster>`` and keeps the newest ``backup.keep`` (docs/operating.md restores one)."""
    credentials = {"key": backup.key.encode()}
    if backup.access_key:
        credentials |= {"access-key": backup.access_key.encode(), "secret-key": backup.secret_key.encode()}
    return [_opaque_secret(cp, ETCD_BACKUP, credentials), render_etcd_backup_cronjob(cp, backup)]


def etcd_snapshot_container(cp: ControlPlane) -> dict[str, Any]:
    """``etcdctl snapshot save`` (the etcd image carries etcdctl), as the API server's etcd client.

    One endpoint, as a snapshot wants: the members' Service name (which every member's certificate
    names); it resolves to every member, and the dial takes the first that answers.
    """
    env = {
        "ETCDCTL_ENDPOINTS": f"https://{ETCD}.{cp.namespace}.svc:{ETCD_CLIENT_PORT}",
        "ETCDCTL_CACERT": f"{PKI_DIR}/etcd-ca.crt",
        "ETCDCTL_CERT": f"{PKI_DIR}/apiserver-etcd-client.crt",
        "ETCDCTL_KEY": f"{PKI_DIR}/apiserver-etcd-client.key",
        "ETCDCTL_DIAL_TIMEOUT": "10s",
        "ETCDCTL_COMMAND_TIMEOUT": "5m",
    }
    return {
        "name": "snapshot",
        "image": cp.image(ETCD_IMAGE),
        "command": ["etcdctl", "snapshot", "save", SNAPSHOT_FILE],
        "env": [{"name": name, "value": value} for name, value in env.items()],
        "resources": resources("50m", "64Mi", "256Mi"),
        "securityContext": security_context(),
        "volumeMounts": [
            mount("etcd-client-pki", PKI_DIR),
            {"name": "snapshot", "mountPath": SNAPSHOT_DIR},
        ],
    }


def _bucket_env(backup: EtcdBackup) -> list[dict[str, Any]]:
    """What backup_dump and fetch_dump read: the key's file, the bucket's server and credentials (the
    base settings: they read none of the orchestrator's)."""
    env: list[dict[str, Any]] = [
        {"name": "DJANGO_SETTINGS_MODULE", "value": "flexplane.settings.base"},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        {"name": "FLEXPLANE_BACKUP_KEY_FILE", "value": f"{BACKUP_KEY_DIR}/key"},
        {"name": "FLEXPLANE_BACKUP_S3_REGION", "value": backup.region},
    ]
    if backup.endpoint:
        env.append({"name": "FLEXPLANE_BACKUP_S3_ENDPOINT", "value": backup.endpoint})
    if backup.access_key:
        for name, key in (("ACCESS_KEY", "access-key"), ("SECRET_KEY", "secret-key")):
            reference = {"secretKeyRef": {"name": ETCD_BACKUP, "key": key}}
            env.append({"name": f"FLEXPLANE_BACKUP_S3_{name}", "valueFrom": reference})
    return env


def etcd_seal_container(cp: ControlPlane, backup: EtcdBackup) -> dict[str, Any]:
    """flex.plane's ``backup_dump``: the snapshot sealed with the backup key into the bucket."""
    return {
        "name": "seal",
        "image": backup.image or flexplane_image(),
        "command": ["python", "-m", "django", "backup_dump", SNAPSHOT_FILE],
        "args": [f"--s3={backup.s3_url}", f"--name={backup.dump_name(cp)}", f"--keep={backup.keep}"],
        "env": _bucket_env(backup),
        "resources": resources("50m", "128Mi", "256Mi"),
        "securityContext": security_context(),
        "volumeMounts": [
            {"name": "snapshot", "mountPath": SNAPSHOT_DIR},
            mount("backup-key", BACKUP_KEY_DIR),
        ],
    }


def render_etcd_backup_cronjob(cp: ControlPlane, backup: EtcdBackup) -> Manifest:
    """The snapshot, then its sealing, in one pod on ``spec.etcdBackup.schedule`` (hourly by default);
    no Kubernetes API, no account token, the root filesystem read-only: the snapshot and its sealed copy
    on an emptyDir that goes with the pod."""
    job_labels = {**labels(cp), "app.kubernetes.io/component": ETCD_BACKUP}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta(cp, ETCD_BACKUP, **{"app.kubernetes.io/component": ETCD_BACKUP}),
        "spec": {
            "schedule": cp.etcd_backup_schedule or ETCD_BACKUP_SCHEDULE,
            # A snapshot still being taken when the next is due is let finish; the next waits its turn.
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": job_labels},
                "spec": {
                    "backoffLimit": 2,
                    "activeDeadlineSeconds": 1800,
                    "template": {
                        "metadata": {"labels": job_labels},
                        "spec": {
                            "restartPolicy": "Never",
                            "automountServiceAccountToken": False,
                            "enableServiceLinks": False,
                            "securityContext": pod_security(),
                            "initContainers": [etcd_snapshot_container(cp)],
                            "containers": [etcd_seal_container(cp, backup)],
                            "volumes": _etcd_backup_volumes(),
                        },
                    },
                },
            },
        },
    }


# The restore's two file steps, in flex.plane's image (the etcd image has no shell): clear what a failed
# restore left, then put the restored directory in the data directory's place, the old one kept beside it.
CLEAR_RESTORED = "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)"
SWAP_RESTORED = (
    "import os, shutil, sys; data, restored, before = sys.argv[1:]; "
    "shutil.rmtree(before, ignore_errors=True); "
    "os.path.exists(data) and os.rename(data, before); os.rename(restored, data)"
)
RESTORED_DIR = f"{ETCD_VOLUME_DIR}/restored"
BEFORE_RESTORE_DIR = f"{ETCD_VOLUME_DIR}/data.before-restore"


def etcd_restore_job_name(member: int) -> str:
    return f"{ETCD}-restore-{member}"


def etcd_restore_command(cp: ControlPlane, member: int) -> list[str]:
    """``etcdutl snapshot restore``: a data directory for member ``member`` of this cluster's members (a new
    cluster id: no member of the old one can join it), its revision bumped and compacted past the old
    one's so that no watcher of the API server takes the restored keys for ones it has seen."""
    return [
        "etcdutl", "snapshot", "restore", SNAPSHOT_FILE,
        f"--data-dir={RESTORED_DIR}",
        f"--name={ETCD}-{member}",
        f"--initial-cluster={etcd.initial_cluster(cp)}",
        f"--initial-advertise-peer-urls={etcd.peer_url(cp, member)}",
        f"--initial-cluster-token={cp.namespace}",
        "--bump-revision=1000000000",
        "--mark-compacted",
    ]  # fmt: skip


def etcd_restore_containers(
    cp: ControlPlane, backup: EtcdBackup, member: int, source: str = ""
) -> list[dict[str, Any]]:
    """fetch (the snapshot opened), clear (what a failed restore left), restore, swap (the restored
    directory in the data directory's place, the old one kept beside it), in this order."""
    url = f"{backup.s3_url.rstrip('/')}/{backup.dump_name(cp)}" + (f"/{source}" if source else "")
    python = backup.image or flexplane_image()
    data = {"name": "data", "mountPath": ETCD_VOLUME_DIR}
    snapshot = {"name": "snapshot", "mountPath": SNAPSHOT_DIR}
    containers: list[dict[str, Any]] = [
        {
            "name": "fetch",
            "image": python,
            "command": ["python", "-m", "django", "fetch_dump", f"--s3={url}", f"--to={SNAPSHOT_FILE}"],
            "env": _bucket_env(backup),
            "volumeMounts": [snapshot, mount("backup-key", BACKUP_KEY_DIR)],
        },
        {
            "name": "clear",
            "image": python,
            "command": ["python", "-c", CLEAR_RESTORED, RESTORED_DIR],
            "volumeMounts": [data],
        },
        {
            "name": "restore",
            "image": cp.image(ETCD_IMAGE),
            "command": etcd_restore_command(cp, member),
            "volumeMounts": [snapshot, data],
        },
        {
            "name": "swap",
            "image": python,
            "command": ["python", "-c", SWAP_RESTORED, ETCD_DATA_DIR, RESTORED_DIR, BEFORE_RESTORE_DIR],
            "volumeMounts": [data],
        },
    ]
    for container in containers:
        container["resources"] = resources("50m", "128Mi", "512Mi")
        container["securityContext"] = security_context()
    return containers


def render_etcd_restore_job(cp: ControlPlane, backup: EtcdBackup, member: int, source: str = "") -> Manifest:
    """A Job that makes member ``member``'s data anew from a snapshot in the bucket: the cluster's newest,
    or ``source`` (a snapshot's key under its folder). Run while the control plane is paused and its etcd
    scaled to none (docs/operating.md), one per member, from the same snapshot; the CronJob's Secret gives
    the key and the bucket's credentials. The old data stays as ``data.before-restore`` until the next."""
    *steps, last = etcd_restore_containers(cp, backup, member, source)
    component = {"app.kubernetes.io/component": "etcd-restore"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(cp, etcd_restore_job_name(member), **component),
        "spec": {
            "backoffLimit": 0,  # a failed restore is looked at, not run again over what it left
            "activeDeadlineSeconds": 1800,
            "template": {
                "metadata": {"labels": {**labels(cp), **component}},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": pod_security(),
                    "initContainers": steps,
                    "containers": [last],
                    "volumes": [
                        *[v for v in _etcd_backup_volumes() if v["name"] != "etcd-client-pki"],
                        # The member's own volume (the StatefulSet's claim): scaled to none, no pod holds it.
                        {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{ETCD}-{member}"}},
                    ],
                },
            },
        },
    }


def _etcd_backup_volumes() -> list[dict[str, Any]]:
    return [
        pki_volume("etcd-client-pki", ["etcd-ca.crt", *pair("apiserver-etcd-client")]),
        # The snapshot and its sealed copy side by side: twice etcd's 2 GiB quota.
        {"name": "snapshot", "emptyDir": {"sizeLimit": "5Gi"}},
        {
            "name": "backup-key",
            "secret": {
                "secretName": ETCD_BACKUP,
                "items": [{"key": "key", "path": "key"}],
                "defaultMode": 0o440,
            },
        },
    ]


def flexplane_image() -> str:
    """flex.plane's image at this package's version (when no image is named for the backups)."""
    return f"{FLEXPLANE_IMAGE}:{flexplane_tag()}"


# ------------------------------------------------------------------------------------ the cloud controller

CLOUD_KEY_FILE = "key.json"
CLOUD_KUBECONFIG_FILE = "kubeconfig"
CLOUD_CA_FILE = "ca.crt"


def cloud_controller_server(cp: ControlPlane) -> str:
    """Where the cloud controller reaches the tenant's API server: the ``kube-apiserver`` Service by its
    in-cluster name (which the serving certificate names), on 6443 whatever the Service's type."""
    return f"https://{SERVICE}.{cp.namespace}.svc:{APISERVER_PORT}"


def cloud_controller_files(
    cp: ControlPlane, cloud: CloudController, files: Mapping[str, bytes], key: bytes
) -> dict[str, bytes]:
    """The ``cloud-controller`` Secret's files: the service account's key as the VDC's Secret holds it,
    the controller's own kubeconfig of the tenant cluster, and the CA bundle when one is set."""
    result = {
        CLOUD_KEY_FILE: key,
        CLOUD_KUBECONFIG_FILE: pki.cloud_controller_kubeconfig(
            files, cluster=cp.cluster, server=cloud_controller_server(cp)
        ),
    }
    if cloud.ca_bundle:
        result[CLOUD_CA_FILE] = cloud.ca_bundle.encode()
    return result


def render_cloud_controller(
    cp: ControlPlane, cloud: CloudController, files: Mapping[str, bytes], key: bytes
) -> list[Manifest]:
    """The tenant cluster's cloud controller (``python -m providers.cloud``): its Secret and Deployment.

    ``files``: the PKI's (the controller's certificate and the CA); ``key``: the cluster's service account
    key file, as the orchestrator left it in the VDC's namespace. One replica, recreated rather than
    rolled: two controllers at once would each take a public address for a new Service in the same pass.
    """
    secret_files = cloud_controller_files(cp, cloud, files, key)
    component = {"app.kubernetes.io/component": CLOUD_CONTROLLER}
    match = {**component, CONTROL_PLANE_LABEL: cp.cluster}
    return [
        _opaque_secret(cp, CLOUD_CONTROLLER, secret_files),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(cp, CLOUD_CONTROLLER, **component),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": match},
                "strategy": {"type": "Recreate"},
                "template": {
                    "metadata": {
                        "labels": {**labels(cp), **match},
                        "annotations": {CLOUD_CONTROLLER_DIGEST_ANNOTATION: pki.digest(secret_files)},
                    },
                    "spec": {
                        # It speaks to the tenant's API server and to flex.plane, never to this cluster's.
                        "automountServiceAccountToken": False,
                        "enableServiceLinks": False,
                        "securityContext": pod_security(),
                        "containers": [cloud_controller_container(cp, cloud, CLOUD_CA_FILE in secret_files)],
                        "volumes": [
                            {
                                "name": CLOUD_CONTROLLER,
                                "secret": {"secretName": CLOUD_CONTROLLER, "defaultMode": 0o440},
                            },
                            {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
                        ],
                    },
                },
            },
        },
    ]


def cloud_controller_container(cp: ControlPlane, cloud: CloudController, ca: bool) -> dict[str, Any]:
    """``python -m providers.cloud`` with its settings (providers/cloud/__main__.py) as variables."""
    env = {
        "FLEXPLANE_CLOUD_KUBECONFIG": f"{CLOUD_CONTROLLER_DIR}/{CLOUD_KUBECONFIG_FILE}",
        "FLEXPLANE_URL": cloud.url,
        "FLEXPLANE_CLOUD_KEY": f"{CLOUD_CONTROLLER_DIR}/{CLOUD_KEY_FILE}",
        "FLEXPLANE_IDENTITY_URL": cloud.identity_url,
        "FLEXPLANE_PROJECT_ID": cloud.project_id,
        **({"FLEXPLANE_CA_FILE": f"{CLOUD_CONTROLLER_DIR}/{CLOUD_CA_FILE}"} if ca else {}),
        "FLEXPLANE_CLOUD_CLUSTER": cp.cluster,
        "FLEXPLANE_CLOUD_VDC": cp.vdc,
        "FLEXPLANE_PROBES_LISTEN": f":{CLOUD_CONTROLLER_PROBES_PORT}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    return {
        "name": CLOUD_CONTROLLER,
        "image": cloud.image or flexplane_image(),
        "command": ["python", "-m", "providers.cloud"],
        "env": [{"name": name, "value": value} for name, value in env.items()],
        "ports": [{"name": "probes", "containerPort": CLOUD_CONTROLLER_PROBES_PORT, "protocol": "TCP"}],
        # Alive while its loop runs; ready once a pass succeeded and while the last one did (a pass fails
        # while flex.plane or the tenant's API server does not answer: not ready then, not restarted).
        "livenessProbe": probe("/healthz", CLOUD_CONTROLLER_PROBES_PORT, "HTTP", delay=10),
        "readinessProbe": probe("/readyz", CLOUD_CONTROLLER_PROBES_PORT, "HTTP"),
        # About 110 MiB resident after its first passes (test_cloud_controller_pod.py measures it).
        "resources": resources("20m", "128Mi", "256Mi"),
        "securityContext": security_context(),
        "volumeMounts": [
            mount(CLOUD_CONTROLLER, CLOUD_CONTROLLER_DIR),
            # The Kubernetes client writes a kubeconfig's inline certificate and key to temporary files.
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - a pod's own emptyDir
        ],
    }


# ------------------------------------------------------------------------------------ the VDC's Secrets


def vdc_secrets(
    cp: ControlPlane, files: Mapping[str, bytes], vdc_namespace: str, owner: Mapping[str, Any] | None = None
) -> list[Manifest]:
    """Cluster API's ``<cluster>-kubeconfig`` and ``<cluster>-ca`` in the VDC's namespace.

    ``owner`` (an ownerReference to the FlexControlPlane) lets the garbage collector take them with it
    even if the finalizer was removed by hand; the provider deletes them itself otherwise.
    """
    meta_labels = {CLUSTER_NAME_LABEL: cp.cluster, VDC_LABEL: cp.vdc}
    owners = {"ownerReferences": [dict(owner)]} if owner else {}
    server = pki.server_url(cp.endpoint_host, cp.endpoint_port)
    kubeconfig = pki.admin_kubeconfig(files, cluster=cp.cluster, server=server)

    def secret(name: str, data: dict[str, str]) -> Manifest:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "cluster.x-k8s.io/secret",
            "metadata": {"name": name, "namespace": vdc_namespace, "labels": meta_labels, **owners},
            "data": data,
        }

    return [
        secret(f"{cp.cluster}-kubeconfig", {"value": b64(kubeconfig)}),
        secret(f"{cp.cluster}-ca", {"tls.crt": b64(files["ca.crt"]), "tls.key": b64(files["ca.key"])}),
    ]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
