"""The tenant cluster's network plugin (providers/controlplane/network.py): Cilium's manifests for every
version the catalog offers, valid against that version's schemas, wired together as Cilium documents it,
pinned per minor version and moved by the registry setting; ``none`` installs nothing; installing twice
changes nothing, and an upgrade across minors applies the new release."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devstack.kube import KubeServer
from devstack.seed import KUBERNETES_VERSIONS
from providers.controlplane import model, network, pki, steps, tenant
from providers.controlplane.kube import Kube
from tests.kubeschema import invalid, shipped

OFFERED = [v["version"] for v in KUBERNETES_VERSIONS]
CA = pki.new_ca("kubernetes").cert_pem
CP = model.ControlPlane(
    vdc="demo", cluster="web", version="v1.34.2", endpoint_host="10.20.0.7", pod_cidr="10.50.0.0/16"
)
MIRROR = "registry.example.internal:5000"
# A node the network plugin must run on: NotReady (the node lifecycle controller's taints), and not yet
# initialized by a cloud controller.
NOT_READY_TAINTS = [
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
    {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
]


def at(version: str, **changes: Any) -> model.ControlPlane:
    return dataclasses.replace(CP, version=version, **changes)


def minor(version: str) -> str:
    return ".".join(version.removeprefix("v").split(".")[:2])


def named(manifests: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name)


def pod(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


@pytest.mark.parametrize("version", OFFERED)
@pytest.mark.parametrize("plugin", network.NETWORK_PLUGINS)
def test_the_tenant_install_validates_against_the_schemas_of_every_offered_version(
    version: str, plugin: str
) -> None:
    assert shipped(minor(version)), f"kubernetes-validate has no schemas for Kubernetes {minor(version)}"
    assert invalid(tenant.tenant_manifests(at(version, network_plugin=plugin), CA), minor(version)) == []


@pytest.mark.parametrize("version", OFFERED)
def test_every_offered_version_has_a_cilium_release_pinned_for_its_minor(version: str) -> None:
    assert network.minor(version) in network.CILIUM_RELEASES, (
        f"the catalog offers {version}: pin a Cilium release for {minor(version)} in CILIUM_RELEASES"
    )


def test_a_version_without_a_pin_gets_the_nearest_release_below_it_or_else_the_oldest() -> None:
    newest, oldest = max(network.CILIUM_RELEASES), min(network.CILIUM_RELEASES)
    assert network.cilium_release(f"v{newest[0]}.{newest[1] + 3}.0") == network.CILIUM_RELEASES[newest]
    assert network.cilium_release(f"v{oldest[0]}.{oldest[1] - 5}.1") == network.CILIUM_RELEASES[oldest]


def test_cilium_is_the_default_and_none_installs_nothing() -> None:
    assert model.ControlPlane(vdc="d", cluster="c", version="v1.34.2").network_plugin == "cilium"
    assert network.network_plugin(None) == network.network_plugin("") == "cilium"
    assert network.manifests(at("v1.34.2", network_plugin="none")) == []
    with_cilium = tenant.tenant_manifests(CP, CA)
    without = tenant.tenant_manifests(at("v1.34.2", network_plugin="none"), CA)
    assert [m for m in with_cilium if m not in without] == network.manifests(CP)
    assert not [m for m in without if "cilium" in m["metadata"]["name"]]


def test_a_plugin_the_provider_does_not_install_is_refused_naming_the_field() -> None:
    with pytest.raises(network.UnknownNetworkPlugin, match=r"spec\.networkPlugin 'calico'"):
        network.network_plugin("calico")
    with pytest.raises(steps.Waiting, match=r"spec\.networkPlugin 'flannel'") as waiting:
        steps._network_plugin({"networkPlugin": "flannel"})
    assert waiting.value.reason == "UnknownNetworkPlugin"


@pytest.mark.parametrize("version", OFFERED)
def test_the_images_are_ciliums_pinned_release_from_quay_io_by_default(version: str) -> None:
    release = network.CILIUM_RELEASES[network.minor(version)]
    manifests = network.manifests(at(version))
    agent, operator = (
        named(manifests, "DaemonSet", "cilium"),
        named(manifests, "Deployment", "cilium-operator"),
    )
    images = {c["image"] for c in [*pod(agent)["initContainers"], *pod(agent)["containers"]]}
    assert images == {f"quay.io/cilium/cilium:{release}"}
    assert pod(operator)["containers"][0]["image"] == f"quay.io/cilium/operator-generic:{release}"


def test_a_moved_registry_serves_ciliums_images_under_the_same_paths() -> None:
    release = network.CILIUM_RELEASES[(1, 34)]
    manifests = network.manifests(at("v1.34.2", registry=MIRROR))
    agent, operator = (
        named(manifests, "DaemonSet", "cilium"),
        named(manifests, "Deployment", "cilium-operator"),
    )
    images = {c["image"] for c in [*pod(agent)["initContainers"], *pod(agent)["containers"]]}
    assert images == {f"{MIRROR}/cilium/cilium:{release}"}
    assert pod(operator)["containers"][0]["image"] == f"{MIRROR}/cilium/operator-generic:{release}"


def test_the_config_tunnels_over_vxlan_in_the_pod_cidr_and_leaves_services_to_kube_proxy() -> None:
    config = named(network.manifests(CP), "ConfigMap", "cilium-config")["data"]
    assert config["routing-mode"] == "tunnel"
    assert config["tunnel-protocol"] == "vxlan"
    assert config["ipam"] == "cluster-pool"
    assert config["cluster-pool-ipv4-cidr"] == "10.50.0.0/16"
    assert config["kube-proxy-replacement"] == "false"
    assert all(isinstance(value, str) for value in config.values())  # a ConfigMap holds strings only
    # kube-proxy's own idea of the pod CIDR is the same.
    assert tenant.kube_proxy_config(CP)["clusterCIDR"] == config["cluster-pool-ipv4-cidr"]


@pytest.mark.parametrize(
    ("cp", "host", "port"),
    [
        (CP, "10.20.0.7", "6443"),
        (
            at("v1.34.2", endpoint_host="203.0.113.9", endpoint_port=31443, service_type="NodePort"),
            "203.0.113.9",
            "31443",
        ),
        (
            at("v1.34.2", endpoint_host="web.demo.k8s.example.com", endpoint_port=7443, service_type="SNI"),
            "web.demo.k8s.example.com",
            "7443",
        ),
    ],
)
def test_the_agent_and_the_operator_reach_the_api_server_at_the_clusters_endpoint(
    cp: model.ControlPlane, host: str, port: str
) -> None:
    manifests = network.manifests(cp)
    for workload in (
        named(manifests, "DaemonSet", "cilium"),
        named(manifests, "Deployment", "cilium-operator"),
    ):
        main = pod(workload)["containers"][0]
        assert env(main)["KUBERNETES_SERVICE_HOST"] == host
        assert env(main)["KUBERNETES_SERVICE_PORT"] == port
        assert main["args"] == [f"--config-dir={network.CONFIG_DIR}"]


def tolerated(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    return any(
        t.get("operator") == "Exists"
        and t.get("key") in (None, taint["key"])
        and t.get("effect") in (None, taint["effect"])
        for t in tolerations
    )


def test_the_agent_and_the_operator_run_on_a_not_ready_node_on_its_network() -> None:
    manifests = network.manifests(CP)
    for workload in (
        named(manifests, "DaemonSet", "cilium"),
        named(manifests, "Deployment", "cilium-operator"),
    ):
        spec = pod(workload)
        assert spec["hostNetwork"] is True  # no pod network before it runs
        assert all(tolerated(spec["tolerations"], taint) for taint in NOT_READY_TAINTS)
        assert spec["priorityClassName"] in ("system-node-critical", "system-cluster-critical")


def test_the_agent_writes_the_nodes_cni_configuration_and_binary() -> None:
    agent = named(network.manifests(CP), "DaemonSet", "cilium")
    volumes = {v["name"]: v for v in pod(agent)["volumes"]}
    config = named(network.manifests(CP), "ConfigMap", "cilium-config")["data"]
    main = pod(agent)["containers"][0]
    conf = next(
        m
        for m in main["volumeMounts"]
        if volumes[m["name"]].get("hostPath", {}).get("path") == "/etc/cni/net.d"
    )
    assert config["write-cni-conf-when-ready"].startswith(conf["mountPath"] + "/")
    install = next(c for c in pod(agent)["initContainers"] if c["name"] == "install-cni-binaries")
    (binaries,) = install["volumeMounts"]
    assert volumes[binaries["name"]]["hostPath"]["path"] == "/opt/cni/bin"
    assert binaries["mountPath"] == "/host/opt/cni/bin"  # where Cilium's install script copies cilium-cni


def test_every_mount_names_a_volume_and_every_configmap_and_account_is_installed() -> None:
    manifests = network.manifests(CP)
    installed = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    for workload in (m for m in manifests if m["kind"] in ("DaemonSet", "Deployment")):
        spec = pod(workload)
        volumes = {v["name"]: v for v in spec["volumes"]}
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            assert {m["name"] for m in container.get("volumeMounts", [])} <= set(volumes)
            for value in env(container).values():
                if isinstance(value, dict) and "configMapKeyRef" in value:
                    assert ("ConfigMap", value["configMapKeyRef"]["name"]) in installed
        for volume in volumes.values():
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in installed
        account = spec["serviceAccountName"]
        assert ("ServiceAccount", account) in installed
        binding = named(manifests, "ClusterRoleBinding", account)
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}
        ]
        assert ("ClusterRole", binding["roleRef"]["name"]) in installed


def granted(role: dict[str, Any], group: str, resource: str) -> set[str]:
    return {
        verb
        for rule in role["rules"]
        if group in rule["apiGroups"] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_operator_registers_ciliums_crds_and_gives_nodes_their_pod_cidrs_and_the_agent_does_neither() -> (
    None
):
    manifests = network.manifests(CP)
    operator, agent = (
        named(manifests, "ClusterRole", "cilium-operator"),
        named(manifests, "ClusterRole", "cilium"),
    )
    assert {"create", "update"} <= granted(operator, "apiextensions.k8s.io", "customresourcedefinitions")
    assert {"create", "update", "delete"} <= granted(operator, "cilium.io", "ciliumnodes")
    assert "patch" in granted(operator, "", "nodes")
    assert granted(agent, "apiextensions.k8s.io", "customresourcedefinitions") == {"get", "list", "watch"}
    assert "patch" not in granted(agent, "", "nodes")
    assert "delete" not in granted(agent, "cilium.io", "ciliumnodes")


# ------------------------------------------------------------------------------------ installing


@pytest.fixture
def tenant_kube() -> Iterator[tuple[KubeServer, Kube]]:
    """A tenant cluster's API server (the devstack's emulator) and the provider's client of it."""
    with KubeServer.start() as server:
        configuration = client.Configuration()
        configuration.host = server.url
        api = client.ApiClient(configuration)
        try:
            yield server, Kube(api)
        finally:
            api.close()


