"""Calico as the tenant cluster's network plugin (``spec.networkPlugin: calico``): pure manifests.

Calico's manifest install (not its operator's) with the Kubernetes API as its datastore, written here
from Calico's documented requirements, not taken from its ``calico.yaml``:

- its CRDs (:data:`CALICO_KINDS`, group ``crd.projectcalico.org``, and the AdminNetworkPolicy API's two,
  group ``policy.networking.k8s.io``, whose objects Calico 3.31 watches and enforces, so they must be
  served). Their schemas are open at ``spec`` and ``status`` (``x-kubernetes-preserve-unknown-fields``):
  Calico's own clients validate and default what they write, and a tenant writes Calico's objects with
  ``calicoctl``, which does the same (Calico documents these CRDs as its storage, not as an API to
  ``kubectl apply``);
- ``calico-node``: a DaemonSet on every node, on the host's network, tolerating every taint (it runs on the
  NotReady nodes it makes Ready). Its init containers move a node from host-local IPAM if it ever had it
  (``upgrade-ipam``, a no-op on a new node) and write the CNI configuration into ``/etc/cni/net.d`` and
  Calico's CNI binaries (``calico``, ``calico-ipam``, ``portmap``, ...) into ``/opt/cni/bin``
  (``install-cni``, with a kubeconfig for the CNI plugin whose token, of the ``calico-cni-plugin``
  ServiceAccount, ``calico-node`` then keeps fresh); its container runs Felix, which programs routes and
  policy;
- ``calico-kube-controllers``: a Deployment of one replica on the pod network, with only its ``node``
  controller (it releases the addresses of gone nodes and pods); Calico's LoadBalancer controller is off,
  as the cluster's LoadBalancer Services are flex.plane's cloud controller's;
- their ServiceAccounts, ClusterRoles and bindings, and the ``calico-config`` ConfigMap (the CNI
  configuration's template, the backend, the MTU).

Set up for where tenant clusters run:

- VXLAN between the nodes, always (``CALICO_NETWORKING_BACKEND=vxlan``, the default IP pool's
  ``CALICO_IPV4POOL_VXLAN=Always``, IP-in-IP off): the VDC network carries only the nodes' own addresses
  (and UDP 4789 between them). No BGP: nothing on a VDC network peers with the nodes, so no BIRD runs;
- the default IP pool is the cluster's pod CIDR (``spec.clusterNetwork.pods``, ``CALICO_IPV4POOL_CIDR``),
  which calico-node creates at its first start, in Calico's blocks of 64 addresses, NAT for traffic
  leaving it;
- the pods' MTU leaves room for VXLAN's 50 bytes on a VDC network (:data:`VETH_MTU`, 1400 on the VDC
  networks' 1450), set rather than detected from the node's NIC, whose MTU need not be its VNet's;
- pods may reach their own node (``FELIX_DEFAULTENDPOINTTOHOSTACTION=ACCEPT``, Calico's default for
  Kubernetes): the kubelet's probes, node-local services such as the SNI mode's path to the API server;
- the API server at the cluster's endpoint (``KUBERNETES_SERVICE_HOST``/``_PORT`` of every container,
  which ``install-cni`` also writes into the CNI plugin's kubeconfig): the ``kubernetes`` Service needs
  kube-proxy and a working CNI, and behind the SNI router the endpoint is the cluster's host name. Each
  node's own address is the one it reaches that endpoint from (``can-reach``);
- kube-proxy stays (kubeadm's) and Felix uses iptables, not eBPF, so no BPF filesystem is mounted;
- no Typha: it fans the datastore out to hundreds of nodes, and a tenant cluster's Felixes watch the API
  server themselves; no Calico API server, Whisker or Goldmane; Felix's usage reports to
  projectcalico.org are off.

The Calico release is pinned per Kubernetes minor version (:data:`CALICO_RELEASES`); its images
(``calico/node``, ``calico/cni``, ``calico/kube-controllers``) come from quay.io, or from the moved
registry under the same paths.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from providers.controlplane import cni
from providers.controlplane.cni import CNI_BIN_DIR, CNI_CONF_DIR, NAMESPACE
from providers.controlplane.model import ControlPlane, Manifest

# The Calico release of each Kubernetes minor: a release whose requirements list that minor (Calico's
# "System requirements": 3.31 runs on Kubernetes 1.33 and 1.34). A version the catalog offers must have
# its minor here (tests/providers/controlplane/test_network.py fails otherwise); one that has not gets the
# nearest release pinned below it, or else the oldest.
CALICO_RELEASES: dict[tuple[int, int], str] = {
    (1, 33): "v3.31.3",
    (1, 34): "v3.31.3",
}
# Where Calico publishes its images (also docker.io/calico): <registry>/calico/node:<release>, at the digest
# the image lock holds for quay.io/<path> (providers/images.py), from a moved registry too.
CALICO_REGISTRY = "quay.io"

NODE, KUBE_CONTROLLERS, CNI_PLUGIN, CONFIG = (
    "calico-node",
    "calico-kube-controllers",
    "calico-cni-plugin",
    "calico-config",
)
GROUP = "crd.projectcalico.org"
POLICY_GROUP = "policy.networking.k8s.io"  # the AdminNetworkPolicy API's (kubernetes-sigs/network-policy-api)
CNI_CONF_NAME = "10-calico.conflist"

# The MTU of a VDC network unless its zone declares another (orchestrator.models.zones'
# DEFAULT_NETWORK_MTU), less VXLAN's headers: the pods' interfaces' and Calico's VXLAN device's MTU.
VDC_NETWORK_MTU = 1450
VXLAN_OVERHEAD = 50
VETH_MTU = VDC_NETWORK_MTU - VXLAN_OVERHEAD

# Calico's own kinds (crd.projectcalico.org/v1): kind, plural, whether namespaced.
CALICO_KINDS: list[tuple[str, str, bool]] = [
    ("BGPConfiguration", "bgpconfigurations", False),
    ("BGPFilter", "bgpfilters", False),
    ("BGPPeer", "bgppeers", False),
    ("BlockAffinity", "blockaffinities", False),
    ("CalicoNodeStatus", "caliconodestatuses", False),
    ("ClusterInformation", "clusterinformations", False),
    ("FelixConfiguration", "felixconfigurations", False),
    ("GlobalNetworkPolicy", "globalnetworkpolicies", False),
    ("GlobalNetworkSet", "globalnetworksets", False),
    ("HostEndpoint", "hostendpoints", False),
    ("IPAMBlock", "ipamblocks", False),
    ("IPAMConfig", "ipamconfigs", False),
    ("IPAMHandle", "ipamhandles", False),
    ("IPPool", "ippools", False),
    ("IPReservation", "ipreservations", False),
    ("KubeControllersConfiguration", "kubecontrollersconfigurations", False),
    ("NetworkPolicy", "networkpolicies", True),
    ("NetworkSet", "networksets", True),
    ("StagedGlobalNetworkPolicy", "stagedglobalnetworkpolicies", False),
    ("StagedKubernetesNetworkPolicy", "stagedkubernetesnetworkpolicies", True),
    ("StagedNetworkPolicy", "stagednetworkpolicies", True),
    ("Tier", "tiers", False),
]
# The AdminNetworkPolicy API's kinds (policy.networking.k8s.io/v1alpha1, cluster-wide): kind, plural, short.
ADMIN_POLICY_KINDS: list[tuple[str, str, str]] = [
    ("AdminNetworkPolicy", "adminnetworkpolicies", "anp"),
    ("BaselineAdminNetworkPolicy", "baselineadminnetworkpolicies", "banp"),
]
# A group under k8s.io holds only APIs Kubernetes approved, and its CRDs say where (the API server
# refuses them otherwise): the AdminNetworkPolicy API's approval.
ADMIN_POLICY_APPROVAL = "https://github.com/kubernetes-sigs/network-policy-api/pull/30"

CALICO_PLURALS = [plural for _, plural, _ in CALICO_KINDS]
IPAM_KINDS = ["blockaffinities", "ipamblocks", "ipamhandles"]
POLICY_KINDS = [
    "networkpolicies",
    "globalnetworkpolicies",
    "stagednetworkpolicies",
    "stagedglobalnetworkpolicies",
]
WRITE = ["create", "update", "delete"]


def calico_release(version: str) -> str:
    """The Calico release pinned for a Kubernetes version (see :data:`CALICO_RELEASES`)."""
    return cni.pinned(CALICO_RELEASES, version)


@dataclass(frozen=True)
class CalicoImages:
    node: str
    cni: str
    kube_controllers: str


def calico_images(cp: ControlPlane) -> CalicoImages:
    """calico-node's, the CNI installer's and kube-controllers' images for the cluster's version, from its
    registry."""
    release = calico_release(cp.version)
    return CalicoImages(
        node=cp.foreign_image(CALICO_REGISTRY, f"calico/node:{release}"),
        cni=cp.foreign_image(CALICO_REGISTRY, f"calico/cni:{release}"),
        kube_controllers=cp.foreign_image(CALICO_REGISTRY, f"calico/kube-controllers:{release}"),
    )


# ------------------------------------------------------------------------------------ CRDs


def _open_schema() -> dict[str, Any]:
    """An object's schema that leaves ``spec`` and ``status`` to whoever validates them."""
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": open_object,
                "status": dict(open_object),
            },
        }
    }


