"""The datastore of a hosted control plane: its own etcd, a StatefulSet in the control plane's namespace.

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

from orchestrator.sources.kube_objects import CONTROL_PLANE_LABEL
from providers.controlplane.model import (
    ETCD,
    ETCD_CLIENT_PORT,
    ETCD_DATA_DIR,
    ETCD_IMAGE,
    ETCD_METRICS_PORT,
    ETCD_PEER_PORT,
    ETCD_VOLUME_DIR,
    METRICS_ETCD,
    METRICS_LABEL,
    PKI_DIR,
    ControlPlane,
    Manifest,
    labels,
    meta,
    mount,
    pair,
    pki_volume,
    pod_security,
    probe,
    resources,
    security_context,
    spread,
)


def etcd_selector(cp: ControlPlane) -> dict[str, str]:
    return {CONTROL_PLANE_LABEL: cp.cluster, "app.kubernetes.io/component": "etcd"}


def peer_url(cp: ControlPlane, member: int) -> str:
    """Where member ``member`` (``etcd-<member>``) takes its peers' connections."""
    return f"https://{ETCD}-{member}.{ETCD}.{cp.namespace}.svc:{ETCD_PEER_PORT}"


def initial_cluster(cp: ControlPlane) -> str:
    """Every member and its peer URL, as ``--initial-cluster`` (and a snapshot's restore) names them."""
    return ",".join(f"{ETCD}-{index}={peer_url(cp, index)}" for index in range(cp.etcd_members))


def etcd_args(cp: ControlPlane) -> list[str]:
    member = f"https://$(POD_NAME).{ETCD}.{cp.namespace}.svc"
    initial = initial_cluster(cp)
    return [
        "--name=$(POD_NAME)",
        f"--data-dir={ETCD_DATA_DIR}",
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
    """The headless Service that names the members (and offers their metrics port to the providers chart's
    ServiceMonitor: plain HTTP, /metrics, /readyz and /livez only), and their StatefulSet."""
    match = etcd_selector(cp)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(cp, ETCD, **{METRICS_LABEL: METRICS_ETCD}),
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
                {
                    "name": "metrics",
                    "port": ETCD_METRICS_PORT,
                    "targetPort": ETCD_METRICS_PORT,
                    "protocol": "TCP",
                },
            ],
        },
    }
    container = {
        "name": "etcd",
        "image": cp.image(ETCD_IMAGE),
        "command": ["etcd"],
        "args": etcd_args(cp),
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [
            {"name": "client", "containerPort": ETCD_CLIENT_PORT, "protocol": "TCP"},
            {"name": "peer", "containerPort": ETCD_PEER_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": ETCD_METRICS_PORT, "protocol": "TCP"},
        ],
        "startupProbe": probe("/readyz", ETCD_METRICS_PORT, "HTTP", failures=24),
        "livenessProbe": probe("/livez", ETCD_METRICS_PORT, "HTTP", failures=8),
        "readinessProbe": probe("/readyz", ETCD_METRICS_PORT, "HTTP"),
        "resources": resources("100m", "256Mi", "1Gi"),
        "securityContext": security_context(),
        "volumeMounts": [mount("etcd-pki", PKI_DIR), {"name": "data", "mountPath": ETCD_VOLUME_DIR}],
    }
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta(cp, ETCD),
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
                    "securityContext": pod_security(),
                    "affinity": spread(match),
                    "containers": [container],
                    "volumes": [pki_volume("etcd-pki", ["etcd-ca.crt", *pair("etcd-server", "etcd-peer")])],
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
