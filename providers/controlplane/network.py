"""The tenant cluster's network plugin (its CNI), installed with kubeadm's addons: pure manifests.

A kubelet reports its node NotReady ("network plugin not ready") until a CNI configuration is in
``/etc/cni/net.d``; kubeadm installs none and leaves the choice to whoever runs it. A managed cluster has
a working network from the start, so each FlexControlPlane names one in ``spec.networkPlugin``:

- ``cilium`` (the default): Cilium's agent (a DaemonSet on every node, on the host's network, which
  writes the CNI configuration and the ``cilium-cni`` binary onto the node) and its operator (a
  Deployment, which registers Cilium's CRDs and hands each node its share of the pod CIDR);
- ``calico``: Calico's manifest install, its own CRDs and the Kubernetes API as its datastore
  (:mod:`.calico`): ``calico-node`` (a DaemonSet on every node, on the host's network, which writes the
  CNI configuration and binaries onto the node and programs routes and policy) and
  ``calico-kube-controllers`` (a Deployment, which collects the IPAM state of gone nodes and pods);
- ``none``: nothing, as with kubeadm: the nodes stay NotReady until the tenant applies a plugin of
  their own.

Cilium is set up for where tenant clusters run, from its documented requirements (these manifests are
written here, not taken from Cilium's chart):

- routing: VXLAN tunnels between the nodes (``routing-mode: tunnel``), so the VDC network carries only
  the nodes' own addresses (UDP 8472 between them) and needs no route to any pod;
- IPAM ``cluster-pool`` over the cluster's pod CIDR (``spec.clusterNetwork.pods``), a /24 per node;
- kube-proxy stays (kubeadm's, installed beside it): ``kube-proxy-replacement: "false"``;
- the API server at the cluster's endpoint (``KUBERNETES_SERVICE_HOST``/``_PORT`` of the agent and the
  operator, Cilium's ``k8sServiceHost``/``k8sServicePort``): the ``kubernetes`` Service needs kube-proxy
  or Cilium already running, and the endpoint is what every node reaches;
- cgroup v2 where the node's systemd mounts it, ``/sys/fs/cgroup`` (the nodes' Ubuntu 24.04 does), so
  no init container has to mount it on the host; the BPF filesystem mounted by one if the host has not;
- no L7 proxy (Envoy runs as a DaemonSet of its own since Cilium 1.16, not installed here) and no
  Hubble: a tenant who wants them chooses ``none`` and installs Cilium with its own chart.

Each plugin's release is pinned per Kubernetes minor version (:data:`CILIUM_RELEASES`,
:data:`.calico.CALICO_RELEASES`); an upgrade that moves the minor moves the plugin with it when its pin
moves (the manifests change, so the provider applies them again). What the plugins' manifests share is
in :mod:`.cni`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from providers.controlplane import calico, cni
from providers.controlplane.cni import CNI_BIN_DIR, CNI_CONF_DIR, MANAGED_BY, NAMESPACE
from providers.controlplane.model import ControlPlane, Manifest

CILIUM, CALICO, NONE = "cilium", "calico", "none"
# What spec.networkPlugin may be (the CRD's enum, the orchestrator's NETWORK_PLUGINS), and what it is
# when unset.
NETWORK_PLUGINS = (CILIUM, CALICO, NONE)
DEFAULT_NETWORK_PLUGIN = CILIUM

# The Cilium release of each Kubernetes minor: a line whose e2e tests cover that minor (Cilium's
# "Kubernetes Compatibility" page: 1.18 lists 1.30 to 1.33; 1.19 is the line released after 1.34). A
# version the catalog offers must have its minor here (tests/providers/controlplane/test_network.py
# fails otherwise); one that has not gets the nearest release pinned below it, or else the oldest.
CILIUM_RELEASES: dict[tuple[int, int], str] = {
    (1, 33): "v1.18.4",
    (1, 34): "v1.19.3",
}
# Where Cilium publishes its images; a moved registry (FLEXPLANE_PROVIDERS_IMAGE_REGISTRY) keeps their
# paths, as for every other image: <mirror>/cilium/cilium:<release>. Each is pulled at the digest the image
# lock holds for quay.io/<path> (providers/images.py), from the mirror too.
CILIUM_REGISTRY = "quay.io"

AGENT, OPERATOR, CONFIG = "cilium", "cilium-operator", "cilium-config"
CONFIG_DIR = "/etc/cilium/config"  # the agent's and the operator's --config-dir: the ConfigMap's keys
AGENT_HEALTH_PORT = 9879
OPERATOR_HEALTH_PORT = 9234

# Cilium's own kinds, which its agent reads and its operator keeps.
CILIUM_KINDS = [
    "ciliumnetworkpolicies",
    "ciliumclusterwidenetworkpolicies",
    "ciliumendpoints",
    "ciliumendpointslices",
    "ciliumidentities",
    "ciliumnodes",
    "ciliumnodeconfigs",
    "ciliumcidrgroups",
    "ciliumloadbalancerippools",
    "ciliumlocalredirectpolicies",
    "ciliumegressgatewaypolicies",
    "ciliumenvoyconfigs",
    "ciliumclusterwideenvoyconfigs",
    "ciliuml2announcementpolicies",
    "ciliumpodippools",
    "ciliumbgpclusterconfigs",
    "ciliumbgppeerconfigs",
    "ciliumbgpadvertisements",
    "ciliumbgpnodeconfigs",
    "ciliumbgpnodeconfigoverrides",
]


class UnknownNetworkPlugin(ValueError):
    """spec.networkPlugin names no plugin this provider installs."""


def network_plugin(value: Any) -> str:
    """spec.networkPlugin, checked: the default when unset; :class:`UnknownNetworkPlugin` for another."""
    if value in (None, ""):
        return DEFAULT_NETWORK_PLUGIN
    if value not in NETWORK_PLUGINS:
        raise UnknownNetworkPlugin(
            f"spec.networkPlugin {str(value)[:40]!r} is none of {', '.join(NETWORK_PLUGINS)}"
        )
    return str(value)


def cilium_release(version: str) -> str:
    """The Cilium release pinned for a Kubernetes version (see :data:`CILIUM_RELEASES`)."""
    return cni.pinned(CILIUM_RELEASES, version)


@dataclass(frozen=True)
class CiliumImages:
    agent: str
    operator: str


def cilium_images(cp: ControlPlane) -> CiliumImages:
    """The agent's and the operator's images for the cluster's version, from its registry."""
    release = cilium_release(cp.version)
    return CiliumImages(
        agent=cp.foreign_image(CILIUM_REGISTRY, f"cilium/cilium:{release}"),
        operator=cp.foreign_image(CILIUM_REGISTRY, f"cilium/operator-generic:{release}"),
    )


