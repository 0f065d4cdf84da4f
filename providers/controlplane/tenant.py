"""What the provider installs INTO a tenant cluster once its API server answers: pure manifests.

With no control-plane nodes, nothing runs ``kubeadm init`` in a tenant cluster, so what its upload
phases would leave for ``kubeadm join`` is put there here (kubeadm's names, so a join finds them):

- ``kube-public/cluster-info``: a kubeconfig with the CA and the endpoint and no credentials, readable
  by anyone (token discovery; the controller-manager's bootstrapsigner adds the tokens' JWS
  signatures to it);
- the bootstrap tokens' RBAC: ``system:bootstrappers:kubeadm:default-node-token`` may create and
  have approved node client CSRs, nodes may renew theirs, and a joining node may read
  ``kube-system/kubeadm-config``, ``kube-system/kubelet-config`` and get nodes (kubeadm join checks
  its name is free);
- Konnectivity's agents (apiserver-network-proxy's setup): the ``konnectivity-agent`` ServiceAccount
  and DaemonSet (a projected token for the audience ``system:konnectivity-server``) and the server's
  ``system:konnectivity-server`` user bound to ``system:auth-delegator`` so it can review their tokens;
- ``kube-apiserver-kubelet-client`` bound to ``system:kubelet-api-admin`` (logs, exec, metrics);
- ``flexplane:vdc-admins``: the VDC's group as cluster-admin (the kubeconfigs the portal hands out
  carry that group);
- ``flexplane:cloud-controller``: the cloud controller's user (its own certificate) may initialize and
  delete Nodes, read Services and write their LoadBalancer status, and record Events
  (:func:`cloud_controller_rbac`);
- ``flexplane:metrics``: the Prometheus Operator's scrapes of the API server (their own certificate,
  :mod:`.monitoring`) may get /metrics, and nothing else (:func:`metrics_rbac`).

- kubeadm's two addons, as ``kubeadm init`` would install them (its names, so a tenant who knows
  kubeadm finds them): CoreDNS (Deployment ``coredns`` and Service ``kube-dns`` at the address every
  kubelet is told, the tenth of the service CIDR) and kube-proxy (a DaemonSet reaching the API server
  at the cluster's endpoint, as there is no Service for it before kube-proxy runs; its image follows
  the cluster's version, so an upgrade rolls it).

- in the SNI mode, ``kube-apiserver-proxy`` (:func:`node_local_proxy`): on every node, the way pods reach
  the API server through the ``kubernetes`` Service (:mod:`providers.sni.nodelocal`).

- the network plugin the FlexControlPlane names (``spec.networkPlugin``, :mod:`.network`): Cilium by
  default, or Calico, whose agents make the nodes Ready; with ``none``, nothing, as kubeadm installs no
  CNI: the nodes stay NotReady, and CoreDNS waits, until the tenant applies a plugin of their own.

- the CSI driver's tenant half (:mod:`.storage`): its CSIDriver, a StorageClass per storage profile of
  ``spec.storage``, the node plugin's DaemonSet and what the controller's sidecars may do.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import yaml

from providers.controlplane import network, pki, storage
from providers.controlplane.model import (
    KONNECTIVITY_ADMIN_PORT,
    KONNECTIVITY_AGENT,
    KONNECTIVITY_AGENT_IMAGE,
    KONNECTIVITY_AUDIENCE,
    KONNECTIVITY_HEALTH_PORT,
    NODE_LOCAL_INTERFACE,
    NODE_LOCAL_PROXY,
    ControlPlane,
    Manifest,
)

BOOTSTRAPPERS = "system:bootstrappers:kubeadm:default-node-token"
NODES = "system:nodes"
RBAC = "rbac.authorization.k8s.io"
MANAGED_BY = {"app.kubernetes.io/managed-by": "flexplane-control-plane"}
TOKEN_DIR = "/var/run/secrets/tokens"  # noqa: S105 - a path
TOKEN_FILE = "konnectivity-agent-token"  # noqa: S105 - a file name
CLUSTER_DOMAIN = "cluster.local"
# CoreDNS as kubeadm 1.34 installs it (1.33's is v1.12.0).
COREDNS_IMAGE = "coredns/coredns:v1.12.1"
COREDNS, KUBE_DNS, KUBE_PROXY = "coredns", "kube-dns", "kube-proxy"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _meta(name: str, namespace: str | None = None, **extra: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, **extra}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _group(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "Group", "name": name}


def _user(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "User", "name": name}


def cluster_role_binding(name: str, role: str, subjects: list[dict[str, str]]) -> Manifest:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }


def _read_configmap(
    namespace: str, role: str, configmap: str, subjects: list[dict[str, str]]
) -> list[Manifest]:
    """A Role to get one ConfigMap and its RoleBinding to ``subjects``."""
    return [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": _meta(role, namespace),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": [configmap],
                    "verbs": ["get"],
                }
            ],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": _meta(role, namespace),
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": role},
            "subjects": subjects,
        },
    ]


# ------------------------------------------------------------------------------------ kubeadm join


def cluster_info(cp: ControlPlane, ca_pem: bytes) -> list[Manifest]:
    """``kube-public/cluster-info`` and its anonymous read."""
    config = pki.kubeconfig(
        cluster="", server=pki.server_url(cp.endpoint_host, cp.endpoint_port), ca_pem=ca_pem, user=""
    )
    config["users"], config["contexts"], config["current-context"] = [], [], ""
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta("cluster-info", "kube-public"),
        "data": {"kubeconfig": pki.dump(config).decode()},
    }
    return [
        configmap,
        *_read_configmap(
            "kube-public", "kubeadm:bootstrap-signer-clusterinfo", "cluster-info", [_user("system:anonymous")]
        ),
    ]


def kubeadm_config(cp: ControlPlane) -> dict[str, Any]:
    return {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "ClusterConfiguration",
        "clusterName": cp.cluster,
        "kubernetesVersion": cp.version,
        "controlPlaneEndpoint": f"{cp.endpoint_host}:{cp.endpoint_port}",
        "certificatesDir": "/etc/kubernetes/pki",
        "imageRepository": cp.registry,
        "networking": {
            "dnsDomain": CLUSTER_DOMAIN,
            "serviceSubnet": cp.service_cidr,
            "podSubnet": cp.pod_cidr,
        },
    }


def cluster_dns_ip(service_cidr: str) -> str:
    """kubeadm's cluster DNS address: the tenth address of the service CIDR."""
    return str(ipaddress.ip_network(service_cidr, strict=False).network_address + 10)