def _crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool,
    short: str = "",
    status: bool = False,
) -> Manifest:
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short:
        names["shortNames"] = [short]
    served: dict[str, Any] = {"name": version, "served": True, "storage": True, "schema": _open_schema()}
    if status:
        served["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": cni.meta(f"{plural}.{group}"),
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [served],
        },
    }


def crds() -> list[Manifest]:
    """Calico's CRDs, then the AdminNetworkPolicy API's (with its status, as that API defines it)."""
    calico = [_crd(GROUP, "v1", kind, plural, namespaced=scoped) for kind, plural, scoped in CALICO_KINDS]
    admin = []
    for kind, plural, short in ADMIN_POLICY_KINDS:
        crd = _crd(POLICY_GROUP, "v1alpha1", kind, plural, namespaced=False, short=short, status=True)
        crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": ADMIN_POLICY_APPROVAL}
        admin.append(crd)
    return [*calico, *admin]


# ------------------------------------------------------------------------------------ RBAC


def node_rules() -> list[dict[str, Any]]:
    """What calico-node reads (pods, namespaces, Services, every policy, Calico's configuration) and writes
    (its node's status and tunnel address, the default IP pool and Felix's configuration at the first start,
    IPAM blocks, its status, the CNI plugin's tokens)."""
    return [
        cni.rule("", ["serviceaccounts/token"], ["create"], names=[CNI_PLUGIN]),
        cni.rule("", ["pods", "nodes", "namespaces"], ["get"]),
        cni.rule("", ["pods", "namespaces", "serviceaccounts", "nodes"], ["list", "watch"]),
        cni.rule("", ["pods/status"], ["patch"]),
        # Its tunnel address and other state are in the Node's annotations; NetworkUnavailable cleared.
        cni.rule("", ["nodes/status"], ["patch", "update"]),
        cni.rule("", ["endpoints", "services"], cni.READ),
        cni.rule("", ["configmaps"], ["get"]),
        cni.rule("discovery.k8s.io", ["endpointslices"], ["list", "watch"]),
        cni.rule("networking.k8s.io", ["networkpolicies"], ["list", "watch"]),
        cni.rule(POLICY_GROUP, [plural for _, plural, _ in ADMIN_POLICY_KINDS], ["list", "watch"]),
        cni.rule(GROUP, CALICO_PLURALS, cni.READ),
        cni.rule(GROUP, ["ippools", "felixconfigurations", "clusterinformations"], ["create", "update"]),
        cni.rule(GROUP, ["caliconodestatuses"], ["update"]),
        cni.rule(GROUP, IPAM_KINDS, ["get", "list", *WRITE]),
        cni.rule(GROUP, ["ipamconfigs"], ["get", "create"]),
        # upgrade-ipam reads calico-node's DaemonSet (a node that ran host-local IPAM moves to Calico's).
        cni.rule("apps", ["daemonsets"], ["get"]),
    ]


