"""What the control plane's renderers share: its names, ports, paths and images, the ControlPlane they
render, its labels, and the pieces every pod of it is made of (security contexts, probes, volumes)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from orchestrator.sources.kube_objects import (
    CLUSTER_NAME_LABEL,
    CONTROL_PLANE_LABEL,
    CONTROL_PLANE_NAMESPACE_PREFIX,
    CONTROL_PLANE_PKI_SECRET,
    VDC_LABEL,
    control_plane_namespace,
)
from providers.controlplane import pki
from providers.images import ImageLock, shipped

Manifest = dict[str, Any]

APISERVER_PORT = 6443
KONNECTIVITY_AGENT_PORT = 8132
KONNECTIVITY_ADMIN_PORT = 8133
KONNECTIVITY_HEALTH_PORT = 8134
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
ETCD_METRICS_PORT = 2381
CONTROLLER_MANAGER_PORT = 10257
SCHEDULER_PORT = 10259

# Where the images come from unless FLEXPLANE_PROVIDERS_IMAGE_REGISTRY moves them (an air-gapped mirror):
# the images below are paths and tags under it, kept as they are when it moves, so a mirror copied with
# the same paths (`skopeo sync --all`, `crane copy`) serves them. Each is pinned to the digest the image
# lock holds for it (providers/images.py, `make pin-images`), at the mirror too: such a copy keeps digests.
REGISTRY = "registry.k8s.io"
# The Kubernetes components whose images follow the cluster's version (component_image): the control
# plane's three and the tenant's kube-proxy. packaging/images.py pins them for the versions it declares.
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")
KONNECTIVITY_VERSION = "v0.33.0"
ETCD_IMAGE = "etcd:3.6.5-0"
KONNECTIVITY_SERVER_IMAGE = f"kas-network-proxy/proxy-server:{KONNECTIVITY_VERSION}"
KONNECTIVITY_AGENT_IMAGE = f"kas-network-proxy/proxy-agent:{KONNECTIVITY_VERSION}"

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
PKI_SECRET = CONTROL_PLANE_PKI_SECRET
KUBECONFIG_SECRET = "kubeconfigs"  # noqa: S105 - a Secret's name
KONNECTIVITY_CONFIGMAP = "konnectivity"
ETCD = "etcd"
# The Service of the control plane pods' metrics ports (the controller manager's, the scheduler's, the
# Konnectivity server's), and the label that the providers chart's ServiceMonitor selects it and the
# ``etcd`` Service by; its value names what is behind (METRICS_CONTROL_PLANE or METRICS_ETCD).
METRICS_SERVICE = "control-plane-metrics"
METRICS_LABEL = "controlplane.flexplane.io/metrics"
METRICS_CONTROL_PLANE = "control-plane"
METRICS_ETCD = "etcd"
# On the control plane's pod template: the PKI's digest, so a reissued certificate rolls the pods.
PKI_DIGEST_ANNOTATION = "controlplane.flexplane.io/pki-digest"
NONROOT = 65532  # the distroless images' nonroot user
NAMESPACE_PREFIX = CONTROL_PLANE_NAMESPACE_PREFIX

# The etcd snapshots: a CronJob and the Secret it reads (the backup key, the bucket's credentials), both
# ``etcd-backup``, in each control plane's namespace, while the providers have a bucket (EtcdBackup).
ETCD_BACKUP = "etcd-backup"
ETCD_BACKUP_SCHEDULE = "@hourly"  # what a FlexControlPlane's spec.etcdBackup.schedule overrides
ETCD_BACKUP_KEEP = 24  # a day of hourly snapshots
ETCD_BACKUP_SETTINGS = "FLEXPLANE_PROVIDERS_ETCD_BACKUP_"
ETCD_VOLUME_DIR = "/var/lib/etcd"  # where each member's volume is mounted
ETCD_DATA_DIR = f"{ETCD_VOLUME_DIR}/data"  # its data directory (etcd's --data-dir)
SNAPSHOT_DIR = "/snapshot"
SNAPSHOT_FILE = f"{SNAPSHOT_DIR}/etcd.db"
BACKUP_KEY_DIR = "/etc/flexplane/backup"
# flex.plane's own image (backup_dump's), unless FLEXPLANE_PROVIDERS_ETCD_BACKUP_IMAGE names it (the chart
# names the providers' image): this release's, by the package's version. Where it is published, and its
# path there (what a moved registry keeps, as for every other image).
FLEXPLANE_REGISTRY = "ghcr.io"
FLEXPLANE_REPOSITORY = "flexplane/flexplane"
FLEXPLANE_IMAGE = f"{FLEXPLANE_REGISTRY}/{FLEXPLANE_REPOSITORY}"


def flexplane_tag() -> str:
    """flex.plane's image tag at this release: the package's version (``latest`` in a tree not installed)."""
    try:
        return metadata.version("flexplane")
    except metadata.PackageNotFoundError:
        return "latest"


# The tenant cluster's cloud controller (``python -m providers.cloud``): a Deployment and the Secret it mounts
# (its flex.plane key, its kubeconfig, the CA bundle), both ``cloud-controller``, in each control plane's
# namespace, while the providers know flex.plane's URL and the cluster's VDC holds its key (CloudController).
CLOUD_CONTROLLER = "cloud-controller"
CLOUD_CONTROLLER_SETTINGS = "FLEXPLANE_PROVIDERS_CLOUD_"
CLOUD_CONTROLLER_DIR = "/etc/flexplane/cloud-controller"  # the Secret's files, mounted whole
CLOUD_CONTROLLER_PROBES_PORT = 8080
# On the cloud controller's pod template: the digest of its Secret, so a new key or certificate restarts it
# (it reads them at start).
CLOUD_CONTROLLER_DIGEST_ANNOTATION = "controlplane.flexplane.io/cloud-controller-digest"

# serviceType SNI: the Service is a ClusterIP behind the SNI router (providers.sni), which routes the
# host names these annotations of the Service carry to its https and konnectivity ports.
SNI = "SNI"
APISERVER_HOST_ANNOTATION = "controlplane.flexplane.io/apiserver-host"
KONNECTIVITY_HOST_ANNOTATION = "controlplane.flexplane.io/konnectivity-host"
# The Konnectivity server's host name in the SNI mode: this label before the API server's.
KONNECTIVITY_HOST_LABEL = "konnectivity"
# The SNI mode's in-cluster path (providers.sni.nodelocal): the address the API server advertises as the
# tenant's ``kubernetes`` Service's endpoint, which a proxy on every node holds on an interface of its own
# (FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS). From the shared address space (RFC 6598): Kubernetes refuses an
# endpoint that is loopback or link-local, and a VDC network seldom uses this range; one that does loses
# this one address on its nodes.
NODE_LOCAL_ADDRESS = "100.64.255.254"
NODE_LOCAL_INTERFACE = "flexplane-api"
NODE_LOCAL_PROXY = "kube-apiserver-proxy"


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
    konnectivity_port: int = KONNECTIVITY_AGENT_PORT  # where agents reach the server: 8132, or its nodePort
    konnectivity_host: str = ""  # where agents reach it, when not at endpoint_host (the SNI mode's name)
    etcd_members: int = 1
    registry: str = REGISTRY  # the registry every image is pulled from (FLEXPLANE_PROVIDERS_IMAGE_REGISTRY)
    etcd_backup_schedule: str = ""  # spec.etcdBackup.schedule ("": ETCD_BACKUP_SCHEDULE)
    network_plugin: str = "cilium"  # spec.networkPlugin: what the provider installs as the CNI (.network)
    # spec.storage: the cluster's zone and the storage profiles its CSI driver offers (.storage).
    zone: str = ""
    storage_profiles: tuple[str, ...] = ()
    # The SNI mode's in-cluster endpoint (providers.sni.nodelocal): FLEXPLANE_PROVIDERS_SNI_NODE_ADDRESS.
    node_local_address: str = NODE_LOCAL_ADDRESS
    # The third-party images' digests (providers/images.py): the lock this package ships.
    images: ImageLock = field(default_factory=shipped, compare=False, repr=False)

    def image(self, path: str) -> str:
        """The image ``path`` (``name:tag`` under registry.k8s.io) from this control plane's registry, at
        the digest the image lock holds for it (none: the tag alone)."""
        return self.images.pin(f"{REGISTRY}/{path}", f"{self.registry}/{path}")

    def foreign_image(self, home: str, path: str) -> str:
        """An image published elsewhere than registry.k8s.io (``home``, e.g. quay.io): from there, unless
        the registry is moved, then from the moved registry under the same path; at the digest the image
        lock holds for ``home/path`` (a mirror's copy has the same)."""
        return self.images.pin(
            f"{home}/{path}", f"{home if self.registry == REGISTRY else self.registry}/{path}"
        )

    def flexplane_image(self) -> str:
        """flex.plane's own image at this release, from the cluster's registry as every other image is."""
        return self.foreign_image(FLEXPLANE_REGISTRY, f"{FLEXPLANE_REPOSITORY}:{flexplane_tag()}")

    def component_image(self, component: str) -> str:
        """A Kubernetes component's image (kube-apiserver, kube-proxy, ...) of the cluster's version."""
        return self.image(f"{component}:{self.version}")

    @property
    def sni(self) -> bool:
        """Whether the control plane is reached through the SNI router (serviceType SNI)."""
        return self.service_type == SNI

    @property
    def agents_host(self) -> str:
        """The host the Konnectivity agents dial: its own name behind the SNI router, else the endpoint."""
        return self.konnectivity_host or self.endpoint_host

    @property
    def secure_port(self) -> int:
        """The port the API server listens on: 6443; behind a NodePort, the nodePort itself.

        The API server advertises its address and this port as the tenant's ``kubernetes`` Service's
        endpoint; behind a NodePort, only (node address, nodePort) is one that nodes and pods reach.
        """
        if self.service_type == "NodePort" and self.endpoint_host:
            return self.endpoint_port
        return APISERVER_PORT

    @property
    def namespace(self) -> str:
        return namespace_name(self.vdc, self.cluster)

    @property
    def names(self) -> pki.Names:
        return pki.Names(
            cluster=self.cluster,
            namespace=self.namespace,
            endpoint_host=self.endpoint_host,
            konnectivity_host=self.konnectivity_host,
            service_cidr=self.service_cidr,
            etcd_members=self.etcd_members,
        )


@dataclass(frozen=True)
class EtcdBackup:
    """Where every control plane's etcd snapshots go: ``manage.py backup_dump``'s bucket, key and
    retention (FLEXPLANE_PROVIDERS_ETCD_BACKUP_*). No bucket: no snapshots, no CronJob.

    The key and the credentials are the values themselves, which the provider writes into each control
    plane's namespace (a pod mounts no Secret of another namespace); never shown in a repr or a log.
    """

    s3_url: str = ""  # s3://bucket/prefix: the snapshots go under <prefix>/etcd-<vdc>-<cluster>/
    endpoint: str = ""  # an S3-compatible server's URL ("": AWS)
    region: str = "us-east-1"
    keep: int = ETCD_BACKUP_KEEP
    image: str = ""  # flex.plane's image, which runs backup_dump ("": FLEXPLANE_IMAGE at this version)
    key: str = field(default="", repr=False)  # the backup key, base64, as backup_dump's key file holds it
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if self.s3_url and not self.s3_url.startswith("s3://"):
            raise ValueError(f"the etcd backups' bucket must be s3://bucket/prefix, not {self.s3_url!r}")
        if self.s3_url and not self.key:
            raise ValueError("the etcd backups have a bucket and no backup key to seal them with")
        if bool(self.access_key) != bool(self.secret_key):
            raise ValueError("the etcd backups' bucket credentials need both an access key and a secret key")
        if self.keep < 1:
            raise ValueError(f"the etcd backups must keep 1 snapshot or more, not {self.keep}")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> EtcdBackup:
        """From FLEXPLANE_PROVIDERS_ETCD_BACKUP_*: ``S3_URL`` (none: off), ``S3_ENDPOINT``, ``S3_REGION``,
        ``S3_ACCESS_KEY`` and ``S3_SECRET_KEY``, ``KEY`` (base64, 32 bytes: the chart takes these three
        from Secrets), ``KEEP`` and ``IMAGE``; ValueError naming what is wrong."""

        def setting(name: str, default: str = "") -> str:
            return environ.get(f"{ETCD_BACKUP_SETTINGS}{name}", "").strip() or default

        keep = setting("KEEP", str(ETCD_BACKUP_KEEP))
        if not keep.isdigit():
            raise ValueError(f"{ETCD_BACKUP_SETTINGS}KEEP must be a number of snapshots, not {keep!r}")
        key = setting("KEY")
        if key and len(_base64(key, f"{ETCD_BACKUP_SETTINGS}KEY")) != 32:
            raise ValueError(f"{ETCD_BACKUP_SETTINGS}KEY must be 32 bytes (AES-256), base64")
        return cls(
            s3_url=setting("S3_URL"),
            endpoint=setting("S3_ENDPOINT"),
            region=setting("S3_REGION", "us-east-1"),
            keep=int(keep),
            image=setting("IMAGE"),
            key=key,
            access_key=setting("S3_ACCESS_KEY"),
            secret_key=setting("S3_SECRET_KEY"),
        )

    @property
    def enabled(self) -> bool:
        return bool(self.s3_url)

    def dump_name(self, cp: ControlPlane) -> str:
        """The snapshots' name in the bucket (``backup_dump --name``): one folder per cluster."""
        return f"etcd-{cp.vdc}-{cp.cluster}"


NO_ETCD_BACKUP = EtcdBackup()


@dataclass(frozen=True)
class CloudController:
    """What every tenant cluster's cloud controller is given: flex.plane's URL, where its key is exchanged
    for tokens, the CA bundle both chain to, and the image (FLEXPLANE_PROVIDERS_CLOUD_*). No URL: no cloud
    controller is deployed anywhere.

    The CA bundle is the file's text (the chart mounts it from a ConfigMap into the providers' pod): the
    provider copies it into each control plane's namespace, as a pod mounts nothing of another namespace.
    """

    url: str = ""  # flex.plane's origin, as the controllers reach it (its API is /graphql)
    identity_url: str = ""  # the identity provider's origin (Zitadel), where the key is exchanged
    project_id: str = ""  # the identity provider's project the tokens are for
    ca_bundle: str = ""  # PEM ("": the image's system CAs)
    image: str = ""  # flex.plane's image ("": FLEXPLANE_IMAGE at this version, as the etcd backups')

    def __post_init__(self) -> None:
        for name, value in (("URL", self.url), ("IDENTITY_URL", self.identity_url)):
            if value and not value.startswith(("https://", "http://")):
                raise ValueError(
                    f"{CLOUD_CONTROLLER_SETTINGS}{name} must be an http(s):// URL, not {value!r}"
                )
        if self.url and not (self.identity_url and self.project_id):
            raise ValueError(
                f"{CLOUD_CONTROLLER_SETTINGS}URL is set: {CLOUD_CONTROLLER_SETTINGS}IDENTITY_URL and "
                f"{CLOUD_CONTROLLER_SETTINGS}PROJECT_ID must be too (where the cloud controllers' keys are "
                "exchanged for tokens)"
            )
        if self.ca_bundle and "-----BEGIN CERTIFICATE-----" not in self.ca_bundle:
            raise ValueError(f"{CLOUD_CONTROLLER_SETTINGS}CA_FILE holds no PEM certificate")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> CloudController:
        """From FLEXPLANE_PROVIDERS_CLOUD_*: ``URL`` (none: off), ``IDENTITY_URL``, ``PROJECT_ID``,
        ``CA_FILE`` (a PEM bundle's path, read now) and ``IMAGE``; ValueError naming what is wrong."""

        def setting(name: str) -> str:
            return environ.get(f"{CLOUD_CONTROLLER_SETTINGS}{name}", "").strip()

        ca_file = setting("CA_FILE")
        ca_bundle = ""
        if ca_file:
            try:
                ca_bundle = Path(ca_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise ValueError(
                    f"{CLOUD_CONTROLLER_SETTINGS}CA_FILE {ca_file!r} cannot be read: {error}"
                ) from None
        return cls(
            url=setting("URL").rstrip("/"),
            identity_url=setting("IDENTITY_URL").rstrip("/"),
            project_id=setting("PROJECT_ID"),
            ca_bundle=ca_bundle,
            image=setting("IMAGE"),
        )

    @property
    def enabled(self) -> bool:
        return bool(self.url)


NO_CLOUD_CONTROLLER = CloudController()


def _base64(text: str, setting: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise ValueError(f"{setting} must be base64") from None


def namespace_name(vdc: str, cluster: str) -> str:
    return control_plane_namespace(vdc, cluster)


def sni_hosts(vdc: str, cluster: str, domain: str) -> tuple[str, str]:
    """The SNI mode's host names of a cluster: (its API server's, its Konnectivity server's).

    ``<cluster>.<vdc>.<domain>`` and ``konnectivity.<cluster>.<vdc>.<domain>``: a label each for the
    cluster and its VDC, so no two clusters' names meet (a cluster's name is unique in its VDC only), and
    one wildcard DNS record ``*.<domain>`` covers all (a DNS wildcard matches any depth, RFC 4592).
    """
    apiserver = f"{cluster}.{vdc}.{domain.strip('.').lower()}"
    return apiserver, f"{KONNECTIVITY_HOST_LABEL}.{apiserver}"


def labels(cp: ControlPlane) -> dict[str, str]:
    """The labels of every object in the control plane's namespace (the contract's three)."""
    return {
        VDC_LABEL: cp.vdc,
        CLUSTER_NAME_LABEL: cp.cluster,
        CONTROL_PLANE_LABEL: cp.cluster,
    }


def selector_labels(cp: ControlPlane) -> dict[str, str]:
    return {CONTROL_PLANE_LABEL: cp.cluster, "app.kubernetes.io/component": "control-plane"}


def selector_string(cp: ControlPlane) -> str:
    """The pods' label selector as ``status.selector`` and the scale subresource want it."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector_labels(cp).items()))


def meta(cp: ControlPlane, name: str, **extra_labels: str) -> dict[str, Any]:
    return {"name": name, "namespace": cp.namespace, "labels": {**labels(cp), **extra_labels}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def etcd_servers(cp: ControlPlane) -> str:
    return ",".join(
        f"https://{ETCD}-{member}.{ETCD}.{cp.namespace}.svc:{ETCD_CLIENT_PORT}"
        for member in range(cp.etcd_members)
    )


# ------------------------------------------------------------------------------------ pods


def security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": NONROOT,
        "runAsGroup": NONROOT,
        "capabilities": {"drop": ["ALL"]},
    }


def pki_volume(name: str, files: list[str]) -> dict[str, Any]:
    """The ``pki`` Secret, only ``files`` of it: each container sees just the keys it needs."""
    items = [{"key": file, "path": file} for file in files]
    return {"name": name, "secret": {"secretName": PKI_SECRET, "items": items, "defaultMode": 0o440}}


def conf_volume(name: str, file: str) -> dict[str, Any]:
    return {
        "name": name,
        "secret": {
            "secretName": KUBECONFIG_SECRET,
            "items": [{"key": file, "path": file}],
            "defaultMode": 0o440,
        },
    }


def pair(*bases: str) -> list[str]:
    return [f"{base}.{ext}" for base in bases for ext in ("crt", "key")]


def probe(
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


def resources(cpu: str, memory: str, memory_limit: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory_limit}}


def mount(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "mountPath": path, "readOnly": True}


def pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": NONROOT,
        "runAsGroup": NONROOT,
        "fsGroup": NONROOT,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def spread(match: dict[str, str]) -> dict[str, Any]:
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
