"""The flextenant chart: it lints, renders valid manifests, and keeps the stateless, least-privilege promises.

The chart is rendered offline (helm-python-sdk, no cluster, no helm binary) once per set of values
per module, and every manifest is checked against Kubernetes' own schemas (kubernetes-validate).
The chart generates no secret: the session key and the platform CA are the operator's, made once
(test_renders_are_stable.py renders every chart twice).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from tests.charts import kit
from tests.charts.kit import Manifest, kinds, manifests
from tests.kubeschema import invalid

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "flextenant"
EXAMPLE_VALUES = CHART / "ci" / "example-values.yaml"
SETTINGS = (ROOT / "flexplane" / "settings" / "base.py", ROOT / "flexplane" / "settings" / "production.py")

# Release name and namespace differ from the chart's name, so that defaults taken from them show.
RELEASE = "fp"
NAMESPACE = "cloud-system"


PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
# Settings the chart leaves alone: production settings fix them (DEBUG, GRAPHIQL), or the pods use
# the in-cluster service account rather than a kubeconfig.
NOT_FOR_THE_CHART = {"FLEXPLANE_DEBUG", "FLEXPLANE_GRAPHIQL", "FLEXPLANE_KUBECONFIG"}


def example_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(EXAMPLE_VALUES.read_text())
    return values


# What an install must give: the Secrets made once (the chart generates none) and the hub's endpoint
# (the mesh is on by default). Every render here starts from these.
REQUIRED: dict[str, Any] = {
    "secretKey": {"existingSecret": "flexplane-secret-key"},
    "agentCA": {"secretName": "flexplane-agent-ca"},
    "mesh": {"hubEndpoint": "203.0.113.7:51820"},
}
VALUES = {"default": dict[str, Any](), "example": example_values()}


def render(chart: helm_python.Chart, values: dict[str, Any]) -> dict[str, str]:
    """The chart rendered with ``values`` over the required ones."""
    return render_exactly(chart, kit.merged(REQUIRED, values))


def render_exactly(chart: helm_python.Chart, values: dict[str, Any]) -> dict[str, str]:
    return chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


chart = kit.loaded(CHART)
renders = kit.rendered_once(VALUES, render)
rendered = kit.rendering(VALUES)


def only(rendered: list[Manifest], kind: str) -> Manifest:
    found = [m for m in rendered if m["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def component(rendered: list[Manifest], kind: str, name: str) -> Manifest:
    """The one manifest of ``kind`` whose ``app.kubernetes.io/component`` label is ``name``."""
    found = [
        m
        for m in rendered
        if m["kind"] == kind and m["metadata"]["labels"].get("app.kubernetes.io/component") == name
    ]
    assert len(found) == 1, f"expected one {kind} of component {name}, found {len(found)}"
    return found[0]


def pod_spec(rendered: list[Manifest], name: str = "orchestrator") -> dict[str, Any]:
    spec: dict[str, Any] = component(rendered, "Deployment", name)["spec"]["template"]["spec"]
    return spec


def container(rendered: list[Manifest]) -> dict[str, Any]:
    return kit.sole_container(pod_spec(rendered))


def env(rendered: list[Manifest]) -> dict[str, Any]:
    return kit.env_of(container(rendered))


def named(rendered: list[Manifest], kind: str, name: str) -> Manifest:
    found = [m for m in rendered if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def settings_read() -> set[str]:
    """Every FLEXPLANE_* variable the settings modules read."""
    return {
        f"FLEXPLANE_{name}"
        for path in SETTINGS
        for name in re.findall(r"\benv(?:_[a-z]+)?\(\s*\"([A-Z_]+)\"", path.read_text())
    }


def bytes_of(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([KMG]i)?", quantity).groups()  # type: ignore[union-attr]  # a bad quantity fails the test
    return int(number) * {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[unit]


# --- lint and validation ----------------------------------------------------------------------


@pytest.mark.parametrize("values", sorted(VALUES))
def test_the_chart_lints_without_errors_or_warnings(values: str) -> None:
    kit.assert_lints_clean(CHART, kit.merged(REQUIRED, VALUES[values]), NAMESPACE)


def test_every_manifest_validates_against_the_kubernetes_schema(rendered: list[Manifest]) -> None:
    assert invalid(rendered) == []


def test_the_branches_neither_set_of_values_takes_also_validate(chart: helm_python.Chart) -> None:
    variant = {
        "image": {"digest": "sha256:" + "0" * 64},
        "podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
        "tmp": {"medium": ""},
        "server": {"preStopSleepSeconds": 0, "proxyHeaders": False},
        "config": {"allowedHosts": ["*"]},
        "autoscaling": {"enabled": True, "targetMemoryUtilizationPercentage": 80},
        "ingress": {"enabled": True, "hosts": ["a.example.com", "b.example.com"], "tls": {"enabled": False}},
        "networkPolicy": {"enabled": True},
        "topologySpread": {"enabled": False},
        "podDisruptionBudget": {"maxUnavailable": "25%"},
        "rbac": {"create": False},
        "serviceAccount": {"create": False, "name": "existing"},
    }
    rendered = manifests(render(chart, variant))
    assert kinds(rendered) >= {"Deployment", "Ingress", "HorizontalPodAutoscaler", "NetworkPolicy"}
    assert invalid(rendered) == []


def test_the_example_renders_every_optional_resource(renders: dict[str, list[Manifest]]) -> None:
    # So that the validation above covers each template at least once.
    assert kinds(renders["example"]) >= {"Ingress", "NetworkPolicy", "HorizontalPodAutoscaler"}
    assert kinds(renders["default"]) >= {
        "Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "PodDisruptionBudget",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    }  # fmt: skip


def test_the_schema_describes_exactly_the_values_of_values_yaml(chart: helm_python.Chart) -> None:
    kit.assert_schema_is_exactly_the_values(chart)


# --- the stateless promise --------------------------------------------------------------------


def test_nothing_persistent_is_rendered(rendered: list[Manifest]) -> None:
    assert not kinds(rendered) & {"PersistentVolumeClaim", "PersistentVolume", "StatefulSet"}
    volumes = pod_spec(rendered)["volumes"]
    assert [v["name"] for v in volumes if "persistentVolumeClaim" in v or "ephemeral" in v] == []
    assert [v["name"] for v in volumes if "hostPath" in v] == []


def test_the_only_empty_dir_is_a_small_tmp(rendered: list[Manifest]) -> None:
    empty_dirs = {v["name"]: v["emptyDir"] for v in pod_spec(rendered)["volumes"] if "emptyDir" in v}
    mounts = {m["name"]: m["mountPath"] for m in container(rendered)["volumeMounts"]}
    assert list(empty_dirs) == ["tmp"]
    assert mounts["tmp"] == "/tmp"
    assert bytes_of(empty_dirs["tmp"]["sizeLimit"]) <= 64 * 2**20


# --- least privilege --------------------------------------------------------------------------


def test_cluster_wide_grants_are_the_tenant_clusters_kinds_and_no_secrets(rendered: list[Manifest]) -> None:
    binding = named(rendered, "RoleBinding", f"{RELEASE}-flextenant")
    assert binding["roleRef"]["kind"] == "Role"
    role = named(rendered, "Role", f"{RELEASE}-flextenant")
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    roles = {m["metadata"]["name"]: m["rules"] for m in rendered if m["kind"] == "ClusterRole"}
    clusters, vdc = roles[f"{RELEASE}-flextenant-clusters"], roles[f"{RELEASE}-flextenant-vdc"]
    granted = {
        (group, resource)
        for rule in clusters
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert {group for group, _ in granted} == {
        "cluster.x-k8s.io",
        "bootstrap.cluster.x-k8s.io",
        "infrastructure.flexplane.io",
        "controlplane.flexplane.io",
        "",
        "rbac.authorization.k8s.io",
    }
    assert ("", "secrets") not in granted
    assert not any("*" in r["verbs"] + r["resources"] for r in clusters)
    # It binds only the VDC role, which reads and writes Secrets where it is bound (the VDCs' namespaces:
    # its clusters' CAs read, their cloud controllers' keys written; the fence admits no other name) and
    # no more: never lists them.
    (bind,) = [r for r in clusters if "bind" in r["verbs"]]
    assert bind["resourceNames"] == [f"{RELEASE}-flextenant-vdc"]
    assert vdc == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "update", "delete"]}
    ]
    (cluster_binding,) = [m for m in rendered if m["kind"] == "ClusterRoleBinding"]
    assert cluster_binding["roleRef"]["name"] == f"{RELEASE}-flextenant-clusters"
    env = {e["name"]: e.get("value") for e in container(rendered)["env"]}
    assert env["FLEXPLANE_VDC_ROLE"] == f"{RELEASE}-flextenant-vdc"
    assert env["FLEXPLANE_SERVICE_ACCOUNT"].endswith(f"/{cluster_binding['subjects'][0]['name']}")


def test_without_tenant_clusters_nothing_is_granted_cluster_wide(chart: helm_python.Chart) -> None:
    rendered = manifests(render(chart, {"rbac": {"tenantClusters": False}}))
    assert not kinds(rendered) & {"ClusterRole", "ClusterRoleBinding"}
    assert "FLEXPLANE_VDC_ROLE" not in {e["name"] for e in container(rendered)["env"]}


def test_the_role_manages_secrets_for_the_ca_and_join_tokens_and_nothing_more(
    rendered: list[Manifest],
) -> None:
    rules = named(rendered, "Role", f"{RELEASE}-flextenant")["rules"]
    on_secrets = [
        rule
        for rule in rules
        if set(rule.get("apiGroups", [])) & {"", "*"} and set(rule["resources"]) & {"secrets", "*"}
    ]
    # Join tokens are created, listed, read, marked used (an update) and removed; the CA is read.
    (rule,) = on_secrets
    assert rule["resources"] == ["secrets"]
    assert set(rule["verbs"]) == {"get", "list", "create", "update", "delete"}
    assert not any("*" in r["verbs"] for r in rules)


def test_the_schema_refuses_extra_rules_on_secrets(chart: helm_python.Chart) -> None:
    rule = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}
    with pytest.raises(helm_python.HelmValuesError, match="extraRules"):
        render(chart, {"rbac": {"extraRules": [rule]}})


def test_the_container_is_locked_down(rendered: list[Manifest]) -> None:
    pod, app = pod_spec(rendered)["securityContext"], container(rendered)["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    assert app["runAsNonRoot"] is True
    assert app["readOnlyRootFilesystem"] is True
    assert app["allowPrivilegeEscalation"] is False
    assert app["capabilities"] == {"drop": ["ALL"]}


def test_the_agent_certificate_is_mounted_read_only_where_the_settings_look(rendered: list[Manifest]) -> None:
    variables = env(rendered)
    _, files = kit.read_only_secret(pod_spec(rendered), container(rendered), "agent-tls")
    assert {variables[f"FLEXPLANE_AGENT_{part}"] for part in ("CA", "CERT", "KEY")} == files


# --- the app ----------------------------------------------------------------------------------


def test_the_server_serves_the_asgi_app_with_production_settings(rendered: list[Manifest]) -> None:
    app = container(rendered)
    assert app["command"] == ["flexplane-serve"]
    assert app["args"][app["args"].index("--host") + 1] == "0.0.0.0"  # noqa: S104 - every address of the pod
    assert app["args"][app["args"].index("--port") + 1] == "8000"
    assert app["ports"][0] == {"name": "http", "containerPort": 8000, "protocol": "TCP"}  # then metrics
    assert env(rendered)["DJANGO_SETTINGS_MODULE"] == "flexplane.settings.production"


def test_the_probes_ask_healthz_for_liveness_and_readyz_for_readiness(rendered: list[Manifest]) -> None:
    app = container(rendered)
    assert app["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert app["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert app["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {app[probe]["httpGet"]["port"] for probe in PROBES} == {"http"}


def test_the_probes_send_a_host_the_app_allows(rendered: list[Manifest]) -> None:
    # Django answers 400 to a Host header outside ALLOWED_HOSTS, which would fail every probe.
    allowed = env(rendered)["FLEXPLANE_ALLOWED_HOSTS"].split(",")
    for probe in PROBES:
        (header,) = container(rendered)[probe]["httpGet"]["httpHeaders"]
        assert header["name"] == "Host"
        assert header["value"] in allowed


def test_the_settings_read_every_variable_the_chart_sets(rendered: list[Manifest]) -> None:
    assert {name for name in env(rendered) if name.startswith("FLEXPLANE_")} - settings_read() == set()


def test_the_chart_sets_every_setting_but_the_development_ones(renders: dict[str, list[Manifest]]) -> None:
    # A setting added to flexplane/settings needs its value here too (the example sets the optional ones).
    set_by_chart = {name for rendered in renders.values() for name in env(rendered)}
    assert settings_read() - set_by_chart == NOT_FOR_THE_CHART


def test_the_platform_namespace_defaults_to_the_release_namespace(renders: dict[str, list[Manifest]]) -> None:
    assert env(renders["default"])["FLEXPLANE_NAMESPACE"] == NAMESPACE
    assert named(renders["default"], "Role", f"{RELEASE}-flextenant")["metadata"]["namespace"] == NAMESPACE


def test_the_chart_generates_no_secret(rendered: list[Manifest]) -> None:
    # What a render would generate, the next render (a GitOps tool's, without a cluster) would make anew.
    assert "Secret" not in kinds(rendered)


def test_the_session_key_is_read_from_the_secret_given(renders: dict[str, list[Manifest]]) -> None:
    assert env(renders["default"])["FLEXPLANE_SECRET_KEY"]["secretKeyRef"] == {
        "name": "flexplane-secret-key",
        "key": "secret-key",
    }
    reference = env(renders["example"])["FLEXPLANE_SECRET_KEY"]["secretKeyRef"]
    assert reference == {"name": "flexplane-session", "key": "secret-key"}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("secretKey", r"secretKey\.existingSecret: .* create secret generic .*openssl rand"),
        ("agentCA", r"agentCA\.secretName: .*openssl req -x509 .* create secret tls"),
    ],
)
def test_an_install_without_a_secret_made_once_is_refused_with_the_command_that_makes_it(
    chart: helm_python.Chart, value: str, says: str
) -> None:
    values = {k: v for k, v in REQUIRED.items() if k != value}
    with pytest.raises(helm_python.HelmRenderError, match=says):
        render_exactly(chart, values)


def test_the_portal_client_secret_comes_from_a_secret(renders: dict[str, list[Manifest]]) -> None:
    assert "FLEXPLANE_OIDC_CLIENT_SECRET" not in env(renders["default"])
    reference = env(renders["example"])["FLEXPLANE_OIDC_CLIENT_SECRET"]
    assert reference == {"secretKeyRef": {"name": "flexplane-portal-oidc", "key": "client-secret"}}


def test_the_zitadel_service_users_key_is_mounted_read_only_where_the_settings_look(
    renders: dict[str, list[Manifest]],
) -> None:
    # The identity chart hands the key over in this Secret (its serviceUser.secret).
    rendered = renders["example"]
    mount, volume = kit.mounted(pod_spec(rendered), container(rendered), "zitadel-service-user")
    assert mount["readOnly"] is True
    assert volume["secret"]["secretName"] == "flexplane-zitadel-service-user"
    (item,) = volume["secret"]["items"]
    assert env(rendered)["FLEXPLANE_ZITADEL_KEY_FILE"] == f"{mount['mountPath']}/{item['path']}"


def test_without_a_service_user_no_key_is_mounted(renders: dict[str, list[Manifest]]) -> None:
    assert "FLEXPLANE_ZITADEL_KEY_FILE" not in env(renders["default"])
    assert "zitadel-service-user" not in {v["name"] for v in pod_spec(renders["default"])["volumes"]}


# --- enrollment and agent releases ------------------------------------------------------------


def test_the_orchestrator_signs_with_the_platform_ca_given(chart: helm_python.Chart) -> None:
    rendered = manifests(render(chart, {"agentCA": {"secretName": "our-ca"}}))
    assert env(rendered)["FLEXPLANE_AGENT_CA_SECRET"] == "our-ca"
    # It reads the CA live, in the platform namespace, where its Role lets it read Secrets.
    assert named(rendered, "Role", f"{RELEASE}-flextenant")["metadata"]["namespace"] == NAMESPACE


def test_nodes_enroll_through_the_ingress_over_https(renders: dict[str, list[Manifest]]) -> None:
    rendered = renders["example"]
    url = env(rendered)["FLEXPLANE_ENROLLMENT_URL"]
    assert url == "https://cloud.acme.example"
    host = url.removeprefix("https://")
    ingress = only(rendered, "Ingress")["spec"]
    assert any(host in tls["hosts"] for tls in ingress["tls"])
    (rule,) = [r for r in ingress["rules"] if r["host"] == host]
    service = only(rendered, "Service")["metadata"]["name"]
    for path in ("/enroll/v1/join", "/enroll/v1/renew", "/agent/releases/channel.json"):
        routes = [
            p for p in rule["http"]["paths"] if p["pathType"] == "Prefix" and path.startswith(p["path"])
        ]
        assert [r["backend"]["service"] for r in routes] == [{"name": service, "port": {"name": "http"}}]


def test_the_enrollment_url_defaults_to_the_first_https_ingress_host(chart: helm_python.Chart) -> None:
    def url(ingress: dict[str, Any]) -> str:
        return str(env(manifests(render(chart, {"ingress": ingress})))["FLEXPLANE_ENROLLMENT_URL"])

    hosts = ["*.acme.example", "cloud.acme.example"]
    assert url({"enabled": True, "hosts": hosts}) == "https://cloud.acme.example"
    assert url({"enabled": True, "hosts": hosts, "tls": {"enabled": False}}) == ""  # each request's own
    assert url({"enabled": False}) == ""


def test_the_agent_releases_are_mounted_read_only_where_the_channel_reads_them(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["example"]
    variables = env(rendered)
    mount, volume = kit.mounted(pod_spec(rendered), container(rendered), "agent-releases")
    assert mount["readOnly"] is True
    assert variables["FLEXPLANE_AGENT_RELEASES_DIR"] == mount["mountPath"]
    assert volume["configMap"] == {"name": "flexplane-agent-releases", "defaultMode": 0o444, "optional": True}
    key = serialization.load_pem_public_key(variables["FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY"].encode())
    assert type(key).__name__ == "Ed25519PublicKey"


def test_agent_releases_from_a_registry_take_its_account_from_a_secret_and_its_ca_mounted(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["example"]
    variables = env(rendered)
    assert variables["FLEXPLANE_AGENT_REGISTRY"] == "registry.acme.example/flexplane/agent-releases"
    for part, key in (("USERNAME", "username"), ("PASSWORD", "password")):
        reference = {"secretKeyRef": {"name": "flexplane-agent-registry", "key": key}}
        assert variables[f"FLEXPLANE_AGENT_REGISTRY_{part}"] == reference
    secret, files = kit.read_only_secret(pod_spec(rendered), container(rendered), "agent-registry-ca")
    assert secret == "acme-internal-ca"
    assert files == {variables["FLEXPLANE_AGENT_REGISTRY_CA"]}


def test_without_agent_releases_nodes_get_no_channel(renders: dict[str, list[Manifest]]) -> None:
    variables = env(renders["default"])
    assert "FLEXPLANE_AGENT_RELEASES_DIR" not in variables
    assert "FLEXPLANE_AGENT_RELEASE_PUBLIC_KEY" not in variables
    assert "agent-releases" not in {v["name"] for v in pod_spec(renders["default"])["volumes"]}


def test_agent_releases_without_a_public_key_are_refused(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"agentReleases\.publicKey"):
        render(chart, {"agentReleases": {"enabled": True}})


def test_autoscaling_leaves_the_replica_count_to_the_autoscaler(renders: dict[str, list[Manifest]]) -> None:
    deployment = component(renders["example"], "Deployment", "orchestrator")
    autoscaler = only(renders["example"], "HorizontalPodAutoscaler")
    assert "replicas" not in deployment["spec"]
    assert autoscaler["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]


def test_the_gateway_reconciler_runs_with_the_orchestrators_settings_files_and_hardening(
    rendered: list[Manifest],
) -> None:
    reconciler = component(rendered, "Deployment", "gateways")
    assert reconciler["spec"]["replicas"] == 1  # its changes are locked per VDC: more would repeat them
    spec, orchestrator = pod_spec(rendered, "gateways"), pod_spec(rendered)
    (container,) = spec["containers"]
    (app,) = [c for c in orchestrator["containers"] if c["name"] == "orchestrator"]
    assert container["command"] == ["python", "-m", "django", "reconcile_gateways"]
    assert container["args"] == ["--every=15", "--probes-listen=:8081"]
    assert container["image"] == app["image"]
    assert container["env"] == app["env"]
    assert container["volumeMounts"] == app["volumeMounts"]
    assert spec["volumes"] == orchestrator["volumes"]
    assert container["securityContext"] == app["securityContext"]
    assert spec["serviceAccountName"] == orchestrator["serviceAccountName"]
    # It serves nothing but its probes: ready once a first pass ended, alive while passes keep ending.
    assert container["ports"] == [{"name": "probes", "containerPort": 8081, "protocol": "TCP"}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}


def test_the_gateway_reconciler_can_be_left_out(chart: helm_python.Chart) -> None:
    rendered = manifests(render(chart, {"gatewayReconciler": {"enabled": False}}))
    labels = [m["metadata"]["labels"].get("app.kubernetes.io/component") for m in rendered]
    assert "gateways" not in labels
    assert "orchestrator" in labels


def test_a_reconciler_interval_that_is_not_positive_is_refused(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="every"):
        render(chart, {"gatewayReconciler": {"every": 0}})


# --- refusals ---------------------------------------------------------------------------------


def test_the_schema_refuses_a_replica_count_that_is_not_an_integer(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError) as refused:
        render(chart, {"replicaCount": "three"})
    assert "at '/replicaCount': got string, want integer" in str(refused.value)


def test_the_schema_refuses_an_unknown_top_level_key(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="additional properties 'replicas' not allowed"):
        render(chart, {"replicas": 3})


def test_a_restricted_egress_without_the_api_server_is_refused(chart: helm_python.Chart) -> None:
    policy = {"enabled": True, "egress": {"enabled": True}}
    with pytest.raises(helm_python.HelmRenderError, match=r"networkPolicy\.egress\.kubeAPI\.cidrs"):
        render(chart, {"networkPolicy": policy})