def manifests(cp: ControlPlane) -> list[Manifest]:
    """The network plugin's objects for the tenant cluster, in the order to create them (none: none)."""
    if cp.network_plugin == NONE:
        return []
    if cp.network_plugin == CALICO:
        return calico.calico(cp)
    return cilium(cp)


# ------------------------------------------------------------------------------------ Cilium


def cilium_config(cp: ControlPlane) -> dict[str, str]:
    """The ``cilium-config`` ConfigMap's keys: each is one of the agent's (and operator's) flags."""
    return {
        "cluster-name": "default",
        "cluster-id": "0",
        "identity-allocation-mode": "crd",
        # Pods' addresses: the cluster's pod CIDR, a /24 per node, handed out by the operator.
        "ipam": "cluster-pool",
        "cluster-pool-ipv4-cidr": cp.pod_cidr,
        "cluster-pool-ipv4-mask-size": "24",
        "enable-ipv4": "true",
        "enable-ipv6": "false",
        # Between nodes, VXLAN: the VDC network routes no pod address.
        "routing-mode": "tunnel",
        "tunnel-protocol": "vxlan",
        "enable-ipv4-masquerade": "true",
        "enable-bpf-masquerade": "false",
        # kubeadm's kube-proxy handles Services.
        "kube-proxy-replacement": "false",
        "enable-l7-proxy": "false",
        "enable-hubble": "false",
        "enable-policy": "default",
        "enable-endpoint-health-checking": "true",
        "enable-health-checking": "true",
        "agent-health-port": str(AGENT_HEALTH_PORT),
        "operator-api-serve-addr": f"127.0.0.1:{OPERATOR_HEALTH_PORT}",
        "cgroup-root": "/sys/fs/cgroup",
        "bpf-root": "/sys/fs/bpf",
        "bpf-map-dynamic-size-ratio": "0.0025",
        "preallocate-bpf-maps": "false",
        "monitor-aggregation": "medium",
        "cni-exclusive": "true",
        "write-cni-conf-when-ready": f"/host{CNI_CONF_DIR}/05-cilium.conflist",
    }


