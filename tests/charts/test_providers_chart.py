"""The providers chart: its CRDs are the contract's, its manifests validate, its RBAC grants what is used.

The chart is rendered offline (helm-python-sdk) once per set of values per module, and every manifest,
the CRDs of ``crds/`` included, is checked against Kubernetes' own schemas (kubernetes-validate, strict).
The CRDs' own schemas are checked against objects shaped as Cluster API's contracts and the providers'
code write them, and against what neither allows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import jsonschema
import pytest
import yaml

from tests.charts import kit
from tests.charts.kit import Manifest, kinds, manifests
from tests.kubeschema import invalid

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "providers"
CRDS_DIR = CHART / "crds"
EXAMPLE_VALUES = CHART / "ci" / "example-values.yaml"

RELEASE = "fp"
NAMESPACE = "cloud-system"
CONTRACT_LABEL = "cluster.x-k8s.io/v1beta2"
AGGREGATE_LABEL = "cluster.x-k8s.io/aggregate-to-manager"


# The contract's kinds: (group, kind, plural).
CONTRACT_KINDS = {
    ("infrastructure.flexplane.io", "ProxmoxCluster", "proxmoxclusters"),
    ("infrastructure.flexplane.io", "ProxmoxMachine", "proxmoxmachines"),
    ("infrastructure.flexplane.io", "ProxmoxMachineTemplate", "proxmoxmachinetemplates"),
    ("controlplane.flexplane.io", "FlexControlPlane", "flexcontrolplanes"),
}

VALUES: dict[str, dict[str, Any]] = {"default": {}, "example": yaml.safe_load(EXAMPLE_VALUES.read_text())}


# What an install must give: the session key's Secret (the chart generates none).
REQUIRED: dict[str, Any] = {"secretKey": {"existingSecret": "flexplane-secret-key"}}


def render(chart: helm_python.Chart, values: dict[str, Any]) -> dict[str, str]:
    """The chart rendered with ``values`` over the required ones."""
    return render_exactly(chart, kit.merged(REQUIRED, values))


def render_exactly(chart: helm_python.Chart, values: dict[str, Any]) -> dict[str, str]:
    return chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


chart = kit.loaded(CHART)
renders = kit.rendered_once(VALUES, render)
rendered = kit.rendering(VALUES)


def crds() -> dict[str, Manifest]:
    """The CRDs of ``crds/``, by kind."""
    found = [doc for path in sorted(CRDS_DIR.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]
    return {doc["spec"]["names"]["kind"]: doc for doc in found}


CRDS = crds()


def only(rendered: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = [m for m in rendered if m["kind"] == kind and name in (None, m["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def pod_spec(rendered: list[Manifest]) -> dict[str, Any]:
    spec: dict[str, Any] = only(rendered, "Deployment")["spec"]["template"]["spec"]
    return spec


def container(rendered: list[Manifest]) -> dict[str, Any]:
    return kit.sole_container(pod_spec(rendered))


def env(rendered: list[Manifest]) -> dict[str, Any]:
    return kit.env_of(container(rendered))


def rules(role: Manifest) -> list[dict[str, Any]]:
    return list(role["rules"])


def granted(role: Manifest, group: str, resource: str) -> set[str]:
    """The verbs ``role`` grants on ``resource`` of ``group``."""
    return {
        verb
        for rule in rules(role)
        if group in rule["apiGroups"] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


def schema_of(kind: str) -> dict[str, Any]:
    (version,) = CRDS[kind]["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def conforms(kind: str, obj: Manifest) -> bool:
    """Whether ``obj`` passes the CRD's OpenAPI schema (its JSON Schema part; CEL rules are not run)."""
    return jsonschema.Draft7Validator(schema_of(kind)).is_valid(obj)


# --- lint and validation ----------------------------------------------------------------------


@pytest.mark.parametrize("values", sorted(VALUES))
def test_the_chart_lints_without_errors_or_warnings(values: str) -> None:
    kit.assert_lints_clean(CHART, kit.merged(REQUIRED, VALUES[values]), NAMESPACE)


def test_every_manifest_validates_against_the_kubernetes_schema(rendered: list[Manifest]) -> None:
    assert invalid(rendered) == []


def test_every_crd_validates_against_the_kubernetes_schema() -> None:
    assert invalid(list(CRDS.values())) == []