def cni_plugin_rules() -> list[dict[str, Any]]:
    """What Calico's CNI plugin does for the runtime on each pod: reads the pod, its namespace and node,
    assigns and releases its addresses, writes its addresses into its status."""
    return [
        cni.rule("", ["pods", "nodes", "namespaces"], ["get"]),
        cni.rule("", ["pods/status"], ["patch"]),
        cni.rule(
            GROUP,
            [*IPAM_KINDS, "clusterinformations", "ippools", "ipreservations", "ipamconfigs"],
            [
                "get",
                "list",
                *WRITE,
            ],
        ),
    ]


def kube_controllers_rules() -> list[dict[str, Any]]:
    """What kube-controllers needs: for its node controller, nodes and pods read, the IPAM state of gone
    ones released, the host endpoints it keeps when asked to, its configuration and status; and, whatever
    its controllers, Calico's policy tiers (it makes the ``default`` one) and Calico's policies (it moves
    those named with their tier's prefix to plain names, once calico-node's rollout is done)."""
    return [
        cni.rule("", ["nodes", "pods", "namespaces"], cni.READ),
        cni.rule(GROUP, ["ipreservations"], ["list", "watch"]),
        cni.rule(GROUP, [*IPAM_KINDS, "ipamconfigs"], [*cni.READ, *WRITE]),
        cni.rule(GROUP, ["ippools"], ["list", "watch", "update"]),
        cni.rule(GROUP, ["hostendpoints"], [*cni.READ, *WRITE]),
        cni.rule(GROUP, ["clusterinformations"], [*cni.READ, "create", "update"]),
        cni.rule(GROUP, ["kubecontrollersconfigurations"], [*cni.READ, "create", "update"]),
        cni.rule(GROUP, ["tiers"], [*cni.READ, "create", "update", "patch"]),
        cni.rule(GROUP, POLICY_KINDS, [*cni.READ, *WRITE]),
        cni.rule("apps", ["daemonsets"], ["get"], names=[NODE]),
    ]


