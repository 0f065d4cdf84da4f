"""The flextenant chart's optional PrometheusRule: alerts before a certificate for the agents expires, and
when a renewed one cannot be read (issue 32, item 5)."""

from __future__ import annotations

import helm_python
import pytest

from tests.charts.kit import kinds, loaded
from tests.charts.test_flextenant_chart import CHART, NAMESPACE, RELEASE, Manifest, manifests, only, render

chart = loaded(CHART)
RULES = {"metrics": {"prometheusRule": {"enabled": True, "expiryDays": 10, "labels": {"release": "prom"}}}}


@pytest.fixture(scope="module")
def alerting(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render(chart, RULES))


def alerts(rendered: list[Manifest]) -> dict[str, Manifest]:
    (group,) = only(rendered, "PrometheusRule")["spec"]["groups"]
    return {rule["alert"]: rule for rule in group["rules"]}


def test_no_prometheus_rule_is_rendered_by_default(chart: helm_python.Chart) -> None:
    assert "PrometheusRule" not in kinds(manifests(render(chart, {})))


def test_the_rule_alerts_days_before_a_certificate_of_the_release_expires(alerting: list[Manifest]) -> None:
    rule = only(alerting, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["namespace"] == NAMESPACE
    assert rule["metadata"]["labels"]["release"] == "prom"
    expiring = alerts(alerting)["FlexplaneCertificateExpiresSoon"]
    assert expiring["expr"].strip() == (
        "min by (namespace, pod, certificate) "
        f'(flexplane_certificate_expiry_timestamp_seconds{{namespace="{NAMESPACE}"}}) - time() < 864000'
    )
    assert expiring["labels"] == {"severity": "warning"}
    # Prometheus's own templates reach it unrendered by Helm.
    assert "{{ $labels.pod }}" in expiring["annotations"]["summary"]
    assert f"{RELEASE}-flextenant-agent-tls" in expiring["annotations"]["description"]


def test_the_rule_alerts_when_a_renewed_certificate_cannot_be_read(alerting: list[Manifest]) -> None:
    failing = alerts(alerting)["FlexplaneCertificateReloadFailing"]
    assert failing["expr"].strip() == (
        f'increase(flexplane_certificate_reloads_total{{namespace="{NAMESPACE}", outcome="failed"}}[15m]) > 0'
    )


def test_no_rule_without_metrics_and_no_expiry_of_zero_days(chart: helm_python.Chart) -> None:
    without_metrics = {"metrics": {"enabled": False, "prometheusRule": {"enabled": True}}}
    assert "PrometheusRule" not in kinds(manifests(render(chart, without_metrics)))
    with pytest.raises(Exception, match="expiryDays"):
        render(chart, {"metrics": {"prometheusRule": {"enabled": True, "expiryDays": 0}}})