def _health_probe(port: int, **extra: Any) -> dict[str, Any]:
    return {
        "httpGet": {
            "host": "127.0.0.1",
            "path": "/healthz",
            "port": port,
            "scheme": "HTTP",
            "httpHeaders": [{"name": "brief", "value": "true"}],
        },
        "periodSeconds": 30,
        "timeoutSeconds": 5,
        **extra,
    }


# The capabilities Cilium's agent documents it needs (BPF programs and maps, routes, iptables, its
# socket options), instead of a privileged container.
AGENT_CAPABILITIES = [
    "CHOWN",
    "KILL",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "SYS_MODULE",
    "SYS_ADMIN",
    "SYS_RESOURCE",
    "DAC_OVERRIDE",
    "FOWNER",
    "SETGID",
    "SETUID",
    "PERFMON",
    "BPF",
]


def _spc(capabilities: list[str]) -> dict[str, Any]:
    """A container's security context with only ``capabilities``, as a super-privileged SELinux type
    (spc_t: it works on the host's files)."""
    return {
        "seLinuxOptions": {"level": "s0", "type": "spc_t"},
        "capabilities": {"add": capabilities, "drop": ["ALL"]},
    }


def cilium_agent(cp: ControlPlane) -> Manifest:
    """The agent's DaemonSet: one per node, on the host's network, before the node is Ready (it is what
    makes it Ready), whatever its taints."""
    images = cilium_images(cp)
    selector = {"k8s-app": AGENT}
    config_mount = {"name": CONFIG, "mountPath": CONFIG_DIR, "readOnly": True}
    init_containers = [
        {
            # The BPF filesystem, where the agent pins its maps across restarts: mounted if not already.
            "name": "mount-bpf-fs",
            "image": images.agent,
            "command": ["/bin/bash", "-c", "--"],
            "args": ["mount | grep '/sys/fs/bpf type bpf' || mount -t bpf bpf /sys/fs/bpf"],
            "securityContext": {"privileged": True},
            "volumeMounts": [
                {"name": "bpf-maps", "mountPath": "/sys/fs/bpf", "mountPropagation": "Bidirectional"}
            ],
        },
        {
            # State left by an agent before, cleaned when cilium-config asks (clean-cilium-state).
            "name": "clean-cilium-state",
            "image": images.agent,
            "command": ["/init-container.sh"],
            "env": [
                {
                    "name": "CILIUM_ALL_STATE",
                    "valueFrom": {
                        "configMapKeyRef": {"name": CONFIG, "key": "clean-cilium-state", "optional": True}
                    },
                },
                {
                    "name": "CILIUM_BPF_STATE",
                    "valueFrom": {
                        "configMapKeyRef": {
                            "name": CONFIG,
                            "key": "clean-cilium-bpf-state",
                            "optional": True,
                        }
                    },
                },
                *cni.api_server_env(cp),
            ],
            "securityContext": _spc(["NET_ADMIN", "SYS_MODULE", "SYS_ADMIN", "SYS_RESOURCE"]),
            "volumeMounts": [
                {"name": "bpf-maps", "mountPath": "/sys/fs/bpf"},
                {"name": "cilium-run", "mountPath": "/var/run/cilium"},
                {"name": "cgroup", "mountPath": "/sys/fs/cgroup", "mountPropagation": "HostToContainer"},
            ],
            "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
        },
        {
            # The cilium-cni binary, which the runtime calls for each pod, onto the node.
            "name": "install-cni-binaries",
            "image": images.agent,
            "command": ["/install-plugin.sh"],
            "securityContext": {"capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "cni-path", "mountPath": f"/host{CNI_BIN_DIR}"}],
            "resources": {"requests": {"cpu": "100m", "memory": "10Mi"}},
        },
    ]
    agent = {
        "name": AGENT,
        "image": images.agent,
        "command": ["cilium-agent"],
        "args": [f"--config-dir={CONFIG_DIR}"],
        "env": [
            cni.field_env("K8S_NODE_NAME", "spec.nodeName"),
            cni.field_env("CILIUM_K8S_NAMESPACE", "metadata.namespace"),
            *cni.api_server_env(cp),
        ],
        "startupProbe": _health_probe(AGENT_HEALTH_PORT, periodSeconds=2, failureThreshold=105),
        "livenessProbe": _health_probe(AGENT_HEALTH_PORT, failureThreshold=10),
        "readinessProbe": _health_probe(AGENT_HEALTH_PORT, failureThreshold=3),
        "securityContext": _spc(AGENT_CAPABILITIES),
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
            {"name": "bpf-maps", "mountPath": "/sys/fs/bpf", "mountPropagation": "HostToContainer"},
            {"name": "cilium-run", "mountPath": "/var/run/cilium"},
            {"name": "cni-conf", "mountPath": f"/host{CNI_CONF_DIR}"},
            {"name": "cgroup", "mountPath": "/sys/fs/cgroup", "mountPropagation": "HostToContainer"},
            {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
            {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
            {"name": "host-proc-sys-net", "mountPath": "/host/proc/sys/net"},
            {"name": "host-proc-sys-kernel", "mountPath": "/host/proc/sys/kernel"},
            config_mount,
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - the container's own /tmp, an emptyDir
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": cni.meta(AGENT, NAMESPACE, selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
            "template": {
                "metadata": {"labels": {**MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": AGENT,
                    "automountServiceAccountToken": True,
                    "priorityClassName": "system-node-critical",
                    "hostNetwork": True,
                    # Every node, NotReady ones first of all (not-ready, uninitialized, ...).
                    "tolerations": [{"operator": "Exists"}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 1,
                    "initContainers": init_containers,
                    "containers": [agent],
                    "volumes": [
                        cni.host_path("bpf-maps", "/sys/fs/bpf"),
                        cni.host_path("cilium-run", "/var/run/cilium"),
                        cni.host_path("cni-path", CNI_BIN_DIR),
                        cni.host_path("cni-conf", CNI_CONF_DIR),
                        cni.host_path("cgroup", "/sys/fs/cgroup", "Directory"),
                        cni.host_path("lib-modules", "/lib/modules", "Directory"),
                        cni.host_path("xtables-lock", "/run/xtables.lock", "FileOrCreate"),
                        cni.host_path("host-proc-sys-net", "/proc/sys/net", "Directory"),
                        cni.host_path("host-proc-sys-kernel", "/proc/sys/kernel", "Directory"),
                        {"name": CONFIG, "configMap": {"name": CONFIG}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }


def cilium_operator(cp: ControlPlane) -> Manifest:
    """The operator's Deployment: on the host's network (it runs before pods have a network), on a
    NotReady node too. One replica: two on the host's network would need two nodes for their ports, and a
    short gap while it restarts delays only new nodes' pod CIDRs."""
    images = cilium_images(cp)
    selector = {"io.cilium/app": "operator", "name": OPERATOR}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": cni.meta(OPERATOR, NAMESPACE, selector),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            # The new pod takes the old one's host ports: the old goes first.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {**MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": OPERATOR,
                    "automountServiceAccountToken": True,
                    "priorityClassName": "system-cluster-critical",
                    "hostNetwork": True,
                    "tolerations": [{"operator": "Exists"}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [
                        {
                            "name": OPERATOR,
                            "image": images.operator,
                            "command": ["cilium-operator-generic"],
                            "args": [f"--config-dir={CONFIG_DIR}"],
                            "env": [
                                cni.field_env("K8S_NODE_NAME", "spec.nodeName"),
                                cni.field_env("CILIUM_K8S_NAMESPACE", "metadata.namespace"),
                                *cni.api_server_env(cp),
                            ],
                            "livenessProbe": {
                                "httpGet": {
                                    "host": "127.0.0.1",
                                    "path": "/healthz",
                                    "port": OPERATOR_HEALTH_PORT,
                                    "scheme": "HTTP",
                                },
                                "initialDelaySeconds": 60,
                                "periodSeconds": 10,
                                "timeoutSeconds": 3,
                            },
                            "readinessProbe": {
                                "httpGet": {
                                    "host": "127.0.0.1",
                                    "path": "/healthz",
                                    "port": OPERATOR_HEALTH_PORT,
                                    "scheme": "HTTP",
                                },
                                "periodSeconds": 5,
                                "timeoutSeconds": 3,
                                "failureThreshold": 5,
                            },
                            "resources": {
                                "requests": {"cpu": "50m", "memory": "64Mi"},
                                "limits": {"memory": "256Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                            "volumeMounts": [{"name": CONFIG, "mountPath": CONFIG_DIR, "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": CONFIG, "configMap": {"name": CONFIG}}],
                },
            },
        },
    }


def agent_rules() -> list[dict[str, Any]]:
    """What the agent reads (the cluster's pods, Services and policies) and writes (its node's and its
    endpoints' Cilium objects, the identities of the pods' labels)."""
    return [
        cni.rule("networking.k8s.io", ["networkpolicies"], cni.READ),
        cni.rule("discovery.k8s.io", ["endpointslices"], cni.READ),
        cni.rule("", ["namespaces", "services", "pods", "endpoints", "nodes"], cni.READ),
        cni.rule("apiextensions.k8s.io", ["customresourcedefinitions"], cni.READ),
        cni.rule("cilium.io", CILIUM_KINDS, cni.READ),
        cni.rule("cilium.io", ["ciliumidentities"], ["create", "update"]),
        cni.rule("cilium.io", ["ciliumendpoints"], ["create", "update", "patch", "delete"]),
        cni.rule("cilium.io", ["ciliumnodes"], ["create", "update"]),
        cni.rule("cilium.io", ["ciliumnodes/status"], ["get", "update"]),
        cni.rule(
            "cilium.io",
            [
                "ciliumendpoints/status",
                "ciliumnetworkpolicies/status",
                "ciliumclusterwidenetworkpolicies/status",
                "ciliuml2announcementpolicies/status",
            ],
            ["patch", "update"],
        ),
    ]


def operator_rules() -> list[dict[str, Any]]:
    """What the operator needs: Cilium's CRDs registered, nodes' pod CIDRs and taints, identities and
    endpoints of gone pods collected, pods started before the agent restarted, its leader lease."""
    return [
        cni.rule("", ["pods"], [*cni.READ, "delete"]),
        cni.rule("", ["nodes"], cni.READ),
        cni.rule("", ["nodes", "nodes/status"], ["patch"]),
        cni.rule("", ["namespaces", "services", "endpoints"], cni.READ),
        cni.rule("", ["services/status"], ["update", "patch"]),
        cni.rule("discovery.k8s.io", ["endpointslices"], cni.READ),
        cni.rule("apiextensions.k8s.io", ["customresourcedefinitions"], ["create", "update", *cni.READ]),
        cni.rule(
            "cilium.io",
            CILIUM_KINDS,
            ["create", "update", "patch", "delete", "deletecollection", *cni.READ],
        ),
        cni.rule(
            "cilium.io",
            [f"{kind}/status" for kind in CILIUM_KINDS],
            ["update", "patch"],
        ),
        cni.rule("coordination.k8s.io", ["leases"], ["create", "get", "update"]),
    ]


def cilium(cp: ControlPlane) -> list[Manifest]:
    """Cilium in the tenant cluster: accounts and RBAC, its configuration, the operator, the agents."""
    config = cilium_config(cp)
    return [
        cni.service_account(AGENT),
        cni.service_account(OPERATOR),
        *cni.cluster_role(AGENT, agent_rules(), AGENT),
        *cni.cluster_role(OPERATOR, operator_rules(), OPERATOR),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": cni.meta(CONFIG, NAMESPACE),
            "data": config,
        },
        cilium_operator(cp),
        cilium_agent(cp),
    ]