def kubelet_config(cp: ControlPlane) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "systemd",
        "clusterDNS": [cluster_dns_ip(cp.service_cidr)],
        "clusterDomain": CLUSTER_DOMAIN,
        "rotateCertificates": True,
        "staticPodPath": "/etc/kubernetes/manifests",
    }


def join_support(cp: ControlPlane) -> list[Manifest]:
    """What kubeadm join reads (kubeadm-config, kubelet-config) and the bootstrap tokens' RBAC."""
    joiners = [_group(BOOTSTRAPPERS), _group(NODES)]
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("kubeadm-config", "kube-system"),
            "data": {"ClusterConfiguration": yaml.safe_dump(kubeadm_config(cp), sort_keys=False)},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("kubelet-config", "kube-system"),
            "data": {"kubelet": yaml.safe_dump(kubelet_config(cp), sort_keys=False)},
        },
        *_read_configmap("kube-system", "kubeadm:nodes-kubeadm-config", "kubeadm-config", joiners),
        *_read_configmap("kube-system", "kubeadm:kubelet-config", "kubelet-config", joiners),
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": _meta("kubeadm:get-nodes"),
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        },
        cluster_role_binding("kubeadm:get-nodes", "kubeadm:get-nodes", [_group(BOOTSTRAPPERS)]),
        cluster_role_binding(
            "kubeadm:kubelet-bootstrap", "system:node-bootstrapper", [_group(BOOTSTRAPPERS)]
        ),
        cluster_role_binding(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            [_group(BOOTSTRAPPERS)],
        ),
        cluster_role_binding(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            [_group(NODES)],
        ),
    ]


# ------------------------------------------------------------------------------------ Konnectivity


def konnectivity_agent_args(cp: ControlPlane) -> list[str]:
    """apiserver-network-proxy's agent: dials the server through the endpoint (behind the SNI router, by
    the Konnectivity server's own name, which its TLS sends as the server name), trusts the cluster CA."""
    return [
        "--ca-cert=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        f"--proxy-server-host={cp.agents_host}",
        f"--proxy-server-port={cp.konnectivity_port}",
        f"--admin-server-port={KONNECTIVITY_ADMIN_PORT}",
        f"--health-server-port={KONNECTIVITY_HEALTH_PORT}",
        f"--service-account-token-path={TOKEN_DIR}/{TOKEN_FILE}",
    ]