# ------------------------------------------------------------------------------------ configuration


def cni_network_config() -> str:
    """The CNI configuration's template, which install-cni completes on each node (its name, the MTU, the
    plugin's kubeconfig) and writes as ``/etc/cni/net.d/10-calico.conflist``: Calico's plugin with Calico's
    IPAM and Kubernetes' policy, then ``portmap`` for pods' host ports."""
    template = {
        "name": "k8s-pod-network",
        "cniVersion": "0.3.1",
        "plugins": [
            {
                "type": "calico",
                "log_level": "info",
                "log_file_path": "/var/log/calico/cni/cni.log",
                "datastore_type": "kubernetes",
                "nodename": "__KUBERNETES_NODE_NAME__",
                "mtu": "__CNI_MTU__",
                "ipam": {"type": "calico-ipam"},
                "policy": {"type": "k8s"},
                "kubernetes": {"kubeconfig": "__KUBECONFIG_FILEPATH__"},
            },
            {"type": "portmap", "snat": True, "capabilities": {"portMappings": True}},
        ],
    }
    # The MTU is a number in the file: its placeholder stands bare, as install-cni replaces it.
    return json.dumps(template, indent=2).replace('"__CNI_MTU__"', "__CNI_MTU__")


def calico_config() -> dict[str, str]:
    """The ``calico-config`` ConfigMap's keys."""
    return {
        "calico_backend": "vxlan",
        "veth_mtu": str(VETH_MTU),
        "cni_network_config": cni_network_config(),
    }


# ------------------------------------------------------------------------------------ workloads


def _privileged(container: dict[str, Any]) -> dict[str, Any]:
    """Calico's node containers run privileged, as Calico documents them (they write the node's network
    configuration, routes, iptables rules and files)."""
    return {**container, "securityContext": {"privileged": True}}


