"""The tenant cluster's network plugin (providers/controlplane/network.py, calico.py): Cilium's and Calico's
manifests for every version the catalog offers, valid against that version's schemas, wired together as
each documents it, pinned per minor version and moved by the registry setting; ``none`` installs nothing;
installing twice changes nothing, and an upgrade across minors applies the new release."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from devstack.kube import KubeServer
from devstack.seed import KUBERNETES_VERSIONS
from orchestrator.models import clusters as cluster_models
from orchestrator.models.zones import DEFAULT_NETWORK_MTU
from portal.clusters.forms import NETWORK_PLUGIN_CHOICES
from providers.controlplane import calico, cni, model, network, pki, steps, tenant
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
    assert cni.minor(version) in network.CILIUM_RELEASES, (
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
    with pytest.raises(network.UnknownNetworkPlugin, match=r"spec\.networkPlugin 'flannel'"):
        network.network_plugin("flannel")
    with pytest.raises(steps.Waiting, match=r"spec\.networkPlugin 'flannel'") as waiting:
        steps._network_plugin({"networkPlugin": "flannel"})
    assert waiting.value.reason == "UnknownNetworkPlugin"


def test_calico_is_installed_when_named_and_cilium_is_not() -> None:
    assert network.network_plugin("calico") == steps._network_plugin({"networkPlugin": "calico"}) == "calico"
    installed = {
        (m["kind"], m["metadata"]["name"]) for m in network.manifests(at("v1.34.2", network_plugin="calico"))
    }
    assert {("DaemonSet", "calico-node"), ("Deployment", "calico-kube-controllers")} <= installed
    assert not [name for _, name in installed if "cilium" in name]


def test_every_layer_offers_the_plugins_the_provider_installs() -> None:
    """The FlexControlPlane CRD's enum, the orchestrator's choices and the portal's form's: the provider's."""
    crd = yaml.safe_load(
        (
            Path(__file__).parents[3]
            / "charts/providers/crds/flexcontrolplanes.controlplane.flexplane.io.yaml"
        ).read_text()
    )
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["networkPlugin"]["enum"] == list(network.NETWORK_PLUGINS)
    assert spec["networkPlugin"]["default"] == network.DEFAULT_NETWORK_PLUGIN
    assert cluster_models.NETWORK_PLUGINS == network.NETWORK_PLUGINS
    assert cluster_models.DEFAULT_NETWORK_PLUGIN == network.DEFAULT_NETWORK_PLUGIN
    assert [value for value, _ in NETWORK_PLUGIN_CHOICES] == list(network.NETWORK_PLUGINS)


@pytest.mark.parametrize("version", OFFERED)
def test_the_images_are_ciliums_pinned_release_from_quay_io_by_default(version: str) -> None:
    release = network.CILIUM_RELEASES[cni.minor(version)]
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


# A control plane behind a LoadBalancer, a NodePort and the SNI router: where its network plugin is told the
# API server is (the endpoint every node reaches).
ENDPOINTS = [
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
]


@pytest.mark.parametrize(("cp", "host", "port"), ENDPOINTS)
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


@pytest.mark.parametrize("plugin", ["cilium", "calico"])
def test_every_mount_names_a_volume_and_every_configmap_and_account_is_installed(plugin: str) -> None:
    manifests = network.manifests(at("v1.34.2", network_plugin=plugin))
    installed = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    for workload in (m for m in manifests if m["kind"] in ("DaemonSet", "Deployment")):
        spec = pod(workload)
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            assert {m["name"] for m in container.get("volumeMounts", [])} <= set(volumes)
            for value in env(container).values():
                if isinstance(value, dict) and "configMapKeyRef" in value:
                    ref = value["configMapKeyRef"]
                    assert ("ConfigMap", ref["name"]) in installed
                    if not ref.get("optional"):
                        assert ref["key"] in named(manifests, "ConfigMap", ref["name"])["data"]
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


# ------------------------------------------------------------------------------------ Calico


def calico_at(version: str = "v1.34.2", **changes: Any) -> list[dict[str, Any]]:
    return network.manifests(at(version, network_plugin="calico", **changes))


