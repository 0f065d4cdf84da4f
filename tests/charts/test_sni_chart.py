"""The providers chart's SNI router (``sni.enabled``, docs/kubernetes.md): off by default; on, one
Deployment of ``python -m providers.sni`` behind one Service on the port every SNI-mode control plane's
endpoint names, with probes, a read-only root, no secret, and a service account that may only list and
watch Services; the control-plane provider is given the same domain and port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest

from tests.charts import kit
from tests.charts.kit import Manifest, manifests

CHART = Path(__file__).resolve().parents[2] / "charts" / "providers"
REQUIRED: dict[str, Any] = {"secretKey": {"existingSecret": "flexplane-secret-key"}}
ON = {"sni": {"enabled": True, "domain": "k8s.example.com", "port": 7443}}


@pytest.fixture(scope="module")
def chart() -> Iterator[helm_python.Chart]:
    with helm_python.Chart.load(CHART) as loaded:
        yield loaded


def render(chart: helm_python.Chart, values: dict[str, Any]) -> list[Manifest]:
    templates = chart.render(kit.merged(REQUIRED, values), name="providers", namespace="flexplane")
    return manifests(templates)


def named(rendered: list[Manifest], kind: str) -> dict[str, Manifest]:
    return {m["metadata"]["name"]: m for m in rendered if m["kind"] == kind}


def test_the_router_is_off_by_default_and_the_provider_has_no_sni_domain(chart: helm_python.Chart) -> None:
    rendered = render(chart, {})
    assert list(named(rendered, "Deployment")) == ["providers"]
    (provider,) = named(rendered, "Deployment").values()
    env = kit.env_of(kit.sole_container(provider["spec"]["template"]["spec"]))
    assert "FLEXPLANE_PROVIDERS_SNI_DOMAIN" not in env


def test_the_router_runs_behind_one_service_on_the_endpoints_port(chart: helm_python.Chart) -> None:
    rendered = render(chart, ON)
    router = named(rendered, "Deployment")["providers-sni"]
    spec = router["spec"]["template"]["spec"]
    container = kit.sole_container(spec)
    assert container["command"] == ["python", "-m", "providers.sni"]
    env = kit.env_of(container)
    assert env["FLEXPLANE_SNI_LISTEN"] == ":8443"
    assert "FLEXPLANE_KUBECONFIG" not in env, "the in-cluster service account"
    assert not any("secret" in str(var).lower() for var in container["env"]), "the router holds no secret"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["serviceAccountName"] == "providers-sni"
    selector = router["spec"]["selector"]["matchLabels"]
    provider_selector = named(rendered, "Deployment")["providers"]["spec"]["selector"]["matchLabels"]
    assert selector != provider_selector, "neither Deployment adopts the other's pods"

    service = named(rendered, "Service")["providers-sni"]
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["ports"] == [{"name": "sni", "port": 7443, "targetPort": "sni", "protocol": "TCP"}]
    assert service["spec"]["selector"] == selector
    assert "providers-sni" in named(rendered, "PodDisruptionBudget")


def test_the_router_may_only_list_and_watch_services(chart: helm_python.Chart) -> None:
    rendered = render(chart, ON)
    role = named(rendered, "ClusterRole")["providers-sni"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]}]
    binding = named(rendered, "ClusterRoleBinding")["providers-sni"]
    (subject,) = binding["subjects"]
    assert subject == {"kind": "ServiceAccount", "name": "providers-sni", "namespace": "flexplane"}


def test_the_provider_makes_endpoints_under_the_routers_domain_and_port(chart: helm_python.Chart) -> None:
    provider = named(render(chart, ON), "Deployment")["providers"]
    env = kit.env_of(kit.sole_container(provider["spec"]["template"]["spec"]))
    assert env["FLEXPLANE_PROVIDERS_SNI_DOMAIN"] == "k8s.example.com"
    assert env["FLEXPLANE_PROVIDERS_SNI_PORT"] == "7443"


def test_the_router_needs_its_domain(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmError, match=r"sni\.domain"):
        render(chart, {"sni": {"enabled": True}})


def test_with_egress_restricted_the_router_reaches_the_api_and_the_control_planes_only(
    chart: helm_python.Chart,
) -> None:
    egress = {
        "enabled": True,
        "kubeAPI": {"cidrs": ["10.43.0.1/32"]},
        "agents": {"cidrs": ["10.20.0.0/24"]},
    }
    rendered = render(chart, {**ON, "networkPolicy": {"enabled": True, "egress": egress}})
    policy = named(rendered, "NetworkPolicy")["providers-sni"]
    assert policy["spec"]["ingress"] == [{"ports": [{"port": "sni", "protocol": "TCP"}]}]
    ports = [sorted(p["port"] for p in rule["ports"]) for rule in policy["spec"]["egress"]]
    assert ports == [[443, 6443], [6443, 8132]]
