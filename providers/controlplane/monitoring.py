"""The hosted API servers' own /metrics, for the Prometheus Operator: a ServiceMonitor per control plane.

The providers chart's ServiceMonitor scrapes the other components of every control plane (the
``control-plane-metrics`` and ``etcd`` Services, :func:`.render.render_metrics_service`), but not their API
servers: each accepts only client certificates of its own tenant cluster's CA, which no one ServiceMonitor
holds. So while the chart's ``metrics.serviceMonitor.enabled`` is on
(``FLEXPLANE_PROVIDERS_SERVICE_MONITOR_*``, :class:`ServiceMonitors`), the control-plane provider writes two
objects named ``apiserver-metrics`` in each control plane's namespace ``fpcp-<vdc>-<cluster>``:

- a Secret (``kubernetes.io/tls``) of the scraper's credentials: ``ca.crt``, the cluster's CA, and ``tls.crt``
  and ``tls.key``, the PKI's ``metrics-scraper`` client certificate (user ``flexplane:metrics``, no group,
  :data:`.pki.METRICS_SCRAPER`), which the tenant binds to ``get`` on /metrics and nothing else
  (:func:`.tenant.metrics_rbac`);
- a ServiceMonitor (``monitoring.coreos.com/v1``) that scrapes the ``kube-apiserver`` Service's ``https``
  port at /metrics with them (its ``tlsConfig`` names the Secret's three keys), verifying the server too:
  against the cluster's CA, for ``kube-apiserver.<namespace>.svc``, a name the serving certificate carries
  whatever the endpoint (:attr:`.pki.Names.service_names`). Its series carry the VDC and the cluster as the
  chart's do (:data:`TARGET_LABELS`), and it carries the chart's ``metrics.serviceMonitor.labels``, by
  which a Prometheus selects monitors.

The certificate is one of the PKI's leaves, renewed with them (:func:`.pki.ensure_pki`); the Secret is
rendered from the PKI at each reconcile, so it follows, and the Prometheus Operator reloads a Secret a
ServiceMonitor names. Off, neither is written (a management cluster without the Prometheus Operator's CRDs
is never asked to store one) and those written before are removed; deleting the cluster takes both with
its namespace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.sources.kube_objects import CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, VDC_LABEL
from providers.controlplane.model import SERVICE, ControlPlane, Manifest, b64, labels, meta

API_VERSION = "monitoring.coreos.com/v1"
KIND = "ServiceMonitor"
NAME = "apiserver-metrics"  # the Secret's and the ServiceMonitor's
SETTINGS = "FLEXPLANE_PROVIDERS_SERVICE_MONITOR_"
# The Secret's keys, as the Prometheus Operator's SafeTLSConfig references them.
CA_KEY, CERT_KEY, KEY_KEY = "ca.crt", "tls.crt", "tls.key"
# The Service labels each series takes, as the providers chart's ServiceMonitor's targetLabels.
TARGET_LABELS = (VDC_LABEL, CLUSTER_NAME_LABEL)
# Prometheus' durations as the providers chart's schema takes them (e.g. 30s, 1m30s).
DURATION = re.compile(r"^([0-9]+(ms|s|m|h))+$")
_DURATION_PART = re.compile(r"([0-9]+)(ms|s|m|h)")
_MILLISECONDS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
# A label's name (an optional DNS subdomain prefix and a name) and value, as Kubernetes takes them.
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}$")
LABEL_VALUE = re.compile(rf"^({_LABEL_NAME})?$")


def milliseconds(duration: str) -> int:
    """A Prometheus duration (:data:`DURATION`) in milliseconds."""
    return sum(int(n) * _MILLISECONDS[unit] for n, unit in _DURATION_PART.findall(duration))


@dataclass(frozen=True)
class ServiceMonitors:
    """Whether the provider writes each control plane's ServiceMonitor, and how it scrapes: the providers
    chart's ``metrics.serviceMonitor`` (FLEXPLANE_PROVIDERS_SERVICE_MONITOR_*). Off: none anywhere."""

    enabled: bool = False
    interval: str = "30s"
    scrape_timeout: str = "10s"
    labels: tuple[tuple[str, str], ...] = ()  # on each ServiceMonitor, e.g. (("release", "prom"),)

    def __post_init__(self) -> None:
        for name, value in (("INTERVAL", self.interval), ("SCRAPE_TIMEOUT", self.scrape_timeout)):
            if not DURATION.match(value):
                raise ValueError(f"{SETTINGS}{name} must be a duration such as 30s or 1m30s, not {value!r}")
        if milliseconds(self.scrape_timeout) > milliseconds(self.interval):
            raise ValueError(
                f"{SETTINGS}SCRAPE_TIMEOUT ({self.scrape_timeout}) must be at most {SETTINGS}INTERVAL "
                f"({self.interval}): Prometheus refuses a scrape that outlasts its interval"
            )
        for key, value in self.labels:
            if not LABEL_KEY.match(key) or not LABEL_VALUE.match(value):
                raise ValueError(f"{SETTINGS}LABELS: {key}={value!r} is no Kubernetes label")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> ServiceMonitors:
        """From FLEXPLANE_PROVIDERS_SERVICE_MONITOR_*: ``ENABLED`` (true or false; unset: false),
        ``INTERVAL`` (30s), ``SCRAPE_TIMEOUT`` (10s), ``LABELS`` (a JSON object of strings); ValueError
        naming what is wrong."""

        def setting(name: str, default: str = "") -> str:
            return environ.get(f"{SETTINGS}{name}", "").strip() or default

        enabled = setting("ENABLED", "false").lower()
        if enabled not in ("true", "false"):
            raise ValueError(f"{SETTINGS}ENABLED must be true or false, not {enabled!r}")
        return cls(
            enabled=enabled == "true",
            interval=setting("INTERVAL", cls.interval),
            scrape_timeout=setting("SCRAPE_TIMEOUT", cls.scrape_timeout),
            labels=_labels(setting("LABELS", "{}")),
        )