def test_the_branches_neither_set_of_values_takes_also_validate(chart: helm_python.Chart) -> None:
    variant = {
        "image": {"digest": "sha256:" + "0" * 64},
        "podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
        "tmp": {"medium": ""},
        "secretKey": {"existingSecret": "providers-key"},
        "networkPolicy": {"enabled": False},
        "podDisruptionBudget": {"enabled": False},
        "rbac": {"create": False},
        "serviceAccount": {"create": False, "name": "existing"},
        "affinity": {"nodeAffinity": {}},
    }
    rendered = manifests(render(chart, variant))
    assert kinds(rendered) == {"Deployment"}
    assert invalid(rendered) == []


def test_the_chart_renders_what_the_providers_run_with(renders: dict[str, list[Manifest]]) -> None:
    assert kinds(renders["default"]) == {
        "ClusterRole", "ClusterRoleBinding", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Role",
        "RoleBinding", "ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    }  # fmt: skip


def test_the_chart_generates_no_secret_and_refuses_an_install_without_the_session_keys(
    chart: helm_python.Chart, renders: dict[str, list[Manifest]]
) -> None:
    assert not [m for rendered in renders.values() for m in rendered if m["kind"] == "Secret"]
    with pytest.raises(
        helm_python.HelmRenderError, match=r"secretKey\.existingSecret: .*flexplane-secret-key"
    ):
        render_exactly(chart, {})


def test_the_schema_describes_exactly_the_values_of_values_yaml(chart: helm_python.Chart) -> None:
    kit.assert_schema_is_exactly_the_values(chart)


def test_the_schema_refuses_an_unknown_top_level_key(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="additional properties 'replicas' not allowed"):
        render(chart, {"replicas": 3})


CLOUD = {
    "cloudController": {
        "url": "https://flexplane.example.com",
        "identity": {"url": "https://id.example.com", "projectId": "301"},
        "caBundle": {"configMap": "internal-ca", "key": "bundle.pem"},
    }
}


def test_without_a_url_the_providers_deploy_no_cloud_controller(renders: dict[str, list[Manifest]]) -> None:
    assert not [name for name in env(renders["default"]) if name.startswith("FLEXPLANE_PROVIDERS_CLOUD_")]


def test_the_cloud_controllers_settings_their_image_and_ca_bundle_reach_the_providers(
    chart: helm_python.Chart,
) -> None:
    rendered = manifests(render(chart, CLOUD))
    assert invalid(rendered) == []
    settings = env(rendered)
    assert settings["FLEXPLANE_PROVIDERS_CLOUD_URL"] == "https://flexplane.example.com"
    assert settings["FLEXPLANE_PROVIDERS_CLOUD_IDENTITY_URL"] == "https://id.example.com"
    assert settings["FLEXPLANE_PROVIDERS_CLOUD_PROJECT_ID"] == "301"
    assert settings["FLEXPLANE_PROVIDERS_CLOUD_IMAGE"] == container(rendered)["image"]
    mount, volume = kit.mounted(pod_spec(rendered), container(rendered), "cloud-ca")
    assert settings["FLEXPLANE_PROVIDERS_CLOUD_CA_FILE"] == f"{mount['mountPath']}/bundle.pem"
    assert volume["configMap"] == {
        "name": "internal-ca",
        "items": [{"key": "bundle.pem", "path": "bundle.pem"}],
    }
    assert "subPath" not in mount  # a changed bundle reaches the providers, and from them the controllers


def test_a_cloud_controller_url_without_its_identity_is_refused(chart: helm_python.Chart) -> None:
    with pytest.raises(Exception, match=r"cloudController\.identity\.url"):
        render(chart, {"cloudController": {"url": "https://flexplane.example.com"}})


def test_the_schema_refuses_a_cloud_controller_url_that_is_no_url(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="url"):
        render(chart, {"cloudController": {"url": "flexplane.example.com"}})


def test_the_schema_refuses_an_etcd_of_two_members(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="etcdMembers"):
        render(chart, {"config": {"etcdMembers": 2}})


# --- the CRDs ---------------------------------------------------------------------------------


def test_the_crds_are_the_contracts_four_kinds() -> None:
    found = {(crd["spec"]["group"], kind, crd["spec"]["names"]["plural"]) for kind, crd in CRDS.items()}

    assert found == CONTRACT_KINDS


def test_each_crd_is_named_plural_dot_group_in_a_file_of_that_name() -> None:
    for path in CRDS_DIR.glob("*.yaml"):
        (crd,) = yaml.safe_load_all(path.read_text())
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
        assert path.name == f"{crd['metadata']['name']}.yaml"


def test_each_crd_carries_cluster_apis_contract_label() -> None:
    assert {kind: crd["metadata"]["labels"][CONTRACT_LABEL] for kind, crd in CRDS.items()} == dict.fromkeys(
        CRDS, "v1alpha1"
    )


def test_each_crd_is_namespaced_with_one_stored_version_and_the_status_subresource() -> None:
    for crd in CRDS.values():
        (version,) = crd["spec"]["versions"]
        assert crd["spec"]["scope"] == "Namespaced"
        assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
        assert version["subresources"]["status"] == {}


def test_the_control_plane_has_the_scale_subresource_on_the_contracts_paths() -> None:
    (version,) = CRDS["FlexControlPlane"]["spec"]["versions"]

    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }


