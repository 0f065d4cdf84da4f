"""What a tenant's hosted control plane is made of, on the management cluster: pure manifests.

Everything lives in the namespace ``fpcp-<vdc>-<cluster>``: the ``pki`` and ``kubeconfigs`` Secrets
(:mod:`.pki`'s files under kubeadm's names, mounted where kubeadm puts them), the ``konnectivity``
ConfigMap (the API server's egress selector configuration), the ``control-plane`` Deployment
(kube-apiserver, kube-controller-manager, kube-scheduler and the konnectivity-server sidecar, which
share a Unix socket), the datastore, the ``kube-apiserver`` Service (6443 ``https``, 8132
``konnectivity``) and a PodDisruptionBudget.

The datastore: one etcd per tenant cluster, a StatefulSet in that namespace
--------------------------------------------------------------------------
The alternative is Kamaji's default, one shared etcd (three members) holding every cluster under
``--etcd-prefix=/<vdc>/<cluster>``. At 100 clusters:

- Memory and CPU. An idle etcd member with a small cluster's objects holds 50-150 MiB and a few
  mCPU; 100 single-member etcds ask about 100 x 256 MiB = 25 GiB of requests (actual use nearer
  10 GiB) and 100 small volumes, where the shared three members need 3 x 2-4 GiB. The per-cluster
  etcd costs roughly 3-5x the memory, and about as much as a third of one API server's.
- Isolation. A shared etcd gives every API server a client certificate that reads and writes every
  tenant's keys (Secrets included) unless per-tenant etcd users and roles are kept in step with the
  prefixes (Kamaji does, with a controller holding etcd's root); a prefix alone isolates nothing.
  Per-cluster etcd has its own CA: a tenant's credentials open only its own data.
- Blast radius and noise. One shared etcd's outage, its 8 GiB quota filled, a defragmentation or a
  tenant listing 100k objects stalls all 100 control planes; per cluster, one tenant's.
- Lifecycle. Deleting the namespace deletes the data (nothing to garbage-collect under a prefix);
  each cluster's etcd is upgraded, backed up and restored on its own, and it moves with the namespace.

flex.plane sells isolated VDCs, so isolation and blast radius win over the memory: etcd per cluster,
rendered here. Members: 1 by default (the provider's ``FLEXPLANE_PROVIDERS_ETCD_MEMBERS``, 1 or 3, set
once for an installation: an etcd cluster's size is fixed when it is bootstrapped), on a volume, so a
lost pod comes back with its data; 3 members triple the figures above for a control plane that
survives a node.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from providers.controlplane import pki

Manifest = dict[str, Any]

APISERVER_PORT = 6443
KONNECTIVITY_AGENT_PORT = 8132
KONNECTIVITY_ADMIN_PORT = 8133
KONNECTIVITY_HEALTH_PORT = 8134
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
ETCD_METRICS_PORT = 2381

REGISTRY = "registry.k8s.io"
KONNECTIVITY_VERSION = "v0.33.0"
ETCD_IMAGE = f"{REGISTRY}/etcd:3.6.5-0"
KONNECTIVITY_SERVER_IMAGE = f"{REGISTRY}/kas-network-proxy/proxy-server:{KONNECTIVITY_VERSION}"
KONNECTIVITY_AGENT_IMAGE = f"{REGISTRY}/kas-network-proxy/proxy-agent:{KONNECTIVITY_VERSION}"

PKI_DIR = "/etc/kubernetes/pki"
CONF_DIR = "/etc/kubernetes"
KONNECTIVITY_CONFIG_DIR = "/etc/kubernetes/konnectivity"
EGRESS_SELECTOR_FILE = f"{KONNECTIVITY_CONFIG_DIR}/egress-selector-configuration.yaml"
UDS_DIR = "/etc/kubernetes/konnectivity-server"
UDS_NAME = f"{UDS_DIR}/konnectivity-server.socket"
KONNECTIVITY_AUDIENCE = "system:konnectivity-server"
KONNECTIVITY_AGENT = "konnectivity-agent"

DEPLOYMENT = "control-plane"
SERVICE = "kube-apiserver"
PKI_SECRET = "pki"  # noqa: S105 - a Secret's name
KUBECONFIG_SECRET = "kubeconfigs"  # noqa: S105 - a Secret's name
KONNECTIVITY_CONFIGMAP = "konnectivity"
ETCD = "etcd"
NONROOT = 65532  # the distroless images' nonroot user


@dataclass(frozen=True)
class ControlPlane:
    """One FlexControlPlane, as the renderers need it."""

    vdc: str
    cluster: str
    version: str
    replicas: int = 2
    service_type: str = "LoadBalancer"
    service_cidr: str = pki.DEFAULT_SERVICE_CIDR
    pod_cidr: str = "10.244.0.0/16"
    endpoint_host: str = ""
    endpoint_port: int = APISERVER_PORT
    etcd_members: int = 1

    @property
    def namespace(self) -> str:
        return namespace_name(self.vdc, self.cluster)

    @property
    def names(self) -> pki.Names:
        return pki.Names(
            cluster=self.cluster,
            namespace=self.namespace,
            endpoint_host=self.endpoint_host,
            service_cidr=self.service_cidr,
            etcd_members=self.etcd_members,
        )


def namespace_name(vdc: str, cluster: str) -> str:
    return f"fpcp-{vdc}-{cluster}"


def labels(cp: ControlPlane) -> dict[str, str]:
    """The labels of every object in the control plane's namespace (the contract's three)."""
    return {
        "flexplane.io/vdc": cp.vdc,
        "cluster.x-k8s.io/cluster-name": cp.cluster,
        "flexplane.io/control-plane": cp.cluster,
    }


def selector_labels(cp: ControlPlane) -> dict[str, str]:
    return {"flexplane.io/control-plane": cp.cluster, "app.kubernetes.io/component": "control-plane"}


def selector_string(cp: ControlPlane) -> str:
    """The pods' label selector as ``status.selector`` and the scale subresource want it."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector_labels(cp).items()))