def node_env(cp: ControlPlane) -> list[dict[str, Any]]:
    """calico-node's environment: the datastore, the backend, the default IP pool, Felix's settings."""
    return [
        {"name": "DATASTORE_TYPE", "value": "kubernetes"},
        {"name": "WAIT_FOR_DATASTORE", "value": "true"},
        cni.field_env("NODENAME", "spec.nodeName"),
        cni.config_env("CALICO_NETWORKING_BACKEND", CONFIG, "calico_backend"),
        {"name": "CLUSTER_TYPE", "value": "k8s"},
        {"name": "IP", "value": "autodetect"},
        # The node's address: the one it reaches the cluster's API server from.
        {"name": "IP_AUTODETECTION_METHOD", "value": f"can-reach={cp.endpoint_host}"},
        {"name": "CALICO_IPV4POOL_CIDR", "value": cp.pod_cidr},
        {"name": "CALICO_IPV4POOL_VXLAN", "value": "Always"},
        {"name": "CALICO_IPV4POOL_IPIP", "value": "Never"},
        {"name": "CALICO_IPV4POOL_NAT_OUTGOING", "value": "true"},
        {"name": "CALICO_CNI_SERVICE_ACCOUNT", "value": CNI_PLUGIN},
        cni.config_env("FELIX_VXLANMTU", CONFIG, "veth_mtu"),
        {"name": "FELIX_DEFAULTENDPOINTTOHOSTACTION", "value": "ACCEPT"},
        {"name": "FELIX_IPV6SUPPORT", "value": "false"},
        {"name": "FELIX_HEALTHENABLED", "value": "true"},
        {"name": "FELIX_USAGEREPORTINGENABLED", "value": "false"},
        {"name": "CALICO_DISABLE_FILE_LOGGING", "value": "true"},
        *cni.api_server_env(cp),
    ]


def _exec(*command: str, **extra: Any) -> dict[str, Any]:
    return {"exec": {"command": list(command)}, "periodSeconds": 10, "timeoutSeconds": 10, **extra}


def calico_node(cp: ControlPlane) -> Manifest:
    """calico-node's DaemonSet: one per node, on the host's network, before the node is Ready (it is what
    makes it Ready), whatever its taints."""
    images = calico_images(cp)
    selector = {"k8s-app": NODE}
    node_name = cni.field_env("KUBERNETES_NODE_NAME", "spec.nodeName")
    init_containers = [
        _privileged(
            {
                # A node's host-local IPAM state moved to Calico's; nothing to do on a new node.
                "name": "upgrade-ipam",
                "image": images.cni,
                "command": ["/opt/cni/bin/calico-ipam", "-upgrade"],
                "env": [
                    node_name,
                    cni.config_env("CALICO_NETWORKING_BACKEND", CONFIG, "calico_backend"),
                    *cni.api_server_env(cp),
                ],
                "volumeMounts": [
                    {"name": "host-local-net-dir", "mountPath": "/var/lib/cni/networks"},
                    {"name": "cni-bin-dir", "mountPath": f"/host{CNI_BIN_DIR}"},
                ],
            }
        ),
        _privileged(
            {
                # The CNI binaries, the configuration and the plugin's kubeconfig, onto the node.
                "name": "install-cni",
                "image": images.cni,
                "command": ["/opt/cni/bin/install"],
                "env": [
                    {"name": "CNI_CONF_NAME", "value": CNI_CONF_NAME},
                    cni.config_env("CNI_NETWORK_CONFIG", CONFIG, "cni_network_config"),
                    cni.config_env("CNI_MTU", CONFIG, "veth_mtu"),
                    node_name,
                    {"name": "CALICO_CNI_SERVICE_ACCOUNT", "value": CNI_PLUGIN},
                    {"name": "SLEEP", "value": "false"},  # install, then exit
                    *cni.api_server_env(cp),
                ],
                "volumeMounts": [
                    {"name": "cni-bin-dir", "mountPath": f"/host{CNI_BIN_DIR}"},
                    {"name": "cni-net-dir", "mountPath": f"/host{CNI_CONF_DIR}"},
                ],
            }
        ),
    ]
    node = _privileged(
        {
            "name": NODE,
            "image": images.node,
            "env": node_env(cp),
            "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}},
            "lifecycle": {"preStop": {"exec": {"command": ["/bin/calico-node", "-shutdown"]}}},
            "livenessProbe": _exec(
                "/bin/calico-node", "-felix-live", initialDelaySeconds=10, failureThreshold=6
            ),
            "readinessProbe": _exec("/bin/calico-node", "-felix-ready"),
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "volumeMounts": [
                # The CNI plugin's kubeconfig, whose token it renews.
                {"name": "cni-net-dir", "mountPath": f"/host{CNI_CONF_DIR}"},
                {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
                {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                {"name": "var-run-calico", "mountPath": "/var/run/calico"},
                {"name": "var-lib-calico", "mountPath": "/var/lib/calico"},
                {"name": "cni-log-dir", "mountPath": "/var/log/calico/cni", "readOnly": True},
            ],
        }
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": cni.meta(NODE, NAMESPACE, selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {**cni.MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": NODE,
                    "automountServiceAccountToken": True,
                    "priorityClassName": "system-node-critical",
                    "hostNetwork": True,
                    # Every node, NotReady ones first of all (not-ready, uninitialized, ...).
                    "tolerations": [{"operator": "Exists"}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    # A rolling update or a drain replaces it at once (Calico's own advice).
                    "terminationGracePeriodSeconds": 0,
                    "initContainers": init_containers,
                    "containers": [node],
                    "volumes": [
                        cni.host_path("lib-modules", "/lib/modules", "Directory"),
                        cni.host_path("var-run-calico", "/var/run/calico"),
                        cni.host_path("var-lib-calico", "/var/lib/calico"),
                        cni.host_path("xtables-lock", "/run/xtables.lock", "FileOrCreate"),
                        cni.host_path("cni-bin-dir", CNI_BIN_DIR),
                        cni.host_path("cni-net-dir", CNI_CONF_DIR),
                        cni.host_path("cni-log-dir", "/var/log/calico/cni"),
                        cni.host_path("host-local-net-dir", "/var/lib/cni/networks"),
                    ],
                },
            },
        },
    }


