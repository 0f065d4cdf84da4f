"""The flextenant chart's metrics: a port of their own, in the cluster only, an optional ServiceMonitor."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest

from tests.charts.kit import kinds, loaded
from tests.charts.test_flextenant_chart import (
    CHART,
    RELEASE,
    Manifest,
    container,
    env,
    invalid,
    manifests,
    named,
    only,
    render,
)

ORCHESTRATOR = f"{RELEASE}-flextenant"

MONITORED = {
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prom"}}},
    "networkPolicy": {"enabled": True},
    "ingress": {"enabled": True, "hosts": ["cloud.example.com"]},
}


chart = loaded(CHART)


@pytest.fixture(scope="module")
def default(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render(chart, {}))


@pytest.fixture(scope="module")
def monitored(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render(chart, MONITORED))


def ports(manifest: dict[str, Any]) -> dict[str, int]:
    return {port["name"]: port.get("containerPort", port.get("port")) for port in manifest["ports"]}


def test_the_server_serves_the_metrics_on_a_second_port_the_settings_name(default: list[Manifest]) -> None:
    app = container(default)
    assert ports(app) == {"http": 8000, "metrics": 9100}
    assert app["args"][app["args"].index("--metrics-port") + 1] == "9100"
    assert env(default)["FLEXPLANE_METRICS_PORT"] == "9100"


def test_the_service_has_a_metrics_port_and_the_ingress_routes_to_http_only(
    monitored: list[Manifest],
) -> None:
    service = named(monitored, "Service", ORCHESTRATOR)
    assert {p["name"]: p["targetPort"] for p in service["spec"]["ports"]} == {
        "http": "http",
        "metrics": "metrics",
    }
    backends = [
        path["backend"]["service"]["port"]
        for rule in only(monitored, "Ingress")["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    assert backends
    assert all(port == {"name": "http"} or port.get("number") == 80 for port in backends)


def test_the_network_policy_lets_only_the_cluster_scrape_the_metrics_port(monitored: list[Manifest]) -> None:
    rules = named(monitored, "NetworkPolicy", ORCHESTRATOR)["spec"]["ingress"]
    (metrics,) = [rule for rule in rules if rule["ports"][0]["port"] == "metrics"]
    assert metrics["from"] == [{"namespaceSelector": {}}]


def test_no_service_monitor_is_rendered_by_default(default: list[Manifest]) -> None:
    assert "ServiceMonitor" not in kinds(default)


def test_the_optional_service_monitor_scrapes_the_metrics_port(monitored: list[Manifest]) -> None:
    monitor = only(monitored, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint == {
        "port": "metrics",
        "path": "/metrics",
        "scheme": "http",
        "interval": "15s",
        "scrapeTimeout": "10s",
    }
    service = named(monitored, "Service", ORCHESTRATOR)
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert invalid([m for m in monitored if m["kind"] != "ServiceMonitor"]) == []


def test_without_metrics_no_port_is_opened_and_the_app_serves_none(chart: helm_python.Chart) -> None:
    rendered = manifests(render(chart, {"metrics": {"enabled": False, "serviceMonitor": {"enabled": True}}}))
    assert ports(container(rendered)) == {"http": 8000}
    assert env(rendered)["FLEXPLANE_METRICS_PORT"] == "0"
    assert "ServiceMonitor" not in kinds(rendered)


def test_a_metrics_port_equal_to_the_app_port_is_refused(chart: helm_python.Chart) -> None:
    with pytest.raises(Exception, match=r"metrics\.port must differ from server\.port"):
        render(chart, {"metrics": {"port": 8000}})