def _meta(cp: ControlPlane, name: str, **extra_labels: str) -> dict[str, Any]:
    return {"name": name, "namespace": cp.namespace, "labels": {**labels(cp), **extra_labels}}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ------------------------------------------------------------------------------------ config


def render_namespace(cp: ControlPlane) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cp.namespace, "labels": labels(cp)}}


def render_pki_secret(cp: ControlPlane, files: Mapping[str, bytes]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(cp, PKI_SECRET),
        "data": {name: _b64(files[name]) for name in sorted(files)},
    }


def render_kubeconfig_secret(cp: ControlPlane, files: Mapping[str, bytes]) -> Manifest:
    confs = pki.kubeconfig_files(files, cluster=cp.cluster)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(cp, KUBECONFIG_SECRET),
        "data": {name: _b64(confs[name]) for name in sorted(confs)},
    }


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
        "metadata": _meta(cp, KONNECTIVITY_CONFIGMAP),
        "data": {"egress-selector-configuration.yaml": document},
    }


# ------------------------------------------------------------------------------------ the Deployment


def _image(component: str, version: str) -> str:
    return f"{REGISTRY}/{component}:{version}"


def etcd_servers(cp: ControlPlane) -> str:
    return ",".join(
        f"https://{ETCD}-{member}.{ETCD}.{cp.namespace}.svc:{ETCD_CLIENT_PORT}"
        for member in range(cp.etcd_members)
    )


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
        f"--secure-port={APISERVER_PORT}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={PKI_DIR}/sa.pub",
        f"--service-account-signing-key-file={PKI_DIR}/sa.key",
        f"--service-cluster-ip-range={cp.service_cidr}",
        f"--tls-cert-file={PKI_DIR}/apiserver.crt",
        f"--tls-private-key-file={PKI_DIR}/apiserver.key",
    ]
    if _is_ip(cp.endpoint_host):
        # The tenant's ``kubernetes`` Service must point at the address nodes reach, not the pod's.
        args.insert(0, f"--advertise-address={cp.endpoint_host}")
    return args


def controller_manager_args(cp: ControlPlane) -> list[str]:
    conf = f"{CONF_DIR}/controller-manager.conf"
    return [
        "--allocate-node-cidrs=true",
        f"--authentication-kubeconfig={conf}",
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


def _security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": NONROOT,
        "runAsGroup": NONROOT,
        "capabilities": {"drop": ["ALL"]},
    }


def _pki_volume(name: str, files: list[str]) -> dict[str, Any]:
    """The ``pki`` Secret, only ``files`` of it: each container sees just the keys it needs."""
    items = [{"key": file, "path": file} for file in files]
    return {"name": name, "secret": {"secretName": PKI_SECRET, "items": items, "defaultMode": 0o440}}