def install(kube: Kube, cp: model.ControlPlane) -> None:
    for manifest in tenant.tenant_manifests(cp, CA):
        kube.ensure(manifest)


def test_installing_twice_changes_nothing_and_an_upgrade_across_minors_moves_cilium(
    tenant_kube: tuple[KubeServer, Kube],
) -> None:
    server, kube = tenant_kube
    old, new = at("v1.33.4"), at("v1.34.2")
    install(kube, old)
    revision = server.emulator.revision
    install(kube, old)
    assert server.emulator.revision == revision
    # The provider installs again only when what it would install changed: an upgrade across minors does.
    assert steps.tenant_hash(tenant.tenant_manifests(old, CA)) != steps.tenant_hash(
        tenant.tenant_manifests(new, CA)
    )
    install(kube, new)
    agent = kube.get("apps/v1", "DaemonSet", "cilium", "kube-system")
    operator = kube.get("apps/v1", "Deployment", "cilium-operator", "kube-system")
    assert agent is not None
    assert operator is not None
    release = network.CILIUM_RELEASES[(1, 34)]
    assert {c["image"] for c in pod(agent)["containers"]} == {f"quay.io/cilium/cilium:{release}"}
    assert {c["image"] for c in pod(agent)["initContainers"]} == {f"quay.io/cilium/cilium:{release}"}
    assert pod(operator)["containers"][0]["image"] == f"quay.io/cilium/operator-generic:{release}"