def _node_daemonset(name: str, pod: dict[str, Any]) -> Manifest:
    """A kube-system DaemonSet ``name`` (its ServiceAccount's name too), as kubeadm runs its addons: on
    every Linux node, on the host's network (it runs before the CNI does), whatever the node's taints;
    ``pod`` adds its containers, volumes and the rest of its pods' spec."""
    selector = {"k8s-app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(name, "kube-system", **selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {**MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": name,
                    "priorityClassName": "system-node-critical",
                    "hostNetwork": True,
                    "tolerations": [{"operator": "Exists"}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    **pod,
                },
            },
        },
    }


def konnectivity(cp: ControlPlane) -> list[Manifest]:
    daemonset = _node_daemonset(
        KONNECTIVITY_AGENT,
        {
            # On the host's network, it reaches kubelets and pods; cluster DNS once there is one.
            "dnsPolicy": "ClusterFirstWithHostNet",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": KONNECTIVITY_AGENT,
                    "image": cp.image(KONNECTIVITY_AGENT_IMAGE),
                    "command": ["/proxy-agent"],
                    "args": konnectivity_agent_args(cp),
                    "livenessProbe": {
                        "httpGet": {
                            "path": "/healthz",
                            "port": KONNECTIVITY_HEALTH_PORT,
                            "host": "127.0.0.1",
                        },
                        "initialDelaySeconds": 15,
                        "timeoutSeconds": 15,
                    },
                    # Ready while it holds a connection to a Konnectivity server (the agent's /readyz):
                    # the DaemonSet's numberReady is the agents connected, which the provider reports
                    # (providers.controlplane.health). Nothing routes to the agents; a rollout of the
                    # DaemonSet waits for each new agent to connect before it replaces the next.
                    "readinessProbe": {
                        "httpGet": {
                            "path": "/readyz",
                            "port": KONNECTIVITY_HEALTH_PORT,
                            "host": "127.0.0.1",
                        },
                        "periodSeconds": 10,
                        "timeoutSeconds": 5,
                    },
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "32Mi"},
                        "limits": {"memory": "128Mi"},
                    },
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "volumeMounts": [{"name": TOKEN_FILE, "mountPath": TOKEN_DIR, "readOnly": True}],
                }
            ],
            "volumes": [
                {
                    "name": TOKEN_FILE,
                    "projected": {
                        "sources": [
                            {
                                "serviceAccountToken": {
                                    "path": TOKEN_FILE,
                                    "audience": KONNECTIVITY_AUDIENCE,
                                    "expirationSeconds": 3600,
                                }
                            }
                        ]
                    },
                }
            ],
        },
    )
    return [
        cluster_role_binding(
            "system:konnectivity-server", "system:auth-delegator", [_user(KONNECTIVITY_AUDIENCE)]
        ),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(KONNECTIVITY_AGENT, "kube-system")},
        daemonset,
    ]


def flexplane_image(cp: ControlPlane) -> str:
    """flex.plane's own image at this release, from the cluster's registry as every other image is."""
    return cp.flexplane_image()