def test_the_crds_print_readiness_and_the_control_planes_version_and_endpoint() -> None:
    columns = {
        kind: {column["name"] for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]}
        for kind, crd in CRDS.items()
    }

    assert {"Cluster", "Ready", "Endpoint", "Provisioned"} <= columns["ProxmoxCluster"]
    assert {"Cluster", "Ready", "Zone", "Node", "Provisioned"} <= columns["ProxmoxMachine"]
    assert {"Cluster", "Version", "Endpoint", "Replicas", "Ready", "Initialized"} <= columns[
        "FlexControlPlane"
    ]


def test_every_field_of_the_schemas_is_typed_and_only_the_root_metadata_is_open() -> None:
    def untyped(schema: dict[str, Any], path: str) -> Iterator[str]:
        if "type" not in schema and "anyOf" not in schema:
            yield path
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            yield f"{path} keeps unknown fields"
        for name, child in (schema.get("properties") or {}).items():
            yield from untyped(child, f"{path}.{name}")
        if isinstance(schema.get("items"), dict):
            yield from untyped(schema["items"], f"{path}[]")

    assert [problem for kind in CRDS for problem in untyped(schema_of(kind), kind)] == []


READY = {
    "type": "Ready",
    "status": "True",
    "reason": "Provisioned",
    "message": "",
    "lastTransitionTime": "2026-12-01T00:00:00Z",
    "observedGeneration": 1,
}
PROXMOX_CLUSTER = {
    "apiVersion": "infrastructure.flexplane.io/v1alpha1",
    "kind": "ProxmoxCluster",
    "metadata": {"name": "demo", "namespace": "vdc-demo"},
    "spec": {"vdc": "demo", "network": "net-1", "controlPlaneEndpoint": {"host": "10.0.0.5", "port": 6443}},
    "status": {
        "initialization": {"provisioned": True},
        "failureDomains": [{"name": "zone-a", "controlPlane": False}],
        "conditions": [READY],
    },
}
MACHINE_SPEC = {
    "computeProfile": "m.small",
    "storageProfile": "ssd",
    "image": "ubuntu-k8s-1-34",
    "diskGb": 40,
}
PROXMOX_MACHINE = {
    "apiVersion": "infrastructure.flexplane.io/v1alpha1",
    "kind": "ProxmoxMachine",
    "metadata": {"name": "demo-workers-abcde", "namespace": "vdc-demo"},
    "spec": {**MACHINE_SPEC, "providerID": "proxmox://0f8fad5b-d9cb-469f-a165-70867728950e"},
    "status": {
        "initialization": {"provisioned": True},
        "addresses": [
            {"type": "InternalIP", "address": "10.1.0.7"},
            {"type": "Hostname", "address": "demo-workers-abcde"},
        ],
        "zone": "zone-a",
        "node": "pve1",
        "vmid": 104,
    },
}
TEMPLATE = {
    "apiVersion": "infrastructure.flexplane.io/v1alpha1",
    "kind": "ProxmoxMachineTemplate",
    "metadata": {"name": "demo-workers-1a2b3c", "namespace": "vdc-demo"},
    "spec": {"template": {"spec": MACHINE_SPEC}},
}
CONTROL_PLANE = {
    "apiVersion": "controlplane.flexplane.io/v1alpha1",
    "kind": "FlexControlPlane",
    "metadata": {"name": "demo", "namespace": "vdc-demo"},
    "spec": {"replicas": 2, "version": "v1.34.2", "serviceType": "LoadBalancer"},
    "status": {
        "initialization": {"controlPlaneInitialized": True},
        "replicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "upToDateReplicas": 2,
        "version": "v1.34.2",
        "selector": "app.kubernetes.io/name=kube-apiserver,cluster.x-k8s.io/cluster-name=demo",
        "externalManagedControlPlane": True,
        "observedGeneration": 1,
    },
}


