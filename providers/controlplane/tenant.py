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
  carry that group).

CoreDNS and kube-proxy (optional control-plane services in Cluster API's words) are not installed.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import yaml

from providers.controlplane import pki
from providers.controlplane.model import (
    KONNECTIVITY_ADMIN_PORT,
    KONNECTIVITY_AGENT,
    KONNECTIVITY_AGENT_IMAGE,
    KONNECTIVITY_AUDIENCE,
    KONNECTIVITY_HEALTH_PORT,
    REGISTRY,
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
        "imageRepository": REGISTRY,
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
    """apiserver-network-proxy's agent: dials the server through the endpoint, trusts the cluster CA."""
    return [
        "--ca-cert=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        f"--proxy-server-host={cp.endpoint_host}",
        f"--proxy-server-port={cp.konnectivity_port}",
        f"--admin-server-port={KONNECTIVITY_ADMIN_PORT}",
        f"--health-server-port={KONNECTIVITY_HEALTH_PORT}",
        f"--service-account-token-path={TOKEN_DIR}/{TOKEN_FILE}",
    ]


def konnectivity(cp: ControlPlane) -> list[Manifest]:
    selector = {"k8s-app": KONNECTIVITY_AGENT}
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(KONNECTIVITY_AGENT, "kube-system", **selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {**MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": KONNECTIVITY_AGENT,
                    "priorityClassName": "system-node-critical",
                    # On the host's network: it runs before the CNI does, and reaches kubelets and pods.
                    "hostNetwork": True,
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "tolerations": [{"operator": "Exists"}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [
                        {
                            "name": KONNECTIVITY_AGENT,
                            "image": KONNECTIVITY_AGENT_IMAGE,
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
            },
        },
    }
    return [
        cluster_role_binding(
            "system:konnectivity-server", "system:auth-delegator", [_user(KONNECTIVITY_AUDIENCE)]
        ),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(KONNECTIVITY_AGENT, "kube-system")},
        daemonset,
    ]


# ------------------------------------------------------------------------------------ all of it


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
    ]