def node_local_proxy(cp: ControlPlane) -> list[Manifest]:
    """The SNI mode's in-cluster path to the API server: ``python -m providers.sni.nodelocal`` on every
    node, on the host's network, holding the address the API server advertises (``cp.node_local_address``)
    and carrying each connection to it through the SNI router to the cluster's API server.

    An init container, the only one with ``NET_ADMIN``, puts the address on the dummy interface
    ``flexplane-api``; the proxy itself runs unprivileged, with no capability and no service account
    token (it holds no credential: the pods' TLS passes through it). It reaches the router at the
    cluster's endpoint, by the node's own DNS (it runs before CoreDNS can).
    """
    listen = f"{cp.node_local_address}:{cp.secure_port}"
    env = [
        {"name": "FLEXPLANE_NODE_LOCAL_LISTEN", "value": listen},
        {"name": "FLEXPLANE_NODE_LOCAL_UPSTREAM", "value": f"{cp.endpoint_host}:{cp.endpoint_port}"},
        {"name": "FLEXPLANE_NODE_LOCAL_INTERFACE", "value": NODE_LOCAL_INTERFACE},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    command = ["python", "-m", "providers.sni.nodelocal"]
    probe = {"tcpSocket": {"host": cp.node_local_address, "port": cp.secure_port}, "periodSeconds": 10}
    unprivileged = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "capabilities": {"drop": ["ALL"]},
    }
    daemonset = _node_daemonset(
        NODE_LOCAL_PROXY,
        {
            "dnsPolicy": "Default",
            "automountServiceAccountToken": False,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "initContainers": [
                {
                    "name": "hold-address",
                    "image": flexplane_image(cp),
                    "command": [*command, "hold"],
                    "env": env,
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                    "securityContext": {
                        **unprivileged,
                        "runAsNonRoot": False,
                        "runAsUser": 0,
                        "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]},
                    },
                }
            ],
            "containers": [
                {
                    "name": NODE_LOCAL_PROXY,
                    "image": flexplane_image(cp),
                    "command": command,
                    "env": env,
                    "livenessProbe": {**probe, "initialDelaySeconds": 10},
                    "readinessProbe": probe,
                    # About 25 MiB resident: one asyncio loop copying bytes.
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "48Mi"},
                        "limits": {"memory": "128Mi"},
                    },
                    "securityContext": unprivileged,
                }
            ],
        },
    )
    account = _service_account(NODE_LOCAL_PROXY)
    account["automountServiceAccountToken"] = False
    return [account, daemonset]


# ------------------------------------------------------------------------------------ addons


def _service_account(name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, "kube-system")}


def corefile() -> str:
    """CoreDNS's configuration: the cluster's names from the API, the rest forwarded to the node's
    resolvers."""
    return f""".:53 {{
    errors
    health {{
        lameduck 5s
    }}
    ready
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }}
    prometheus :9153
    forward . /etc/resolv.conf {{
        max_concurrent 1000
    }}
    cache 30
    loop
    reload
    loadbalance
}}
"""


def coredns(cp: ControlPlane) -> list[Manifest]:
    selector = {"k8s-app": KUBE_DNS}
    ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
        {"name": "metrics", "port": 9153, "protocol": "TCP"},
    ]
    role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": _meta("system:coredns"),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ],
    }
    subject = {"kind": "ServiceAccount", "name": COREDNS, "namespace": "kube-system"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(COREDNS, "kube-system", **selector),
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": selector},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {**MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": COREDNS,
                    "priorityClassName": "system-cluster-critical",
                    "dnsPolicy": "Default",  # its own queries go to the node's resolvers, not to itself
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {"matchLabels": selector},
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        }
                    },
                    "containers": [
                        {
                            "name": COREDNS,
                            "image": cp.image(COREDNS_IMAGE),
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "ports": [
                                {"name": p["name"], "containerPort": p["port"], "protocol": p["protocol"]}
                                for p in ports
                            ],
                            "livenessProbe": {
                                "httpGet": {"path": "/health", "port": 8080},
                                "initialDelaySeconds": 60,
                                "timeoutSeconds": 5,
                                "failureThreshold": 5,
                            },
                            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}},
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "70Mi"},
                                "limits": {"memory": "170Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/etc/coredns", "readOnly": True}
                            ],
                        }
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": COREDNS}}],
                },
            },
        },
    }
    return [
        _service_account(COREDNS),
        role,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta("system:coredns"),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:coredns"},
            "subjects": [subject],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(COREDNS, "kube-system"),
            "data": {"Corefile": corefile()},
        },
        deployment,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(KUBE_DNS, "kube-system", **selector, **{"kubernetes.io/name": "CoreDNS"}),
            "spec": {"selector": selector, "clusterIP": cluster_dns_ip(cp.service_cidr), "ports": ports},
        },
    ]


def kube_proxy_config(cp: ControlPlane) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clusterCIDR": cp.pod_cidr,
        "mode": "iptables",
        "clientConnection": {"kubeconfig": "/var/lib/kube-proxy/kubeconfig.conf"},
    }