def test_objects_shaped_as_the_contract_says_pass_the_schemas() -> None:
    assert conforms("ProxmoxCluster", PROXMOX_CLUSTER)
    assert conforms("ProxmoxMachine", PROXMOX_MACHINE)
    assert conforms("ProxmoxMachineTemplate", TEMPLATE)
    assert conforms("FlexControlPlane", CONTROL_PLANE)


def with_spec(obj: Manifest, **spec: Any) -> Manifest:
    return {**obj, "spec": {**obj["spec"], **spec}}


@pytest.mark.parametrize(
    ("kind", "obj"),
    [
        ("ProxmoxCluster", {**PROXMOX_CLUSTER, "spec": {"network": "net-1"}}),
        ("ProxmoxCluster", with_spec(PROXMOX_CLUSTER, controlPlaneEndpoint={"host": "10.0.0.5", "port": 0})),
        ("ProxmoxCluster", {**PROXMOX_CLUSTER, "metadata": {"name": "a" * 41}}),
        ("ProxmoxMachine", {**PROXMOX_MACHINE, "spec": {"computeProfile": "m.small", "image": "x"}}),
        ("ProxmoxMachine", with_spec(PROXMOX_MACHINE, diskGb=0)),
        ("ProxmoxMachine", with_spec(PROXMOX_MACHINE, providerID="proxmox://zone-a/104")),
        ("ProxmoxMachineTemplate", {**TEMPLATE, "spec": {"template": {"spec": {"image": "x"}}}}),
        ("FlexControlPlane", with_spec(CONTROL_PLANE, replicas=0)),
        ("FlexControlPlane", with_spec(CONTROL_PLANE, replicas=10)),
        ("FlexControlPlane", with_spec(CONTROL_PLANE, version="1.34")),
        ("FlexControlPlane", with_spec(CONTROL_PLANE, serviceType="ClusterIP")),
        ("FlexControlPlane", {**CONTROL_PLANE, "status": {"conditions": [{**READY, "status": "Yes"}]}}),
    ],
    ids=[
        "cluster-without-vdc",
        "endpoint-port-0",
        "cluster-name-over-40",
        "machine-without-storage-profile",
        "disk-of-0",
        "provider-id-not-a-uuid",
        "template-without-profiles",
        "no-replicas",
        "ten-replicas",
        "version-without-v-and-patch",
        "service-type-clusterip",
        "condition-status-yes",
    ],
)
def test_the_schemas_refuse_what_the_contract_does_not_allow(kind: str, obj: Manifest) -> None:
    assert not conforms(kind, obj)


# --- RBAC -------------------------------------------------------------------------------------


def test_no_role_grants_a_wildcard(rendered: list[Manifest]) -> None:
    roles = [m for m in rendered if m["kind"] in ("Role", "ClusterRole")]
    wildcards = [
        (role["metadata"]["name"], field)
        for role in roles
        for rule in rules(role)
        for field in ("apiGroups", "resources", "verbs")
        if "*" in rule.get(field, [])
    ]

    assert len(roles) == 5
    assert wildcards == []


def test_the_providers_reconcile_their_kinds_and_write_only_their_status(rendered: list[Manifest]) -> None:
    role = only(rendered, "ClusterRole", f"{RELEASE}-providers")

    assert granted(role, "infrastructure.flexplane.io", "proxmoxmachines") == {
        "get",
        "list",
        "watch",
        "patch",
    }
    assert granted(role, "infrastructure.flexplane.io", "proxmoxmachines/status") == {"patch"}
    # Cluster API core reads the templates (the aggregated role), not the providers.
    assert granted(role, "infrastructure.flexplane.io", "proxmoxmachinetemplates") == set()
    assert granted(role, "controlplane.flexplane.io", "flexcontrolplanes/status") == {"patch"}
    assert not granted(role, "infrastructure.flexplane.io", "proxmoxmachines") & {"create", "delete"}