NO_SERVICE_MONITORS = ServiceMonitors()


def _labels(text: str) -> tuple[tuple[str, str], ...]:
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict) or not all(isinstance(v, str) for v in decoded.values()):
        raise ValueError(f'{SETTINGS}LABELS must be a JSON object of strings, e.g. {{"release": "prom"}}')
    return tuple(sorted(decoded.items()))


def server_name(cp: ControlPlane) -> str:
    """The name the scrape verifies the API server's certificate for: its Service's in this cluster, which
    the serving certificate carries (:attr:`.pki.Names.service_names`) and which names the pods scraped."""
    return f"{SERVICE}.{cp.namespace}.svc"


def render_scraper_secret(cp: ControlPlane, files: Mapping[str, bytes]) -> Manifest:
    """The ``apiserver-metrics`` Secret: the cluster's CA and the ``metrics-scraper`` certificate and key."""
    data = {
        CA_KEY: files["ca.crt"],
        CERT_KEY: files["metrics-scraper.crt"],
        KEY_KEY: files["metrics-scraper.key"],
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": meta(cp, NAME),
        "data": {key: b64(value) for key, value in data.items()},
    }


def _secret_key(key: str) -> dict[str, Any]:
    return {"secret": {"name": NAME, "key": key}}


def render_service_monitor(cp: ControlPlane, monitors: ServiceMonitors) -> Manifest:
    """The ``apiserver-metrics`` ServiceMonitor: the ``kube-apiserver`` Service's ``https`` port (the API
    server pods' secure port), /metrics, over TLS verified both ways with the Secret's credentials."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": NAME,
            "namespace": cp.namespace,
            "labels": {**dict(monitors.labels), **labels(cp)},
        },
        "spec": {
            "namespaceSelector": {"matchNames": [cp.namespace]},
            "selector": {"matchLabels": {CONTROL_PLANE_LABEL: cp.cluster}},
            "targetLabels": list(TARGET_LABELS),
            "endpoints": [
                {
                    "port": "https",
                    "scheme": "https",
                    "path": "/metrics",
                    "interval": monitors.interval,
                    "scrapeTimeout": monitors.scrape_timeout,
                    "tlsConfig": {
                        "ca": _secret_key(CA_KEY),
                        "cert": _secret_key(CERT_KEY),
                        "keySecret": {"name": NAME, "key": KEY_KEY},
                        "serverName": server_name(cp),
                    },
                    # The API server's Service only: the namespace's other Services (the metrics Services,
                    # which the chart's ServiceMonitor scrapes) carry the same labels.
                    "relabelings": [
                        {
                            "sourceLabels": ["__meta_kubernetes_service_name"],
                            "regex": SERVICE,
                            "action": "keep",
                        }
                    ],
                }
            ],
        },
    }


def render_apiserver_metrics(
    cp: ControlPlane, files: Mapping[str, bytes], monitors: ServiceMonitors
) -> list[Manifest]:
    """The ServiceMonitor and its Secret, in the order to write them (the ServiceMonitor first: were its
    kind not served, nothing is written)."""
    return [render_service_monitor(cp, monitors), render_scraper_secret(cp, files)]
