"""The hosted control plane's manifests: valid, wired together, Konnectivity as documented."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml
from cryptography import x509

from providers.controlplane import etcd, model, pki, render, tenant
from tests.kubeschema import invalid

CP = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", replicas=2, endpoint_host="10.20.0.7")
CP3 = model.ControlPlane(
    vdc="demo",
    cluster="web",
    version="v1.34.2",
    replicas=3,
    endpoint_host="api.example.net",
    etcd_members=3,
    service_type="NodePort",
    endpoint_port=31443,
    konnectivity_port=31132,
)

# The tenant cluster's cloud controller, as rendered with flex.plane's URL set and the VDC's key there.
CLOUD = model.CloudController(
    url="https://flexplane.example.com", identity_url="https://id.example.com", project_id="1"
)

# apiserver-network-proxy's documented options (its README and Kubernetes' "Set up Konnectivity
# service" task): the flag, the value it must have here, and what it is for.
KONNECTIVITY_SERVER_FLAGS = {
    "--uds-name": (model.UDS_NAME, "the Unix socket the API server dials (the egress selector's udsName)"),
    "--mode": ("grpc", "the protocol on that socket: the egress selector's proxyProtocol GRPC"),
    "--server-port": ("0", "0 with --uds-name: no TCP port for the API server"),
    "--agent-port": ("8132", "where agents connect (the Service's konnectivity port)"),
    "--admin-port": ("8133", "admin/pprof"),
    "--health-port": ("8134", "/healthz and /readyz"),
    "--cluster-cert": ("/etc/kubernetes/pki/konnectivity-server.crt", "TLS certificate shown to agents"),
    "--cluster-key": ("/etc/kubernetes/pki/konnectivity-server.key", "its key"),
    "--agent-namespace": ("kube-system", "the agents' ServiceAccount's namespace"),
    "--agent-service-account": ("konnectivity-agent", "the agents' ServiceAccount"),
    "--authentication-audience": (
        "system:konnectivity-server",
        "the audience of the agents' projected tokens",
    ),
    "--kubeconfig": ("/etc/kubernetes/konnectivity-server.conf", "to review the agents' tokens"),
    "--server-count": ("2", "how many servers an agent should hold tunnels to (the replicas)"),
}
KONNECTIVITY_AGENT_FLAGS = {
    "--proxy-server-host": ("10.20.0.7", "the endpoint's host"),
    "--proxy-server-port": ("8132", "the server's agent port"),
    "--ca-cert": (
        "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "the cluster CA that signs the server",
    ),
    "--service-account-token-path": (
        "/var/run/secrets/tokens/konnectivity-agent-token",
        "the projected token",
    ),
    "--admin-server-port": ("8133", "admin"),
    "--health-server-port": ("8134", "health"),
}


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return pki.ensure_pki({}, CP.names)


def everything(cp: model.ControlPlane, files: dict[str, bytes]) -> list[dict[str, Any]]:
    return [
        render.render_namespace(cp),
        render.render_service(cp),
        *render.management_manifests(cp, files),
        *render.vdc_secrets(cp, files, f"vdc-{cp.vdc}"),
        *tenant.tenant_manifests(cp, files["ca.crt"]),
        *render.render_cloud_controller(cp, CLOUD, files, b'{"type": "serviceaccount"}'),
    ]


def flags(args: list[str]) -> dict[str, str]:
    result = {}
    for arg in args:
        name, _, value = arg.partition("=")
        result[name] = value
    return result


def containers(deployment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}


def test_every_manifest_validates_against_the_kubernetes_schema(files: dict[str, bytes]) -> None:
    assert invalid(everything(CP, files)) == []


def test_the_node_port_service_and_a_three_member_etcd_validate_too() -> None:
    assert invalid([render.render_service(CP3), *etcd.render_etcd(CP3), render.render_deployment(CP3)]) == []


def test_everything_of_the_control_plane_lives_in_its_namespace_with_the_contracts_labels(
    files: dict[str, bytes],
) -> None:
    for manifest in [render.render_service(CP), *render.management_manifests(CP, files)]:
        assert manifest["metadata"]["namespace"] == "fpcp-demo-web"
        labels = dict(manifest["metadata"]["labels"])
        labels.pop(model.METRICS_LABEL, None)  # the metrics Services' (test_metrics)
        assert labels == {
            "flexplane.io/vdc": "demo",
            "cluster.x-k8s.io/cluster-name": "web",
            "flexplane.io/control-plane": "web",
        }


def test_the_egress_selector_sends_cluster_traffic_over_grpc_on_the_konnectivity_socket() -> None:
    configmap = render.render_konnectivity_configmap(CP)
    config = yaml.safe_load(configmap["data"]["egress-selector-configuration.yaml"])
    assert config == {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {
                    "proxyProtocol": "GRPC",
                    "transport": {
                        "uds": {"udsName": "/etc/kubernetes/konnectivity-server/konnectivity-server.socket"}
                    },
                },
            }
        ],
    }


@pytest.mark.parametrize("flag", sorted(KONNECTIVITY_SERVER_FLAGS))
def test_the_konnectivity_server_runs_with_the_documented_flags(flag: str) -> None:
    server = containers(render.render_deployment(CP))["konnectivity-server"]
    assert flags(server["args"])[flag] == KONNECTIVITY_SERVER_FLAGS[flag][0]


@pytest.mark.parametrize("flag", sorted(KONNECTIVITY_AGENT_FLAGS))
def test_the_konnectivity_agent_runs_with_the_documented_flags(flag: str) -> None:
    daemonset = next(m for m in tenant.konnectivity(CP) if m["kind"] == "DaemonSet")
    agent = daemonset["spec"]["template"]["spec"]["containers"][0]
    assert flags(agent["args"])[flag] == KONNECTIVITY_AGENT_FLAGS[flag][0]


def test_the_konnectivity_server_does_not_hold_the_pod_unready_until_an_agent_connects() -> None:
    server = containers(render.render_deployment(CP))["konnectivity-server"]
    assert "readinessProbe" not in server  # proxy-server's /readyz: "no connection to any proxy agent"
    assert server["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_agents_token_is_projected_for_the_servers_audience() -> None:
    daemonset = next(m for m in tenant.konnectivity(CP) if m["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    (volume,) = pod["volumes"]
    (source,) = volume["projected"]["sources"]
    assert source["serviceAccountToken"]["audience"] == "system:konnectivity-server"
    assert pod["serviceAccountName"] == "konnectivity-agent"
    assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == "/var/run/secrets/tokens"


def test_the_api_server_and_konnectivity_share_the_socket_directory() -> None:
    pods = containers(render.render_deployment(CP))
    for name in ("kube-apiserver", "konnectivity-server"):
        assert {"name": "konnectivity-uds", "mountPath": model.UDS_DIR} in pods[name]["volumeMounts"]
    apiserver = flags(pods["kube-apiserver"]["args"])
    assert apiserver["--egress-selector-config-file"] == model.EGRESS_SELECTOR_FILE


def test_the_api_server_takes_bootstrap_tokens_node_authorization_and_the_front_proxy() -> None:
    apiserver = flags(containers(render.render_deployment(CP))["kube-apiserver"]["args"])
    assert apiserver["--enable-bootstrap-token-auth"] == "true"
    assert apiserver["--authorization-mode"] == "Node,RBAC"
    assert apiserver["--requestheader-allowed-names"] == "front-proxy-client"
    assert apiserver["--advertise-address"] == "10.20.0.7"
    assert apiserver["--etcd-servers"] == "https://etcd-0.etcd.fpcp-demo-web.svc:2379"
    assert apiserver["--service-cluster-ip-range"] == "10.96.0.0/12"


def test_every_file_a_component_is_given_is_mounted_where_it_looks(files: dict[str, bytes]) -> None:
    deployment = render.render_deployment(CP)
    statefulset = etcd.render_etcd(CP)[1]
    pods = [deployment["spec"]["template"]["spec"], statefulset["spec"]["template"]["spec"]]
    for pod in pods:
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for container in pod["containers"]:
            mounted = set()
            for mount in container["volumeMounts"]:
                volume = volumes.get(mount["name"], {})
                for item in (volume.get("secret") or {}).get("items", []):
                    path = (
                        mount["mountPath"] if "subPath" in mount else f"{mount['mountPath']}/{item['path']}"
                    )
                    mounted.add(path)
                    source = model.PKI_SECRET if volume["secret"]["secretName"] == model.PKI_SECRET else None
                    assert source is None or item["key"] in files
            wanted = {
                value for value in flags(container["args"]).values() if value.startswith("/etc/kubernetes/")
            } - {model.EGRESS_SELECTOR_FILE, model.UDS_NAME}
            assert wanted <= mounted, (container["name"], wanted - mounted)


def test_only_the_controller_manager_holds_the_cluster_cas_key() -> None:
    pod = render.render_deployment(CP)["spec"]["template"]["spec"]
    holders = {
        v["name"]
        for v in pod["volumes"]
        if any(i["key"] == "ca.key" for i in v.get("secret", {}).get("items", []))
    }
    assert holders == {"controller-manager-pki"}


def test_an_upgrade_changes_the_component_images_and_rolls_without_losing_a_replica() -> None:
    before = containers(render.render_deployment(CP))
    after_deployment = render.render_deployment(model.ControlPlane(**{**CP.__dict__, "version": "v1.35.0"}))
    after = containers(after_deployment)
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert before[component]["image"] == f"registry.k8s.io/{component}:v1.34.2"
        assert after[component]["image"] == f"registry.k8s.io/{component}:v1.35.0"
    assert after["konnectivity-server"]["image"] == CP.image(model.KONNECTIVITY_SERVER_IMAGE)
    assert after_deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_replicas_and_selector_follow_the_spec() -> None:
    deployment = render.render_deployment(CP3)
    assert deployment["spec"]["replicas"] == 3
    assert model.selector_string(CP3) == (
        "app.kubernetes.io/component=control-plane,flexplane.io/control-plane=web"
    )
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in deployment["spec"]["selector"]["matchLabels"].items())


def test_every_container_runs_as_non_root_read_only_without_capabilities(files: dict[str, bytes]) -> None:
    for manifest in render.management_manifests(CP, files):
        if manifest["kind"] not in ("Deployment", "StatefulSet"):
            continue
        pod = manifest["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"]
        assert pod["automountServiceAccountToken"] is False
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert container["resources"]["requests"]
            assert "livenessProbe" in container


def test_the_service_exposes_the_api_and_konnectivity_as_a_load_balancer_or_node_ports() -> None:
    for cp, kind in ((CP, "LoadBalancer"), (CP3, "NodePort")):
        service = render.render_service(cp)
        assert service["metadata"]["name"] == "kube-apiserver"
        assert service["spec"]["type"] == kind
        assert {(p["name"], p["port"]) for p in service["spec"]["ports"]} == {
            ("https", 6443),
            ("konnectivity", 8132),
        }


def test_behind_a_node_port_the_api_server_listens_on_it_and_agents_dial_the_konnectivity_node_port() -> None:
    cp = model.ControlPlane(
        "demo",
        "web",
        "v1.34.2",
        service_type="NodePort",
        endpoint_host="192.0.2.10",
        endpoint_port=31443,
        konnectivity_port=31132,
    )
    apiserver = containers(render.render_deployment(cp))["kube-apiserver"]
    assert flags(apiserver["args"])["--secure-port"] == "31443"
    assert flags(apiserver["args"])["--advertise-address"] == "192.0.2.10"
    assert apiserver["readinessProbe"]["httpGet"]["port"] == 31443
    ports = {p["name"]: p for p in render.render_service(cp)["spec"]["ports"]}
    assert (ports["https"]["port"], ports["https"]["targetPort"], ports["https"]["nodePort"]) == (
        6443,
        31443,
        31443,
    )
    assert (ports["konnectivity"]["targetPort"], ports["konnectivity"]["nodePort"]) == (8132, 31132)
    agent = next(m for m in tenant.konnectivity(cp) if m["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    assert flags(agent["containers"][0]["args"])["--proxy-server-port"] == "31132"
    files = pki.ensure_pki({}, cp.names)
    scheduler = yaml.safe_load(
        pki.kubeconfig_files(files, cluster="web", server="https://127.0.0.1:31443")["scheduler.conf"]
    )
    conf = base64.b64decode(render.render_kubeconfig_secret(cp, files)["data"]["scheduler.conf"])
    assert yaml.safe_load(conf)["clusters"] == scheduler["clusters"]


def test_a_three_member_etcd_knows_every_member_and_serves_their_names() -> None:
    files = pki.ensure_pki({}, CP3.names)
    statefulset = etcd.render_etcd(CP3)[1]
    args = flags(statefulset["spec"]["template"]["spec"]["containers"][0]["args"])
    assert args["--initial-cluster"].count("=https://") == 3
    assert statefulset["spec"]["replicas"] == 3
    dns, _ = pki.san_names(x509.load_pem_x509_certificate(files["etcd-server.crt"]))
    assert {f"etcd-{i}.etcd.fpcp-demo-web.svc" for i in range(3)} <= dns


def test_the_vdcs_secrets_follow_cluster_apis_conventions(files: dict[str, bytes]) -> None:
    kubeconfig, ca = render.vdc_secrets(CP, files, "vdc-demo")
    for secret in (kubeconfig, ca):
        assert secret["type"] == "cluster.x-k8s.io/secret"
        assert secret["metadata"]["namespace"] == "vdc-demo"
        assert secret["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "web"
    assert kubeconfig["metadata"]["name"] == "web-kubeconfig"
    assert set(kubeconfig["data"]) == {"value"}
    assert ca["metadata"]["name"] == "web-ca"
    assert set(ca["data"]) == {"tls.crt", "tls.key"}