def test_the_providers_read_cluster_api_cores_objects_and_patch_only_node_pools(
    rendered: list[Manifest],
) -> None:
    role = only(rendered, "ClusterRole", f"{RELEASE}-providers")

    for resource in ("clusters", "machines"):
        assert granted(role, "cluster.x-k8s.io", resource) == {"get", "list", "watch"}
    # An upgrade's workers follow their control plane: the control-plane provider moves the pools.
    assert granted(role, "cluster.x-k8s.io", "machinedeployments") == {"list", "patch"}


def test_the_control_planes_service_and_deployment_are_watched(rendered: list[Manifest]) -> None:
    """Their status (a LoadBalancer's address, the pods') wakes the control plane's reconcile."""
    role = only(rendered, "ClusterRole", f"{RELEASE}-providers")

    assert {"list", "watch"} <= granted(role, "", "services")
    assert {"list", "watch"} <= granted(role, "apps", "deployments")


def test_secrets_are_granted_only_by_the_roles_bound_namespace_by_namespace_and_never_listed(
    rendered: list[Manifest],
) -> None:
    role = only(rendered, "ClusterRole", f"{RELEASE}-providers")
    vdc = only(rendered, "ClusterRole", f"{RELEASE}-providers-vdc")
    control_plane = only(rendered, "ClusterRole", f"{RELEASE}-providers-control-plane")

    assert granted(role, "", "secrets") == set()
    assert granted(role, "rbac.authorization.k8s.io", "clusterroles") == {"bind"}
    (bind,) = [rule for rule in rules(role) if "clusterroles" in rule["resources"]]
    assert bind["resourceNames"] == [vdc["metadata"]["name"], control_plane["metadata"]["name"]]
    assert granted(vdc, "", "secrets") == {"get", "create", "patch", "delete"}
    # The control plane's namespace: its PKI, kubeconfigs and cloud controller's key (deleted with it).
    assert granted(control_plane, "", "secrets") == {"get", "create", "patch", "delete"}
    assert env(rendered)["FLEXPLANE_PROVIDERS_VDC_ROLE"] == vdc["metadata"]["name"]
    assert env(rendered)["FLEXPLANE_PROVIDERS_CONTROL_PLANE_ROLE"] == control_plane["metadata"]["name"]
    account = only(rendered, "ServiceAccount")["metadata"]["name"]
    assert env(rendered)["FLEXPLANE_SERVICE_ACCOUNT"] == f"{NAMESPACE}/{account}"


def test_leases_are_held_in_the_platform_namespace_only(renders: dict[str, list[Manifest]]) -> None:
    cluster_role = only(renders["example"], "ClusterRole", f"{RELEASE}-providers")
    role = only(renders["example"], "Role")

    assert not granted(cluster_role, "coordination.k8s.io", "leases")
    assert {"get", "create", "update"} <= granted(role, "coordination.k8s.io", "leases")
    assert role["metadata"]["namespace"] == "flexplane"
    assert only(renders["example"], "RoleBinding")["metadata"]["namespace"] == "flexplane"


def test_cluster_api_core_aggregates_management_of_the_four_kinds(rendered: list[Manifest]) -> None:
    role = only(rendered, "ClusterRole", f"{RELEASE}-providers-capi-manager")

    assert role["metadata"]["labels"][AGGREGATE_LABEL] == "true"
    for group, _, plural in CONTRACT_KINDS:
        assert granted(role, group, plural) == {"get", "list", "watch", "create", "update", "patch", "delete"}


