"""The workers' kubelets of the hosted control plane's stand-in (devstack/tenant_kubelets.py, run by
devstack/hosted_control_plane.py): a provisioned Machine is a Node of the tenant's API server, NotReady
with the kubelet's "network plugin not ready" until a network plugin's DaemonSet would run on it.

The network plugins applied are the provider's own: Cilium's agent and Calico's calico-node, as
providers/controlplane/network.py installs them."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.config import new_client_from_config

from devstack import tenant_kubelets
from devstack.hosted_control_plane import HostedControlPlanes
from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.pki import CertificateAuthority
from orchestrator.sources.kube_objects import CLUSTER_NAME_LABEL, VDC_LABEL
from providers.controlplane import model, network
from tests import addresses
from tests.apikit import eventually
from tests.devstack.test_hosted_control_plane import apiserver_address

T = TypeVar("T")

# Third octets of the worker's world subnet: the management emulator's, and the LoadBalancer's addresses.
SUITE = 219
LOAD_BALANCERS = 220
HOST = addresses.address(SUITE, 1)
VDC_NS = "vdc-demo"
PROVIDER_ID = "proxmox://2f0c6a3e-7a51-4c38-9d1e-5b7d1f0e4a21"


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 15.0) -> T:
    return cast(T, eventually(probe, timeout, what))


# ------------------------------------------------------------------------------------ pure


def daemonset(tolerations: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": tolerations,
                    "volumes": volumes,
                }
            }
        }
    }


CNI_CONF = [{"name": "cni", "hostPath": {"path": "/etc/cni/net.d"}}]
NODE = tenant_kubelets.node({"metadata": {"name": "w1"}, "spec": {"providerID": PROVIDER_ID}})


def test_a_new_node_is_tainted_not_ready_as_the_node_lifecycle_controller_does() -> None:
    assert {(t["key"], t["effect"]) for t in NODE["spec"]["taints"]} == {
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
    }
    assert NODE["spec"]["providerID"] == PROVIDER_ID


def test_only_a_daemonset_that_writes_the_cni_configuration_and_tolerates_the_node_readies_it() -> None:
    everything = [{"operator": "Exists"}]
    assert tenant_kubelets.network_ready(NODE, [daemonset(everything, CNI_CONF)])
    # Something else on every node (kube-proxy, Konnectivity's agents): no CNI configuration written.
    other = daemonset(everything, [{"name": "modules", "hostPath": {"path": "/lib/modules"}}])
    assert not tenant_kubelets.network_ready(NODE, [other])
    # A plugin whose pods do not tolerate the NotReady node's taints never lands there.
    assert not tenant_kubelets.network_ready(NODE, [daemonset([], CNI_CONF)])
    only_scheduling = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}]
    assert not tenant_kubelets.network_ready(NODE, [daemonset(only_scheduling, CNI_CONF)])
    # Nor one whose nodeSelector the node does not match.
    windows = daemonset(everything, CNI_CONF)
    windows["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/os": "windows"}
    assert not tenant_kubelets.network_ready(NODE, [windows])


@pytest.mark.parametrize("plugin", ["cilium", "calico"])
def test_the_providers_agent_readies_a_node_and_its_other_workload_alone_does_not(plugin: str) -> None:
    cp = model.ControlPlane(
        vdc="demo", cluster="nodes", version="v1.34.2", endpoint_host="10.20.0.7", network_plugin=plugin
    )
    installed = network.manifests(cp)
    (agent,) = [m for m in installed if m["kind"] == "DaemonSet"]  # cilium, calico-node
    (other,) = [m for m in installed if m["kind"] == "Deployment"]  # cilium-operator, calico-kube-controllers
    assert tenant_kubelets.network_ready(NODE, [agent])
    assert not tenant_kubelets.network_ready(NODE, [other])


@pytest.mark.parametrize(
    ("machine", "joined"),
    [
        ({"spec": {"providerID": PROVIDER_ID}, "status": {"phase": "Provisioned"}}, True),
        ({"spec": {}, "status": {"phase": "Provisioned"}}, False),
        ({"spec": {"providerID": PROVIDER_ID}, "status": {"phase": "Provisioning"}}, False),
        (
            {
                "metadata": {"deletionTimestamp": "2026-12-07T01:00:00Z"},
                "spec": {"providerID": PROVIDER_ID},
                "status": {"phase": "Provisioned"},
            },
            False,
        ),
    ],
)
def test_a_worker_joins_once_its_machine_is_provisioned(machine: dict[str, Any], joined: bool) -> None:
    assert tenant_kubelets.joined(machine) is joined


# ------------------------------------------------------------------------------------ in the stand-in


@pytest.fixture(scope="module")
def management(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[client.ApiClient, HostedControlPlanes]]:
    with KubeServer.start(HOST) as server:
        server.install_crds(CLUSTER_API_CORE_CRDS)
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("kubelets") / "kubeconfig")
        hosted = HostedControlPlanes(kubeconfig, addresses.address(LOAD_BALANCERS, 0)[:-1]).start()
        api = new_client_from_config(config_file=str(kubeconfig))
        try:
            yield api, hosted
        finally:
            hosted.stop()
            api.close()


def control_plane(core: Any, apps: Any, tmp_path: Path, cluster: str) -> Path:
    """The control plane's namespace (labelled as the provider labels it), its LoadBalancer, its PKI and
    its API server's Deployment: the stand-in serves the tenant's API server. The CA's path."""
    ns = f"fpcp-demo-{cluster}"
    labels = {VDC_LABEL: "demo", CLUSTER_NAME_LABEL: cluster}
    core.create_namespace({"metadata": {"name": ns, "labels": labels}})
    ip = apiserver_address(core, ns, timeout=15.0)
    ca = CertificateAuthority.create(tmp_path / "ca")
    cert, key = ca.issue_server([ip], tmp_path, "apiserver")
    data = {
        "apiserver.crt": cert.read_bytes(),
        "apiserver.key": key.read_bytes(),
        "ca.crt": ca.cert_path.read_bytes(),
    }
    core.create_namespaced_secret(
        ns, {"metadata": {"name": "pki"}, "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
    )
    pki = "/etc/kubernetes/pki"
    container = {
        "name": "kube-apiserver",
        "image": "registry.k8s.io/kube-apiserver:v1.34.2",
        "args": [f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key"],
        "volumeMounts": [{"name": "pki", "mountPath": pki, "readOnly": True}],
    }
    apps.create_namespaced_deployment(
        ns,
        {
            "metadata": {"name": "control-plane"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "cp"}},
                "template": {
                    "metadata": {"labels": {"app": "cp"}},
                    "spec": {
                        "containers": [container],
                        "volumes": [{"name": "pki", "secret": {"secretName": "pki"}}],
                    },
                },
            },
        },
    )
    return ca.cert_path


