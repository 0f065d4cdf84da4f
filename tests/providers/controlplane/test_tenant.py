"""What the provider installs in a tenant cluster: what kubeadm join and Konnectivity need, and kubeadm's
addons."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import yaml

from providers.controlplane import model, pki, tenant

CP = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", endpoint_host="10.20.0.7")
CA = pki.new_ca("kubernetes").cert_pem


def named(kind: str, name: str) -> dict[str, Any]:
    return next(
        m for m in tenant.tenant_manifests(CP, CA) if m["kind"] == kind and m["metadata"]["name"] == name
    )


def subjects(binding: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["kind"], s["name"]) for s in binding["subjects"]]


def test_cluster_info_holds_the_ca_and_the_endpoint_and_no_credentials() -> None:
    configmap = named("ConfigMap", "cluster-info")
    assert configmap["metadata"]["namespace"] == "kube-public"
    config = yaml.safe_load(configmap["data"]["kubeconfig"])
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == "https://10.20.0.7:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == CA
    assert config["users"] == []


def test_anyone_may_read_cluster_info_and_nothing_else() -> None:
    role = named("Role", "kubeadm:bootstrap-signer-clusterinfo")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}
    ]
    assert subjects(named("RoleBinding", "kubeadm:bootstrap-signer-clusterinfo")) == [
        ("User", "system:anonymous")
    ]


def test_bootstrap_tokens_may_bootstrap_a_node_and_have_its_certificate_approved() -> None:
    token = ("Group", "system:bootstrappers:kubeadm:default-node-token")
    expected = {
        "kubeadm:kubelet-bootstrap": "system:node-bootstrapper",
        "kubeadm:node-autoapprove-bootstrap": (
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
        ),
        "kubeadm:get-nodes": "kubeadm:get-nodes",
    }
    for name, role in expected.items():
        binding = named("ClusterRoleBinding", name)
        assert binding["roleRef"]["name"] == role
        assert subjects(binding) == [token]
    rotation = named("ClusterRoleBinding", "kubeadm:node-autoapprove-certificate-rotation")
    assert (
        rotation["roleRef"]["name"] == "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
    )
    assert subjects(rotation) == [("Group", "system:nodes")]


def test_a_joining_node_finds_kubeadms_cluster_and_kubelet_configuration() -> None:
    cluster = yaml.safe_load(named("ConfigMap", "kubeadm-config")["data"]["ClusterConfiguration"])
    assert cluster["kubernetesVersion"] == "v1.34.2"
    assert cluster["controlPlaneEndpoint"] == "10.20.0.7:6443"
    kubelet = yaml.safe_load(named("ConfigMap", "kubelet-config")["data"]["kubelet"])
    assert kubelet["clusterDNS"] == ["10.96.0.10"]
    assert kubelet["authentication"]["webhook"]["enabled"] is True


def test_konnectivitys_server_user_may_review_the_agents_tokens() -> None:
    binding = named("ClusterRoleBinding", "system:konnectivity-server")
    assert binding["roleRef"]["name"] == "system:auth-delegator"
    assert subjects(binding) == [("User", "system:konnectivity-server")]
    assert named("ServiceAccount", "konnectivity-agent")["metadata"]["namespace"] == "kube-system"


def test_the_vdcs_group_is_cluster_admin() -> None:
    binding = named("ClusterRoleBinding", "flexplane:vdc-admins")
    assert binding["roleRef"]["name"] == "cluster-admin"
    assert subjects(binding) == [("Group", "flexplane:vdc:demo")]


def test_the_api_servers_kubelet_client_gets_the_kubelet_api_and_no_more() -> None:
    binding = named("ClusterRoleBinding", "flexplane:kube-apiserver-kubelet-client")
    assert binding["roleRef"]["name"] == "system:kubelet-api-admin"
    assert subjects(binding) == [("User", "kube-apiserver-kubelet-client")]


def test_cluster_dns_answers_at_the_address_every_kubelet_is_told() -> None:
    kubelet = yaml.safe_load(named("ConfigMap", "kubelet-config")["data"]["kubelet"])
    service = named("Service", "kube-dns")
    assert [service["spec"]["clusterIP"]] == kubelet["clusterDNS"]
    deployment = named("Deployment", "coredns")
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["selector"] == selector
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert {(p["port"], p["protocol"]) for p in service["spec"]["ports"]} >= {(53, "UDP"), (53, "TCP")}
    corefile = named("ConfigMap", "coredns")["data"]["Corefile"]
    assert f"kubernetes {kubelet['clusterDomain']} " in corefile
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["-conf", "/etc/coredns/Corefile"]
    # It may read what it answers for, and nothing more.
    role = named("ClusterRole", "system:coredns")
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"list", "watch"}
    assert subjects(named("ClusterRoleBinding", "system:coredns")) == [("ServiceAccount", "coredns")]


def test_kube_proxy_runs_the_clusters_version_and_reaches_the_api_server_at_its_endpoint() -> None:
    daemonset = named("DaemonSet", "kube-proxy")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.k8s.io/kube-proxy:v1.34.2"
    config = named("ConfigMap", "kube-proxy")["data"]
    kubeconfig = yaml.safe_load(config["kubeconfig.conf"])
    [cluster] = kubeconfig["clusters"]
    assert cluster["cluster"]["server"] == "https://10.20.0.7:6443"
    assert yaml.safe_load(config["config.conf"])["clusterCIDR"] == CP.pod_cidr
    binding = named("ClusterRoleBinding", "kubeadm:node-proxier")
    assert binding["roleRef"]["name"] == "system:node-proxier"
    assert subjects(binding) == [("ServiceAccount", "kube-proxy")]
    upgraded = tenant.tenant_manifests(dataclasses.replace(CP, version="v1.35.0"), CA)
    [rolled] = [m for m in upgraded if m["kind"] == "DaemonSet" and m["metadata"]["name"] == "kube-proxy"]
    assert rolled["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":v1.35.0")