def test_the_bindings_name_the_providers_service_account(rendered: list[Manifest]) -> None:
    account = only(rendered, "ServiceAccount")["metadata"]["name"]
    for binding in (only(rendered, "ClusterRoleBinding"), only(rendered, "RoleBinding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    assert pod_spec(rendered)["serviceAccountName"] == account


# --- the Deployment ---------------------------------------------------------------------------


def test_two_replicas_run_python_m_providers_with_production_settings(rendered: list[Manifest]) -> None:
    assert only(rendered, "Deployment")["spec"]["replicas"] == 2
    assert container(rendered)["command"] == ["python", "-m", "providers"]
    assert env(rendered)["DJANGO_SETTINGS_MODULE"] == "flexplane.settings.production"


def test_the_container_runs_as_non_root_on_a_read_only_root(rendered: list[Manifest]) -> None:
    context = container(rendered)["securityContext"]

    assert pod_spec(rendered)["securityContext"]["runAsNonRoot"] is True
    assert context["runAsNonRoot"] is True
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}


def test_the_cluster_is_reached_in_cluster_with_no_kubeconfig(rendered: list[Manifest]) -> None:
    assert "FLEXPLANE_KUBECONFIG" not in env(rendered)
    assert pod_spec(rendered)["automountServiceAccountToken"] is True
    assert only(rendered, "ServiceAccount")["automountServiceAccountToken"] is False


def test_the_agent_client_certificate_is_mounted_read_only_where_the_settings_look(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["example"]
    secret, files = kit.read_only_secret(pod_spec(rendered), container(rendered), "agent-tls")
    assert secret == "flexplane-capi-client"
    assert {env(rendered)[f"FLEXPLANE_AGENT_{name}"] for name in ("CA", "CERT", "KEY")} == files


def test_leader_election_takes_the_lease_named_by_the_values_with_the_pods_name(
    renders: dict[str, list[Manifest]],
) -> None:
    variables = env(renders["example"])

    assert variables["FLEXPLANE_PROVIDERS_LEADER_LEASE"] == "acme-providers-leader"
    assert variables["FLEXPLANE_PROVIDERS_LEADER_TTL"] == "20"
    assert variables["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert variables["FLEXPLANE_NAMESPACE"] == "flexplane"
    assert env(renders["default"])["FLEXPLANE_NAMESPACE"] == NAMESPACE


def test_the_nodeport_address_and_the_mesh_proxy_come_from_the_values(
    renders: dict[str, list[Manifest]],
) -> None:
    variables = env(renders["example"])

    assert variables["FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS"] == "10.20.0.50"
    assert variables["FLEXPLANE_MESH_PROXY"] == "http://flextenant-mesh-proxy.flexplane.svc:3128"
    assert env(renders["default"])["FLEXPLANE_PROVIDERS_NODEPORT_ADDRESS"] == ""


def test_a_standby_replica_survives_a_drain(rendered: list[Manifest]) -> None:
    budget = only(rendered, "PodDisruptionBudget")
    deployment = only(rendered, "Deployment")

    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]


# --- the NetworkPolicy ------------------------------------------------------------------------


def test_no_traffic_comes_in_but_the_cluster_pods_scrapes(rendered: list[Manifest]) -> None:
    policy = only(rendered, "NetworkPolicy")

    assert "Ingress" in policy["spec"]["policyTypes"]
    # The metrics port only (tests/charts/test_providers_chart_own_metrics.py), from pods of the cluster.
    assert policy["spec"]["ingress"] == [
        {"ports": [{"port": "metrics", "protocol": "TCP"}], "from": [{"namespaceSelector": {}}]}
    ]


def test_restricted_egress_reaches_dns_the_api_the_mesh_proxy_and_the_tenant_api_servers(
    renders: dict[str, list[Manifest]],
) -> None:
    egress = only(renders["example"], "NetworkPolicy")["spec"]["egress"]
    ports = [{port["port"] for port in rule["ports"]} for rule in egress]

    assert ports[:4] == [{53}, {443, 6443}, {3128}, {6443}]
    assert egress[1]["to"][0] == {"ipBlock": {"cidr": "10.20.0.10/32"}}
    assert egress[2]["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "mesh"
    assert (
        egress[3]["to"][0]["namespaceSelector"]["matchExpressions"][0]["key"] == "flexplane.io/control-plane"
    )


def test_egress_is_unrestricted_by_default(renders: dict[str, list[Manifest]]) -> None:
    assert only(renders["default"], "NetworkPolicy")["spec"]["policyTypes"] == ["Ingress"]


def test_a_restricted_egress_without_the_api_server_is_refused(chart: helm_python.Chart) -> None:
    policy = {"egress": {"enabled": True, "agents": {"cidrs": ["10.20.0.0/16"]}}}
    with pytest.raises(helm_python.HelmRenderError, match=r"networkPolicy\.egress\.kubeAPI\.cidrs"):
        render(chart, {"networkPolicy": policy})


def test_a_restricted_egress_with_no_way_to_the_agents_is_refused(chart: helm_python.Chart) -> None:
    policy = {"egress": {"enabled": True, "kubeAPI": {"cidrs": ["10.0.0.1/32"]}}}
    with pytest.raises(helm_python.HelmRenderError, match=r"networkPolicy\.egress\.agents\.cidrs"):
        render(chart, {"networkPolicy": policy})