def tenant_client(url: str, ca: Path) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = url
    configuration.ssl_ca_cert = str(ca)
    return client.ApiClient(configuration)


@pytest.mark.parametrize("plugin", ["cilium", "calico"])
def test_a_workers_node_is_not_ready_until_the_network_plugin_runs_and_goes_with_its_machine(
    management: tuple[client.ApiClient, HostedControlPlanes], tmp_path: Path, plugin: str
) -> None:
    api, hosted = management
    core: Any = client.CoreV1Api(api)
    apps: Any = client.AppsV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    cluster = f"nodes-{plugin}"  # a cluster of each plugin's own, both in the VDC's namespace
    machine_name = f"{cluster}-workers-x7k2p"
    ca = control_plane(core, apps, tmp_path, cluster)
    server = wait_for(lambda: hosted.server(f"fpcp-demo-{cluster}"), "the tenant's API server")

    try:
        core.create_namespace({"metadata": {"name": VDC_NS}})
    except ApiException as error:
        if error.status != 409:  # made by the other plugin's run
            raise
    machine = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"name": machine_name, "labels": {CLUSTER_NAME_LABEL: cluster}},
        "spec": {"clusterName": cluster, "providerID": PROVIDER_ID},
    }
    custom.create_namespaced_custom_object("cluster.x-k8s.io", "v1beta2", VDC_NS, "machines", machine)
    custom.patch_namespaced_custom_object_status(
        "cluster.x-k8s.io", "v1beta2", VDC_NS, "machines", machine_name, {"status": {"phase": "Provisioned"}}
    )

    tenant = tenant_client(server.url, ca)
    try:
        tenant_core: Any = client.CoreV1Api(tenant)
        tenant_apps: Any = client.AppsV1Api(tenant)

        def node(ready: str) -> Any:
            nodes = tenant_core.list_node().items
            conditions = nodes[0].status.conditions if nodes and nodes[0].status else None
            return nodes[0] if conditions and conditions[0].status == ready else None

        registered = wait_for(lambda: node("False"), "the worker's Node, NotReady")
        assert registered.metadata.name == machine_name
        assert registered.spec.provider_id == PROVIDER_ID
        (condition,) = registered.status.conditions
        assert condition.reason == "KubeletNotReady"
        assert "NetworkPluginNotReady" in condition.message
        assert {t.key for t in registered.spec.taints} == {"node.kubernetes.io/not-ready"}

        # The plugin's agent, as the provider installs it in the tenant cluster.
        cp = model.ControlPlane(
            vdc="demo", cluster=cluster, version="v1.34.2", endpoint_host=server.url, network_plugin=plugin
        )
        (agent,) = [m for m in network.manifests(cp) if m["kind"] == "DaemonSet"]
        tenant_apps.create_namespaced_daemon_set("kube-system", agent)
        ready = wait_for(lambda: node("True"), "the Node Ready once the network plugin runs")
        assert ready.status.conditions[0].reason == "KubeletReady"
        assert not ready.spec.taints

        custom.delete_namespaced_custom_object(
            "cluster.x-k8s.io", "v1beta2", VDC_NS, "machines", machine_name
        )
        wait_for(lambda: not tenant_core.list_node().items or None, "the Node gone with its Machine")
    finally:
        tenant.close()