def images(manifests: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Each workload's images, init containers' included."""
    return {
        m["metadata"]["name"]: {
            c["image"] for c in [*pod(m).get("initContainers", []), *pod(m)["containers"]]
        }
        for m in manifests
        if m["kind"] in ("DaemonSet", "Deployment")
    }


@pytest.mark.parametrize("version", OFFERED)
def test_every_offered_version_has_a_calico_release_pinned_for_its_minor(version: str) -> None:
    assert cni.minor(version) in calico.CALICO_RELEASES, (
        f"the catalog offers {version}: pin a Calico release for {minor(version)} in CALICO_RELEASES"
    )


def test_a_version_without_a_calico_pin_gets_the_nearest_release_below_it_or_else_the_oldest() -> None:
    newest, oldest = max(calico.CALICO_RELEASES), min(calico.CALICO_RELEASES)
    assert calico.calico_release(f"v{newest[0]}.{newest[1] + 2}.0") == calico.CALICO_RELEASES[newest]
    assert calico.calico_release(f"v{oldest[0]}.{oldest[1] - 4}.3") == calico.CALICO_RELEASES[oldest]


@pytest.mark.parametrize("version", OFFERED)
def test_the_images_are_calicos_pinned_release_from_quay_io_by_default(version: str) -> None:
    release = calico.CALICO_RELEASES[cni.minor(version)]
    assert images(calico_at(version)) == {
        "calico-node": {f"quay.io/calico/cni:{release}", f"quay.io/calico/node:{release}"},
        "calico-kube-controllers": {f"quay.io/calico/kube-controllers:{release}"},
    }


def test_a_moved_registry_serves_calicos_images_under_the_same_paths() -> None:
    release = calico.CALICO_RELEASES[(1, 34)]
    assert images(calico_at(registry=MIRROR)) == {
        "calico-node": {f"{MIRROR}/calico/cni:{release}", f"{MIRROR}/calico/node:{release}"},
        "calico-kube-controllers": {f"{MIRROR}/calico/kube-controllers:{release}"},
    }


def test_calico_node_makes_the_clusters_pod_cidr_its_pool_and_tunnels_it_over_vxlan_without_bgp() -> None:
    manifests = calico_at()
    node = pod(named(manifests, "DaemonSet", "calico-node"))["containers"][0]
    config = named(manifests, "ConfigMap", "calico-config")["data"]
    settings = env(node)
    assert settings["CALICO_IPV4POOL_CIDR"] == "10.50.0.0/16"
    assert settings["CALICO_IPV4POOL_VXLAN"] == "Always"
    assert settings["CALICO_IPV4POOL_IPIP"] == "Never"
    assert settings["DATASTORE_TYPE"] == "kubernetes"
    assert settings["CALICO_NETWORKING_BACKEND"]["configMapKeyRef"]["key"] == "calico_backend"
    assert config["calico_backend"] == "vxlan"  # no BIRD, no BGP
    assert "FELIX_TYPHAK8SSERVICENAME" not in settings  # no Typha: Felix watches the API server itself
    assert settings["FELIX_USAGEREPORTINGENABLED"] == "false"
    assert all(isinstance(value, str) for value in config.values())
    # kube-proxy's own idea of the pod CIDR is the same.
    assert tenant.kube_proxy_config(CP)["clusterCIDR"] == settings["CALICO_IPV4POOL_CIDR"]


def test_the_pods_mtu_leaves_room_for_vxlan_on_a_vdc_network() -> None:
    manifests = calico_at()
    config = named(manifests, "ConfigMap", "calico-config")["data"]
    node = pod(named(manifests, "DaemonSet", "calico-node"))
    assert calico.VDC_NETWORK_MTU == DEFAULT_NETWORK_MTU  # the zones' default, as the orchestrator has it
    assert int(config["veth_mtu"]) == DEFAULT_NETWORK_MTU - 50
    # The pods' interfaces (through install-cni) and Calico's VXLAN device take that MTU.
    install = next(c for c in node["initContainers"] if c["name"] == "install-cni")
    assert env(install)["CNI_MTU"]["configMapKeyRef"]["key"] == "veth_mtu"
    assert env(node["containers"][0])["FELIX_VXLANMTU"]["configMapKeyRef"]["key"] == "veth_mtu"


def test_the_cni_configuration_is_calicos_plugin_with_its_ipam_then_portmap() -> None:
    template = named(calico_at(), "ConfigMap", "calico-config")["data"]["cni_network_config"]
    # As install-cni completes it on a node.
    written = (
        template.replace("__CNI_MTU__", "1400")
        .replace("__KUBERNETES_NODE_NAME__", "w1")
        .replace("__KUBECONFIG_FILEPATH__", "/etc/cni/net.d/calico-kubeconfig")
    )
    conflist = json.loads(written)
    first, then = conflist["plugins"]
    assert (first["type"], first["ipam"], first["datastore_type"]) == (
        "calico",
        {"type": "calico-ipam"},
        "kubernetes",
    )
    assert (first["mtu"], first["nodename"]) == (1400, "w1")
    assert then["type"] == "portmap"
    assert then["capabilities"] == {"portMappings": True}


@pytest.mark.parametrize(("cp", "host", "port"), ENDPOINTS)
def test_every_calico_container_reaches_the_api_server_at_the_clusters_endpoint(
    cp: model.ControlPlane, host: str, port: str
) -> None:
    manifests = network.manifests(dataclasses.replace(cp, network_plugin="calico"))
    node = named(manifests, "DaemonSet", "calico-node")
    controllers = named(manifests, "Deployment", "calico-kube-controllers")
    containers = [*pod(node)["initContainers"], *pod(node)["containers"], *pod(controllers)["containers"]]
    assert [c["name"] for c in containers] == [
        "upgrade-ipam",
        "install-cni",
        "calico-node",
        "calico-kube-controllers",
    ]
    for container in containers:
        assert env(container)["KUBERNETES_SERVICE_HOST"] == host, container["name"]
        assert env(container)["KUBERNETES_SERVICE_PORT"] == port, container["name"]
    # Each node's address is the one it reaches the endpoint from.
    assert env(pod(node)["containers"][0])["IP_AUTODETECTION_METHOD"] == f"can-reach={host}"


def test_calico_node_runs_on_a_not_ready_node_on_its_network_and_kube_controllers_waits_for_a_ready_one() -> (
    None
):
    manifests = calico_at()
    node = pod(named(manifests, "DaemonSet", "calico-node"))
    assert node["hostNetwork"] is True
    assert all(tolerated(node["tolerations"], taint) for taint in NOT_READY_TAINTS)
    assert node["priorityClassName"] == "system-node-critical"
    controllers = pod(named(manifests, "Deployment", "calico-kube-controllers"))
    assert not controllers.get("hostNetwork")  # on the pod network, which calico-node makes
    assert controllers["priorityClassName"] == "system-cluster-critical"
    assert named(manifests, "Deployment", "calico-kube-controllers")["spec"]["replicas"] == 1


def test_calico_node_writes_the_nodes_cni_configuration_and_binaries() -> None:
    node = pod(named(calico_at(), "DaemonSet", "calico-node"))
    volumes = {v["name"]: v.get("hostPath", {}).get("path") for v in node["volumes"]}
    install = next(c for c in node["initContainers"] if c["name"] == "install-cni")
    mounts = {volumes[m["name"]]: m["mountPath"] for m in install["volumeMounts"]}
    # Where Calico's installer writes, under /host: the node's configuration and binary directories.
    assert mounts == {"/etc/cni/net.d": "/host/etc/cni/net.d", "/opt/cni/bin": "/host/opt/cni/bin"}
    assert env(install)["CNI_CONF_NAME"] == "10-calico.conflist"
    assert env(install)["CNI_NETWORK_CONFIG"]["configMapKeyRef"] == {
        "name": "calico-config",
        "key": "cni_network_config",
    }


def test_calicos_crds_cover_every_kind_its_roles_name_and_are_open_for_calico_to_validate() -> None:
    manifests = calico_at()
    crds = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "CustomResourceDefinition"}
    assert len(crds) == len(calico.CALICO_KINDS) + len(calico.ADMIN_POLICY_KINDS) == 24
    named_kinds = {
        f"{resource.split('/')[0]}.{group}"
        for role in (m for m in manifests if m["kind"] == "ClusterRole")
        for rule in role["rules"]
        for group in rule["apiGroups"]
        if group in (calico.GROUP, calico.POLICY_GROUP)
        for resource in rule["resources"]
    }
    assert named_kinds <= set(crds)
    for name, crd in crds.items():
        assert name == f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"
        (version,) = crd["spec"]["versions"]
        schema = version["schema"]["openAPIV3Schema"]
        assert schema["properties"]["spec"] == {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    # A k8s.io group's CRD says where Kubernetes approved its API, or the API server refuses it.
    for kind in ("adminnetworkpolicies", "baselineadminnetworkpolicies"):
        crd = crds[f"{kind}.policy.networking.k8s.io"]
        assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"].startswith("https://")
    assert crds["networkpolicies.crd.projectcalico.org"]["spec"]["scope"] == "Namespaced"
    assert crds["ippools.crd.projectcalico.org"]["spec"]["scope"] == "Cluster"


def test_calico_node_mints_tokens_for_the_cni_plugins_account_only_and_kube_controllers_none() -> None:
    manifests = calico_at()
    node, plugin, controllers = (
        named(manifests, "ClusterRole", name)
        for name in ("calico-node", "calico-cni-plugin", "calico-kube-controllers")
    )
    (token,) = [r for r in node["rules"] if "serviceaccounts/token" in r["resources"]]
    assert token["resourceNames"] == ["calico-cni-plugin"]
    assert token["verbs"] == ["create"]
    assert granted(controllers, "", "serviceaccounts/token") == set()
    assert granted(plugin, "", "serviceaccounts/token") == set()
    # The CNI plugin assigns and releases pods' addresses; calico-node makes the default pool at start.
    assert {"create", "delete"} <= granted(plugin, "crd.projectcalico.org", "ipamblocks")
    assert "create" in granted(node, "crd.projectcalico.org", "ippools")
    assert not any(granted(role, "", "secrets") for role in (node, plugin, controllers))


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


def test_installing_calico_twice_changes_nothing_and_its_crds_are_served(
    tenant_kube: tuple[KubeServer, Kube],
) -> None:
    server, kube = tenant_kube
    cp = at("v1.34.2", network_plugin="calico")
    install(kube, cp)
    revision = server.emulator.revision
    install(kube, cp)
    assert server.emulator.revision == revision
    groups = client.ApisApi(kube.api).get_api_versions().groups
    served = {g.name: [v.version for v in g.versions] for g in groups}
    assert served["crd.projectcalico.org"] == ["v1"]
    assert served["policy.networking.k8s.io"] == ["v1alpha1"]
    assert kube.get("apps/v1", "DaemonSet", "calico-node", "kube-system") is not None
    assert kube.get("apps/v1", "Deployment", "calico-kube-controllers", "kube-system") is not None
