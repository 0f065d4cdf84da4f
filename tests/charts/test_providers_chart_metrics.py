"""The providers chart's optional ServiceMonitor of the hosted control planes: off by default; on, it selects
the metrics Services the control-plane provider renders in each control plane's namespace
(providers/controlplane/render.py and etcd.py) and scrapes every metrics port of theirs, and only those."""

from __future__ import annotations

import functools
from typing import Any

import helm_python
import pytest

from providers.controlplane import etcd, model, monitoring, pki, render
from tests.charts import kit
from tests.charts.kit import Manifest, kinds, manifests
from tests.charts.test_providers_chart import CHART, NAMESPACE, RELEASE, REQUIRED, env
from tests.charts.test_providers_chart import render as render_chart
from tests.kubeschema import invalid

MONITORED = {
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prom"}}}
}
CP = model.ControlPlane("demo", "web", "v1.34.2", etcd_members=3)

chart = kit.loaded(CHART)


@pytest.fixture(scope="module")
def monitored(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render_chart(chart, MONITORED))


@pytest.fixture(scope="module")
def monitor(monitored: list[Manifest]) -> dict[str, Any]:
    (found,) = [m for m in monitored if m["kind"] == "ServiceMonitor"]
    return found


@functools.cache
def control_plane_services() -> list[Manifest]:
    """Every Service the provider renders in a control plane's namespace."""
    every = [render.render_service(CP), *render.management_manifests(CP, pki.ensure_pki({}, CP.names))]
    return [m for m in every if m["kind"] == "Service"]


def selects(monitor: dict[str, Any], service: Manifest) -> bool:
    """Whether the ServiceMonitor's selector (its matchExpressions, operator In) selects ``service``."""
    labels = service["metadata"].get("labels") or {}
    return all(
        labels.get(expression["key"]) in expression["values"]
        for expression in monitor["spec"]["selector"]["matchExpressions"]
        if expression["operator"] == "In"
    )


def test_the_chart_with_the_service_monitor_lints_without_errors_or_warnings() -> None:
    kit.assert_lints_clean(CHART, kit.merged(REQUIRED, MONITORED), NAMESPACE)


def test_no_service_monitor_is_rendered_by_default(chart: helm_python.Chart) -> None:
    assert "ServiceMonitor" not in kinds(manifests(render_chart(chart, {})))


def test_the_service_monitor_looks_in_every_namespace_with_the_values_interval_and_labels(
    monitored: list[Manifest], monitor: dict[str, Any]
) -> None:
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["name"] == f"{RELEASE}-providers-control-planes"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    assert {(e["interval"], e["scrapeTimeout"], e["path"]) for e in monitor["spec"]["endpoints"]} == {
        ("15s", "10s", "/metrics")
    }
    assert invalid([m for m in monitored if m["kind"] != "ServiceMonitor"]) == []


def test_it_selects_the_control_planes_two_metrics_services_and_not_their_api_server(
    monitor: dict[str, Any],
) -> None:
    selected = {s["metadata"]["name"] for s in control_plane_services() if selects(monitor, s)}

    assert selected == {model.METRICS_SERVICE, model.ETCD}


def test_it_scrapes_every_metrics_port_of_them_with_the_scheme_each_serves(monitor: dict[str, Any]) -> None:
    scraped = {e["port"]: (e["scheme"], e.get("tlsConfig")) for e in monitor["spec"]["endpoints"]}
    ports = {
        port["name"]: port["port"]
        for service in control_plane_services()
        if selects(monitor, service)
        for port in service["spec"]["ports"]
        if port["name"] not in ("client", "peer")  # etcd's own traffic, not metrics
    }

    assert ports == {
        "controller-manager": 10257,
        "scheduler": 10259,
        "konnectivity-metrics": model.KONNECTIVITY_HEALTH_PORT,
        "metrics": model.ETCD_METRICS_PORT,
    }
    unverified = {"insecureSkipVerify": True}  # each component's own self-made serving certificate
    assert scraped == {
        "controller-manager": ("https", unverified),
        "scheduler": ("https", unverified),
        "konnectivity-metrics": ("http", None),
        "metrics": ("http", None),
    }