def _conf_volume(name: str, file: str) -> dict[str, Any]:
    return {
        "name": name,
        "secret": {
            "secretName": KUBECONFIG_SECRET,
            "items": [{"key": file, "path": file}],
            "defaultMode": 0o440,
        },
    }


def _pair(*bases: str) -> list[str]:
    return [f"{base}.{ext}" for base in bases for ext in ("crt", "key")]


def _probe(
    path: str, port: int, scheme: str = "HTTPS", *, failures: int = 3, delay: int = 0
) -> dict[str, Any]:
    probe: dict[str, Any] = {
        "httpGet": {"path": path, "port": port, "scheme": scheme},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }
    if delay:
        probe["initialDelaySeconds"] = delay
    return probe


def _resources(cpu: str, memory: str, memory_limit: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory_limit}}


def _mount(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "mountPath": path, "readOnly": True}


def _containers(cp: ControlPlane) -> list[dict[str, Any]]:
    uds = {"name": "konnectivity-uds", "mountPath": UDS_DIR}
    apiserver = {
        "name": "kube-apiserver",
        "image": _image("kube-apiserver", cp.version),
        "command": ["kube-apiserver", *apiserver_args(cp)],
        "ports": [{"name": "https", "containerPort": APISERVER_PORT, "protocol": "TCP"}],
        "startupProbe": _probe("/livez", APISERVER_PORT, failures=24, delay=5),
        "livenessProbe": _probe("/livez", APISERVER_PORT, failures=8),
        "readinessProbe": _probe("/readyz", APISERVER_PORT),
        "resources": _resources("250m", "512Mi", "2Gi"),
        "securityContext": _security_context(),
        "volumeMounts": [
            _mount("apiserver-pki", PKI_DIR),
            _mount("konnectivity-config", KONNECTIVITY_CONFIG_DIR),
            uds,
        ],
    }
    controller_manager = {
        "name": "kube-controller-manager",
        "image": _image("kube-controller-manager", cp.version),
        "command": ["kube-controller-manager", *controller_manager_args(cp)],
        "ports": [{"name": "cm-https", "containerPort": 10257, "protocol": "TCP"}],
        "startupProbe": _probe("/healthz", 10257, failures=24, delay=5),
        "livenessProbe": _probe("/healthz", 10257, failures=8),
        "resources": _resources("100m", "128Mi", "512Mi"),
        "securityContext": _security_context(),
        "volumeMounts": [
            _mount("controller-manager-pki", PKI_DIR),
            {
                **_mount("controller-manager-conf", f"{CONF_DIR}/controller-manager.conf"),
                "subPath": "controller-manager.conf",
            },
        ],
    }
    scheduler = {
        "name": "kube-scheduler",
        "image": _image("kube-scheduler", cp.version),
        "command": ["kube-scheduler", *scheduler_args()],
        "ports": [{"name": "sched-https", "containerPort": 10259, "protocol": "TCP"}],
        "startupProbe": _probe("/healthz", 10259, failures=24, delay=5),
        "livenessProbe": _probe("/healthz", 10259, failures=8),
        "resources": _resources("50m", "64Mi", "256Mi"),
        "securityContext": _security_context(),
        "volumeMounts": [
            {**_mount("scheduler-conf", f"{CONF_DIR}/scheduler.conf"), "subPath": "scheduler.conf"},
        ],
    }
    konnectivity = {
        "name": "konnectivity-server",
        "image": KONNECTIVITY_SERVER_IMAGE,
        "command": ["/proxy-server", *konnectivity_server_args(cp)],
        "ports": [
            {"name": "konnectivity", "containerPort": KONNECTIVITY_AGENT_PORT, "protocol": "TCP"},
            {"name": "knp-admin", "containerPort": KONNECTIVITY_ADMIN_PORT, "protocol": "TCP"},
            {"name": "knp-health", "containerPort": KONNECTIVITY_HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": _probe("/healthz", KONNECTIVITY_HEALTH_PORT, "HTTP", delay=10),
        "readinessProbe": _probe("/readyz", KONNECTIVITY_HEALTH_PORT, "HTTP"),
        "resources": _resources("20m", "32Mi", "256Mi"),
        "securityContext": _security_context(),
        "volumeMounts": [
            _mount("konnectivity-pki", PKI_DIR),
            {
                **_mount("konnectivity-conf", f"{CONF_DIR}/konnectivity-server.conf"),
                "subPath": "konnectivity-server.conf",
            },
            uds,
        ],
    }
    return [apiserver, controller_manager, scheduler, konnectivity]


def _volumes() -> list[dict[str, Any]]:
    return [
        _pki_volume(
            "apiserver-pki",
            [
                "ca.crt",
                "front-proxy-ca.crt",
                "etcd-ca.crt",
                "sa.pub",
                "sa.key",
                *_pair(
                    "apiserver", "apiserver-kubelet-client", "apiserver-etcd-client", "front-proxy-client"
                ),
            ],
        ),
        _pki_volume("controller-manager-pki", [*_pair("ca"), "front-proxy-ca.crt", "sa.key"]),
        _pki_volume("konnectivity-pki", _pair("konnectivity-server")),
        _conf_volume("controller-manager-conf", "controller-manager.conf"),
        _conf_volume("scheduler-conf", "scheduler.conf"),
        _conf_volume("konnectivity-conf", "konnectivity-server.conf"),
        {"name": "konnectivity-config", "configMap": {"name": KONNECTIVITY_CONFIGMAP}},
        {"name": "konnectivity-uds", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]


def _pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": NONROOT,
        "runAsGroup": NONROOT,
        "fsGroup": NONROOT,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _spread(match: dict[str, str]) -> dict[str, Any]:
    """Replicas prefer different nodes (preferred: a small management cluster must still schedule them)."""
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": match},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


def render_deployment(cp: ControlPlane) -> Manifest:
    match = selector_labels(cp)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(cp, DEPLOYMENT),
        "spec": {
            "replicas": cp.replicas,
            "selector": {"matchLabels": match},
            # Control plane first and never below its replicas: a new pod is ready before an old one goes.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {"labels": {**labels(cp), **match}},
                "spec": {
                    "automountServiceAccountToken": False,  # nothing here talks to the management cluster
                    "enableServiceLinks": False,
                    "securityContext": _pod_security(),
                    "affinity": _spread(match),
                    "containers": _containers(cp),
                    "volumes": _volumes(),
                },
            },
        },
    }


# ------------------------------------------------------------------------------------ datastore


def etcd_selector(cp: ControlPlane) -> dict[str, str]:
    return {"flexplane.io/control-plane": cp.cluster, "app.kubernetes.io/component": "etcd"}


def etcd_args(cp: ControlPlane) -> list[str]:
    member = f"https://$(POD_NAME).{ETCD}.{cp.namespace}.svc"
    initial = ",".join(
        f"{ETCD}-{index}=https://{ETCD}-{index}.{ETCD}.{cp.namespace}.svc:{ETCD_PEER_PORT}"
        for index in range(cp.etcd_members)
    )
    return [
        "--name=$(POD_NAME)",
        "--data-dir=/var/lib/etcd/data",
        f"--listen-client-urls=https://0.0.0.0:{ETCD_CLIENT_PORT}",
        f"--advertise-client-urls={member}:{ETCD_CLIENT_PORT}",
        f"--listen-peer-urls=https://0.0.0.0:{ETCD_PEER_PORT}",
        f"--initial-advertise-peer-urls={member}:{ETCD_PEER_PORT}",
        f"--listen-metrics-urls=http://0.0.0.0:{ETCD_METRICS_PORT}",
        f"--initial-cluster={initial}",
        "--initial-cluster-state=new",
        f"--initial-cluster-token={cp.namespace}",
        "--client-cert-auth=true",
        f"--trusted-ca-file={PKI_DIR}/etcd-ca.crt",
        f"--cert-file={PKI_DIR}/etcd-server.crt",
        f"--key-file={PKI_DIR}/etcd-server.key",
        "--peer-client-cert-auth=true",
        f"--peer-trusted-ca-file={PKI_DIR}/etcd-ca.crt",
        f"--peer-cert-file={PKI_DIR}/etcd-peer.crt",
        f"--peer-key-file={PKI_DIR}/etcd-peer.key",
        "--quota-backend-bytes=2147483648",  # 2 GiB: one tenant cannot grow past it
        "--snapshot-count=10000",
    ]


def render_etcd(cp: ControlPlane) -> list[Manifest]:
    """The headless Service that names the members, and their StatefulSet."""
    match = etcd_selector(cp)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(cp, ETCD),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,  # members find each other before they are ready
            "selector": match,
            "ports": [
                {
                    "name": "client",
                    "port": ETCD_CLIENT_PORT,
                    "targetPort": ETCD_CLIENT_PORT,
                    "protocol": "TCP",
                },
                {"name": "peer", "port": ETCD_PEER_PORT, "targetPort": ETCD_PEER_PORT, "protocol": "TCP"},
            ],
        },
    }
    container = {
        "name": "etcd",
        "image": ETCD_IMAGE,
        "command": ["etcd", *etcd_args(cp)],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [
            {"name": "client", "containerPort": ETCD_CLIENT_PORT, "protocol": "TCP"},
            {"name": "peer", "containerPort": ETCD_PEER_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": ETCD_METRICS_PORT, "protocol": "TCP"},
        ],
        "startupProbe": _probe("/readyz", ETCD_METRICS_PORT, "HTTP", failures=24),
        "livenessProbe": _probe("/livez", ETCD_METRICS_PORT, "HTTP", failures=8),
        "readinessProbe": _probe("/readyz", ETCD_METRICS_PORT, "HTTP"),
        "resources": _resources("100m", "256Mi", "1Gi"),
        "securityContext": _security_context(),
        "volumeMounts": [_mount("etcd-pki", PKI_DIR), {"name": "data", "mountPath": "/var/lib/etcd"}],
    }
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(cp, ETCD),
        "spec": {
            "serviceName": ETCD,
            "replicas": cp.etcd_members,
            "podManagementPolicy": "Parallel",  # every member at once: a new etcd cluster needs its quorum
            "selector": {"matchLabels": match},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
            "template": {
                "metadata": {"labels": {**labels(cp), **match}},
                "spec": {
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": _pod_security(),
                    "affinity": _spread(match),
                    "containers": [container],
                    "volumes": [_pki_volume("etcd-pki", ["etcd-ca.crt", *_pair("etcd-server", "etcd-peer")])],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data", "labels": labels(cp)},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "4Gi"}}},
                }
            ],
        },
    }
    return [service, statefulset]