def kube_controllers(cp: ControlPlane) -> Manifest:
    """kube-controllers' Deployment: one replica on the pod network (it waits for a Ready node, which
    calico-node makes), replaced rather than rolled (two would race over the IPAM state)."""
    images = calico_images(cp)
    selector = {"k8s-app": KUBE_CONTROLLERS}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": cni.meta(KUBE_CONTROLLERS, NAMESPACE, selector),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": {**cni.MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": KUBE_CONTROLLERS,
                    "automountServiceAccountToken": True,
                    "priorityClassName": "system-cluster-critical",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [
                        {
                            "name": KUBE_CONTROLLERS,
                            "image": images.kube_controllers,
                            "env": [
                                {"name": "ENABLED_CONTROLLERS", "value": "node"},
                                {"name": "DATASTORE_TYPE", "value": "kubernetes"},
                                *cni.api_server_env(cp),
                            ],
                            "livenessProbe": _exec(
                                "/usr/bin/check-status", "-l", initialDelaySeconds=10, failureThreshold=6
                            ),
                            "readinessProbe": _exec("/usr/bin/check-status", "-r"),
                            "resources": {
                                "requests": {"cpu": "50m", "memory": "64Mi"},
                                "limits": {"memory": "256Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                        }
                    ],
                },
            },
        },
    }


def calico(cp: ControlPlane) -> list[Manifest]:
    """Calico in the tenant cluster: its CRDs, accounts and RBAC, its configuration, calico-node,
    kube-controllers."""
    return [
        *crds(),
        cni.service_account(NODE),
        cni.service_account(CNI_PLUGIN),
        cni.service_account(KUBE_CONTROLLERS),
        *cni.cluster_role(NODE, node_rules(), NODE),
        *cni.cluster_role(CNI_PLUGIN, cni_plugin_rules(), CNI_PLUGIN),
        *cni.cluster_role(KUBE_CONTROLLERS, kube_controllers_rules(), KUBE_CONTROLLERS),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": cni.meta(CONFIG, NAMESPACE),
            "data": calico_config(),
        },
        calico_node(cp),
        kube_controllers(cp),
    ]