def test_the_series_carry_the_vdc_and_the_cluster_from_the_services_labels(monitor: dict[str, Any]) -> None:
    service = next(s for s in control_plane_services() if s["metadata"]["name"] == model.METRICS_SERVICE)
    labels = service["metadata"]["labels"]

    assert {label: labels[label] for label in monitor["spec"]["targetLabels"]} == {
        "flexplane.io/vdc": "demo",
        "cluster.x-k8s.io/cluster-name": "web",
    }


def test_the_components_serve_metrics_where_the_services_send_the_scrapes() -> None:
    """The metrics Service's ports are the containers' (etcd's listens on its metrics port over HTTP), and
    the controller manager and scheduler let /metrics through without the tenant's authorization."""
    containers = {
        c["name"]: c for c in render.render_deployment(CP)["spec"]["template"]["spec"]["containers"]
    }
    served = {p["containerPort"] for c in containers.values() for p in c["ports"]}
    service = render.render_metrics_service(CP)

    assert {port["targetPort"] for port in service["spec"]["ports"]} <= served
    assert service["spec"]["selector"] == model.selector_labels(CP)
    for name in ("kube-controller-manager", "kube-scheduler"):
        assert render.ALWAYS_ALLOWED_PATHS in containers[name]["args"]
    assert "--listen-metrics-urls=http://0.0.0.0:2381" in etcd.etcd_args(CP)


def test_the_schema_refuses_a_scrape_interval_that_is_no_duration(chart: helm_python.Chart) -> None:
    with pytest.raises(Exception, match="interval"):
        render_chart(chart, {"metrics": {"serviceMonitor": {"enabled": True, "interval": "often"}}})


# --- each API server's own ServiceMonitor, which the control-plane provider writes -------------------------


def provider_settings(rendered: list[Manifest]) -> monitoring.ServiceMonitors:
    """What the control-plane provider makes of the chart's FLEXPLANE_PROVIDERS_SERVICE_MONITOR_*."""
    variables = env(rendered)
    return monitoring.ServiceMonitors.from_environment(
        {name: value for name, value in variables.items() if isinstance(value, str)}
    )


def test_off_the_provider_writes_no_service_monitor_of_any_api_server(chart: helm_python.Chart) -> None:
    rendered = manifests(render_chart(chart, {}))
    assert not [name for name in env(rendered) if name.startswith(monitoring.SETTINGS)]
    assert provider_settings(rendered) == monitoring.NO_SERVICE_MONITORS


def test_on_the_provider_writes_each_api_servers_with_the_values_interval_timeout_and_labels(
    monitored: list[Manifest],
) -> None:
    assert provider_settings(monitored) == monitoring.ServiceMonitors(
        enabled=True, interval="15s", scrape_timeout="10s", labels=(("release", "prom"),)
    )


def test_the_api_servers_service_monitors_match_the_charts(
    monitored: list[Manifest], monitor: dict[str, Any]
) -> None:
    """Their series carry the same labels, they are scraped as often, and a Prometheus that selects the
    chart's ServiceMonitor by its labels selects theirs too."""
    theirs = monitoring.render_service_monitor(CP, provider_settings(monitored))
    assert theirs["spec"]["targetLabels"] == monitor["spec"]["targetLabels"]
    (scrape,) = theirs["spec"]["endpoints"]
    assert {(e["interval"], e["scrapeTimeout"]) for e in monitor["spec"]["endpoints"]} == {
        (scrape["interval"], scrape["scrapeTimeout"])
    }
    assert {"release": "prom"}.items() <= theirs["metadata"]["labels"].items()
    assert {"release": "prom"}.items() <= monitor["metadata"]["labels"].items()