# ------------------------------------------------------------------------------------ exposure


def render_service(cp: ControlPlane) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(cp, SERVICE),
        "spec": {
            "type": cp.service_type,
            "selector": selector_labels(cp),
            "ports": [
                {"name": "https", "port": APISERVER_PORT, "targetPort": APISERVER_PORT, "protocol": "TCP"},
                {
                    "name": "konnectivity",
                    "port": KONNECTIVITY_AGENT_PORT,
                    "targetPort": KONNECTIVITY_AGENT_PORT,
                    "protocol": "TCP",
                },
            ],
        },
    }


def render_pdb(cp: ControlPlane) -> Manifest:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(cp, DEPLOYMENT),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels(cp)}},
    }


def management_manifests(cp: ControlPlane, files: Mapping[str, bytes]) -> list[Manifest]:
    """Everything in the control plane's namespace, in the order to create it (the Service apart)."""
    return [
        render_pki_secret(cp, files),
        render_kubeconfig_secret(cp, files),
        render_konnectivity_configmap(cp),
        *render_etcd(cp),
        render_deployment(cp),
        render_pdb(cp),
    ]


# ------------------------------------------------------------------------------------ the VDC's Secrets


def vdc_secrets(cp: ControlPlane, files: Mapping[str, bytes], vdc_namespace: str) -> list[Manifest]:
    """Cluster API's ``<cluster>-kubeconfig`` and ``<cluster>-ca`` in the VDC's namespace."""
    meta_labels = {"cluster.x-k8s.io/cluster-name": cp.cluster, "flexplane.io/vdc": cp.vdc}
    server = pki.server_url(cp.endpoint_host, cp.endpoint_port)
    kubeconfig = pki.admin_kubeconfig(files, cluster=cp.cluster, server=server)
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "cluster.x-k8s.io/secret",
            "metadata": {
                "name": f"{cp.cluster}-kubeconfig",
                "namespace": vdc_namespace,
                "labels": meta_labels,
            },
            "data": {"value": _b64(kubeconfig)},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "cluster.x-k8s.io/secret",
            "metadata": {"name": f"{cp.cluster}-ca", "namespace": vdc_namespace, "labels": meta_labels},
            "data": {"tls.crt": _b64(files["ca.crt"]), "tls.key": _b64(files["ca.key"])},
        },
    ]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
