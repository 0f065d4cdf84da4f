"""The providers chart's own metrics (issue 32): the metrics port python -m providers serves /metrics on, the
NetworkPolicy's one ingress rule, the optional PodMonitor and PrometheusRule alerting on the providers'
certificate for the agents, rendered with the ``--set`` flags the chart's README shows."""

from __future__ import annotations

import itertools
import re
import shlex
from typing import Any

import helm_python
import pytest

from tests.charts import kit
from tests.charts.kit import Manifest, kinds, manifests
from tests.charts.test_providers_chart import CHART, NAMESPACE, RELEASE, REQUIRED, container, env, only
from tests.charts.test_providers_chart import render as render_chart
from tests.kubeschema import invalid

chart = kit.loaded(CHART)
README = CHART / "README.md"
SCOPE = f'namespace="{NAMESPACE}", pod=~"{RELEASE}-providers-[a-z0-9]+-[a-z0-9]+"'


def readme_values() -> dict[str, Any]:
    """The values of the README's ``helm install`` command that turns the monitor and the rule on."""
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    (command,) = [block for block in blocks if "metrics.prometheusRule.enabled" in block]
    words = shlex.split(command.replace("\\\n", " "))
    values: dict[str, Any] = {}
    for flag, setting in itertools.pairwise(words):
        if flag != "--set":
            continue
        path, _, value = setting.partition("=")
        *parents, leaf = path.split(".")
        node = values
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = {"true": True, "false": False}.get(value, value)
    return values


@pytest.fixture(scope="module")
def monitored(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render_chart(chart, readme_values()))


def alerts(rendered: list[Manifest]) -> dict[str, Manifest]:
    (group,) = only(rendered, "PrometheusRule")["spec"]["groups"]
    return {rule["alert"]: rule for rule in group["rules"]}


def test_the_readme_turns_on_the_pod_monitor_and_the_rule() -> None:
    assert readme_values()["metrics"] == {
        "podMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
    }


def test_the_chart_with_the_readmes_values_lints_clean_and_validates(monitored: list[Manifest]) -> None:
    kit.assert_lints_clean(CHART, kit.merged(REQUIRED, readme_values()), NAMESPACE)
    assert invalid([m for m in monitored if m["kind"] not in {"PodMonitor", "PrometheusRule"}]) == []


def test_the_providers_serve_metrics_on_a_port_of_their_own_by_default(chart: helm_python.Chart) -> None:
    rendered = manifests(render_chart(chart, {}))
    ports = {port["name"]: port["containerPort"] for port in container(rendered)["ports"]}
    assert ports == {"probes": 8081, "metrics": 9100}
    assert env(rendered)["FLEXPLANE_METRICS_LISTEN"] == ":9100"
    assert {"PodMonitor", "PrometheusRule"}.isdisjoint(kinds(rendered))
    (ingress,) = only(rendered, "NetworkPolicy")["spec"]["ingress"]
    assert ingress == {"ports": [{"port": "metrics", "protocol": "TCP"}], "from": [{"namespaceSelector": {}}]}


def test_without_metrics_there_is_no_port_no_ingress_no_monitor_and_no_rule(chart: helm_python.Chart) -> None:
    values = {
        "metrics": {"enabled": False, "podMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}
    }
    rendered = manifests(render_chart(chart, values))
    assert [port["name"] for port in container(rendered)["ports"]] == ["probes"]
    assert "FLEXPLANE_METRICS_LISTEN" not in env(rendered)
    assert only(rendered, "NetworkPolicy")["spec"]["ingress"] == []
    assert {"PodMonitor", "PrometheusRule"}.isdisjoint(kinds(rendered))


def test_the_metrics_port_and_its_scrapers_follow_the_values(chart: helm_python.Chart) -> None:
    scrapers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    rendered = manifests(render_chart(chart, {"metrics": {"port": 9200, "scrapeFrom": scrapers}}))
    assert {"name": "metrics", "containerPort": 9200, "protocol": "TCP"} in container(rendered)["ports"]
    assert env(rendered)["FLEXPLANE_METRICS_LISTEN"] == ":9200"
    (ingress,) = only(rendered, "NetworkPolicy")["spec"]["ingress"]
    assert ingress["from"] == scrapers


def test_the_pod_monitor_scrapes_every_providers_pods_metrics_port(monitored: list[Manifest]) -> None:
    monitor = only(monitored, "PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["name"] == f"{RELEASE}-providers"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    pods = only(monitored, "Deployment", f"{RELEASE}-providers")["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pods.items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert monitor["spec"]["podMetricsEndpoints"] == [
        {"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "30s", "scrapeTimeout": "10s"}
    ]


def test_the_rule_alerts_days_before_the_providers_certificate_expires(monitored: list[Manifest]) -> None:
    rule = only(monitored, "PrometheusRule")
    assert (rule["metadata"]["name"], rule["metadata"]["namespace"]) == (f"{RELEASE}-providers", NAMESPACE)
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    expiring = alerts(monitored)["FlexplaneProvidersCertificateExpiresSoon"]
    assert expiring["expr"].strip() == (
        f"min by (namespace, pod, certificate) (flexplane_certificate_expiry_timestamp_seconds{{{SCOPE}}})"
        " - time() < 1209600"
    )
    assert expiring["labels"] == {"severity": "warning"}
    assert "{{ $labels.pod }}" in expiring["annotations"]["summary"]
    assert "flexplane-capi-agent-tls" in expiring["annotations"]["description"]


def test_the_rule_alerts_when_a_renewed_certificate_cannot_be_read(monitored: list[Manifest]) -> None:
    failing = alerts(monitored)["FlexplaneProvidersCertificateReloadFailing"]
    assert failing["expr"].strip() == (
        f'increase(flexplane_certificate_reloads_total{{{SCOPE}, outcome="failed"}}[15m]) > 0'
    )


def test_the_rules_pod_pattern_matches_the_providers_pods_and_not_the_orchestrators() -> None:
    pattern = re.compile(f"{RELEASE}-providers-[a-z0-9]+-[a-z0-9]+")
    assert pattern.fullmatch(f"{RELEASE}-providers-7d9f8b6c5d-x2k4q")
    assert not pattern.fullmatch(f"{RELEASE}-flextenant-7d9f8b6c5d-x2k4q")
    assert not pattern.fullmatch(f"{RELEASE}-providers-sni-7d9f8b6c5d-x2k4q")


def test_the_schema_refuses_an_expiry_of_zero_days(chart: helm_python.Chart) -> None:
    with pytest.raises(Exception, match="expiryDays"):
        render_chart(chart, {"metrics": {"prometheusRule": {"enabled": True, "expiryDays": 0}}})