def kube_proxy_kubeconfig(cp: ControlPlane) -> dict[str, Any]:
    """kube-proxy's way to the API server: the cluster's endpoint (no Service works before it does) and
    its ServiceAccount's token and CA, as mounted in its pods."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "default",
                "cluster": {
                    "server": pki.server_url(cp.endpoint_host, cp.endpoint_port),
                    "certificate-authority": f"{SERVICE_ACCOUNT_DIR}/ca.crt",
                },
            }
        ],
        "users": [{"name": "default", "user": {"tokenFile": f"{SERVICE_ACCOUNT_DIR}/token"}}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}}],
        "current-context": "default",
    }


def kube_proxy(cp: ControlPlane) -> list[Manifest]:
    selector = {"k8s-app": KUBE_PROXY}
    daemonset = _node_daemonset(
        KUBE_PROXY,
        {
            "containers": [
                {
                    "name": KUBE_PROXY,
                    "image": cp.component_image(KUBE_PROXY),
                    "command": [
                        "/usr/local/bin/kube-proxy",
                        "--config=/var/lib/kube-proxy/config.conf",
                        "--hostname-override=$(NODE_NAME)",
                    ],
                    "env": [
                        {
                            "name": "NODE_NAME",
                            "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                        }
                    ],
                    # It writes the node's iptables rules.
                    "securityContext": {"privileged": True},
                    "volumeMounts": [
                        {"name": KUBE_PROXY, "mountPath": "/var/lib/kube-proxy"},
                        {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                        {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
                    ],
                }
            ],
            "volumes": [
                {"name": KUBE_PROXY, "configMap": {"name": KUBE_PROXY}},
                {
                    "name": "xtables-lock",
                    "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"},
                },
                {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}},
            ],
        },
    )
    return [
        _service_account(KUBE_PROXY),
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta("kubeadm:node-proxier"),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:node-proxier"},
            "subjects": [{"kind": "ServiceAccount", "name": KUBE_PROXY, "namespace": "kube-system"}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(KUBE_PROXY, "kube-system", **selector),
            "data": {
                "config.conf": yaml.safe_dump(kube_proxy_config(cp), sort_keys=False),
                "kubeconfig.conf": yaml.safe_dump(kube_proxy_kubeconfig(cp), sort_keys=False),
            },
        },
        daemonset,
    ]


# ------------------------------------------------------------------------------------ all of it


CLOUD_CONTROLLER_ROLE = "flexplane:cloud-controller"


def cloud_controller_rbac() -> list[Manifest]:
    """What the cloud controller (``providers.cloud``, as :data:`.pki.CLOUD_CONTROLLER`) may do: read and
    initialize Nodes (labels, taint, provider ID, addresses) and delete those whose VM is gone, read Services
    and write their LoadBalancer status, and tell a Service's owner why it waits (Events). Nothing else: no
    Secret, no Pod, no write to a Service's spec."""
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["services/status"], "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "create", "patch"]},
    ]
    return [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(CLOUD_CONTROLLER_ROLE),
            "rules": rules,
        },
        cluster_role_binding(CLOUD_CONTROLLER_ROLE, CLOUD_CONTROLLER_ROLE, [_user(pki.CLOUD_CONTROLLER[0])]),
    ]


METRICS_ROLE = "flexplane:metrics"


def metrics_rbac() -> list[Manifest]:
    """What the API server's metrics scraper (:data:`.pki.METRICS_SCRAPER`) may do: ``get`` /metrics. No
    resource, no other path (not even /metrics/slis, /livez or /readyz, which ``system:monitoring`` adds)."""
    return [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(METRICS_ROLE),
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        cluster_role_binding(METRICS_ROLE, METRICS_ROLE, [_user(pki.METRICS_SCRAPER[0])]),
    ]


def tenant_manifests(cp: ControlPlane, ca_pem: bytes) -> list[Manifest]:
    """Everything for the tenant cluster, in the order to create it."""
    return [
        *cluster_info(cp, ca_pem),
        *join_support(cp),
        *konnectivity(cp),
        cluster_role_binding(
            "flexplane:kube-apiserver-kubelet-client",
            "system:kubelet-api-admin",
            [_user(pki.KUBELET_CLIENT[0])],
        ),
        cluster_role_binding("flexplane:vdc-admins", "cluster-admin", [_group(f"flexplane:vdc:{cp.vdc}")]),
        *cloud_controller_rbac(),
        *metrics_rbac(),
        *coredns(cp),
        *kube_proxy(cp),
        *(node_local_proxy(cp) if cp.sni else []),
        *network.manifests(cp),
        *storage.tenant_manifests(cp),
    ]
