"""The hosted API server's own /metrics (providers/controlplane/monitoring.py): the scraper's certificate and
Secret, the tenant's grant of /metrics, the ServiceMonitor, the step that writes them only while the setting
is on (against the devstack's Kubernetes emulator as the management cluster), and a scrape over real mutual
TLS with what that ServiceMonitor names."""

from __future__ import annotations

import base64
import contextlib
import datetime
import http.server
import queue
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import kopf
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from devstack.kube import KubeServer
from devstack.kube.crds import custom_resource_definition
from providers.controlplane import handlers, model, monitoring, pki, render, steps, tenant
from providers.controlplane.kube import Kube, path_of
from tests import addresses
from tests.kubeschema import invalid

CP = model.ControlPlane(vdc="demo", cluster="web", version="v1.34.2", endpoint_host="10.20.0.7")
OTHER = model.ControlPlane(vdc="demo", cluster="api", version="v1.34.2", endpoint_host="10.20.0.8")
CP_NS = "fpcp-demo-web"
MONITORS = monitoring.ServiceMonitors(
    enabled=True, interval="15s", scrape_timeout="10s", labels=(("release", "prom"),)
)
SERVICE_MONITOR_CRD = custom_resource_definition(
    "monitoring.coreos.com", "ServiceMonitor", "servicemonitors", status=False
)
SCRAPER = ("flexplane:metrics", ["system:authenticated"])  # the user and groups the certificate makes


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return pki.ensure_pki({}, CP.names)


def certificate(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def secret_files(secret: Mapping[str, Any]) -> dict[str, bytes]:
    return {key: base64.b64decode(value) for key, value in secret["data"].items()}


def endpoint(monitor: Mapping[str, Any]) -> dict[str, Any]:
    (only,) = monitor["spec"]["endpoints"]
    return dict(only)


def tls_values(monitor: Mapping[str, Any], secret: Mapping[str, Any]) -> tuple[bytes, bytes, bytes, str]:
    """What the Prometheus Operator gives Prometheus for the scrape: the CA, the client certificate and its
    key, each read from the Secret and key the ServiceMonitor's tlsConfig names, and the server name."""
    tls = endpoint(monitor)["tlsConfig"]
    data = secret_files(secret)

    def read(ref: Mapping[str, str]) -> bytes:
        assert ref["name"] == secret["metadata"]["name"]
        return data[ref["key"]]

    return read(tls["ca"]["secret"]), read(tls["cert"]["secret"]), read(tls["keySecret"]), tls["serverName"]


def bound_rules(manifests: list[dict[str, Any]], user: str, groups: list[str]) -> list[dict[str, Any]]:
    """Every rule the tenant's objects grant ``user`` (in ``groups``), through any binding: RBAC adds rules
    only, so these and Kubernetes' own default grants to its groups are all it may do."""
    roles = {
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m
        for m in manifests
        if m["kind"] in ("Role", "ClusterRole")
    }
    rules = []
    for binding in manifests:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(
            (s["kind"], s["name"]) in {("User", user), *(("Group", g) for g in groups)}
            for s in binding["subjects"]
        ):
            continue
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        rules.extend(roles[ref["kind"], namespace, ref["name"]]["rules"])
    return rules


# ------------------------------------------------------------------------------------ settings


def test_without_the_setting_no_service_monitor_is_written() -> None:
    assert monitoring.ServiceMonitors.from_environment({}) == monitoring.NO_SERVICE_MONITORS
    assert not monitoring.NO_SERVICE_MONITORS.enabled


def test_the_settings_come_from_the_environment() -> None:
    monitors = monitoring.ServiceMonitors.from_environment(
        {
            "FLEXPLANE_PROVIDERS_SERVICE_MONITOR_ENABLED": "true",
            "FLEXPLANE_PROVIDERS_SERVICE_MONITOR_INTERVAL": "1m30s",
            "FLEXPLANE_PROVIDERS_SERVICE_MONITOR_SCRAPE_TIMEOUT": "20s",
            "FLEXPLANE_PROVIDERS_SERVICE_MONITOR_LABELS": '{"release": "prom", "team": "platform"}',
        }
    )
    assert monitors == monitoring.ServiceMonitors(
        enabled=True,
        interval="1m30s",
        scrape_timeout="20s",
        labels=(("release", "prom"), ("team", "platform")),
    )


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"ENABLED": "yes"}, "SERVICE_MONITOR_ENABLED"),
        ({"ENABLED": "true", "INTERVAL": "often"}, "SERVICE_MONITOR_INTERVAL"),
        ({"ENABLED": "true", "SCRAPE_TIMEOUT": "10"}, "SERVICE_MONITOR_SCRAPE_TIMEOUT"),
        ({"ENABLED": "true", "INTERVAL": "10s", "SCRAPE_TIMEOUT": "1m"}, "SERVICE_MONITOR_SCRAPE_TIMEOUT"),
        ({"ENABLED": "true", "LABELS": '["release"]'}, "SERVICE_MONITOR_LABELS"),
        ({"ENABLED": "true", "LABELS": '{"release": 1}'}, "SERVICE_MONITOR_LABELS"),
        ({"ENABLED": "true", "LABELS": '{"bad key!": "x"}'}, "SERVICE_MONITOR_LABELS"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_by_name(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        monitoring.ServiceMonitors.from_environment(
            {f"FLEXPLANE_PROVIDERS_SERVICE_MONITOR_{name}": value for name, value in environ.items()}
        )


def test_the_provider_takes_them_at_each_reconcile_and_stops_on_one_that_cannot_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_SERVICE_MONITOR_ENABLED", "true")
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_SERVICE_MONITOR_LABELS", "release=prom")
    with pytest.raises(kopf.PermanentError, match="FLEXPLANE_PROVIDERS_SERVICE_MONITOR_LABELS"):
        handlers.settings()
    monkeypatch.setenv("FLEXPLANE_PROVIDERS_SERVICE_MONITOR_LABELS", '{"release": "prom"}')
    assert handlers.settings().service_monitors == monitoring.ServiceMonitors(
        enabled=True, labels=(("release", "prom"),)
    )


# ------------------------------------------------------------------------------------ the certificate


def test_the_scrapers_certificate_is_a_client_certificate_of_the_clusters_ca_for_its_user_alone(
    files: dict[str, bytes], tmp_path: Path
) -> None:
    secret = monitoring.render_scraper_secret(CP, files)
    data = secret_files(secret)
    assert data["ca.crt"] == files["ca.crt"]
    cert, ca = certificate(data["tls.crt"]), certificate(data["ca.crt"])
    cert.verify_directly_issued_by(ca)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "flexplane:metrics"
    assert not cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)  # no group, no system:masters
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for name, content in data.items():
        (tmp_path / name).write_bytes(content)
    # The key is the certificate's (OpenSSL refuses a pair whose halves do not match).
    ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    # openssl's verify, as test_pki's of every client certificate: chained to the CA, fit for client auth.
    verified = subprocess.run(
        ["openssl", "verify", "-purpose", "sslclient", "-CAfile", tmp_path / "ca.crt", tmp_path / "tls.crt"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_secret_holds_the_keys_a_safe_tls_config_names_and_validates(files: dict[str, bytes]) -> None:
    secret = monitoring.render_scraper_secret(CP, files)
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == ("apiserver-metrics", CP_NS)
    assert secret["type"] == "kubernetes.io/tls"
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert secret["metadata"]["labels"] == model.labels(CP)
    assert invalid([secret, *tenant.metrics_rbac()]) == []


def test_a_certificate_near_its_expiry_is_renewed_with_the_pki_and_the_secret_follows(
    files: dict[str, bytes],
) -> None:
    before = certificate(files["metrics-scraper.crt"])
    later = before.not_valid_after_utc - pki.RENEW_BEFORE + datetime.timedelta(days=1)
    renewed = pki.ensure_pki(files, CP.names, at=later)
    after = certificate(renewed["metrics-scraper.crt"])
    assert after.not_valid_after_utc > before.not_valid_after_utc
    assert (
        secret_files(monitoring.render_scraper_secret(CP, renewed))["tls.crt"]
        == renewed["metrics-scraper.crt"]
    )
    assert pki.ensure_pki(files, CP.names)["metrics-scraper.crt"] == files["metrics-scraper.crt"]  # kept


# ------------------------------------------------------------------------------------ the tenant's grant


def test_the_tenant_grants_the_scraper_get_on_metrics_and_nothing_else(files: dict[str, bytes]) -> None:
    manifests = tenant.tenant_manifests(CP, files["ca.crt"])
    role, binding = tenant.metrics_rbac()
    assert role in manifests
    assert binding in manifests
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "flexplane:metrics"}
    ]
    assert bound_rules(manifests, *SCRAPER) == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


# ------------------------------------------------------------------------------------ the ServiceMonitor


def test_the_service_monitor_scrapes_the_api_servers_service_at_metrics_over_https(
    files: dict[str, bytes],
) -> None:
    monitor = monitoring.render_service_monitor(CP, MONITORS)
    assert (monitor["apiVersion"], monitor["kind"]) == ("monitoring.coreos.com/v1", "ServiceMonitor")
    assert (monitor["metadata"]["name"], monitor["metadata"]["namespace"]) == ("apiserver-metrics", CP_NS)
    assert monitor["metadata"]["labels"] == {"release": "prom", **model.labels(CP)}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [CP_NS]}
    scrape = endpoint(monitor)
    assert (scrape["port"], scrape["scheme"], scrape["path"]) == ("https", "https", "/metrics")
    assert (scrape["interval"], scrape["scrapeTimeout"]) == ("15s", "10s")
    assert "insecureSkipVerify" not in scrape["tlsConfig"]
    assert "bearerTokenSecret" not in scrape  # the certificate is the only credential


def services(cp: model.ControlPlane) -> list[dict[str, Any]]:
    every = [render.render_service(cp), *render.management_manifests(cp, pki.ensure_pki({}, cp.names))]
    return [m for m in every if m["kind"] == "Service"]


def scraped(monitor: Mapping[str, Any], service: Mapping[str, Any]) -> list[int]:
    """The ports of ``service`` that ``monitor`` scrapes: its selector (matchLabels), the endpoint's port
    name and its keep relabeling on the Service's name, as Prometheus applies them."""
    labels = service["metadata"].get("labels") or {}
    if not all(labels.get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items()):
        return []
    scrape = endpoint(monitor)
    for relabel in scrape["relabelings"]:
        assert relabel["action"] == "keep"
        assert relabel["sourceLabels"] == ["__meta_kubernetes_service_name"]
        if relabel["regex"] != service["metadata"]["name"]:
            return []
    return [p["targetPort"] for p in service["spec"]["ports"] if p["name"] == scrape["port"]]


@pytest.mark.parametrize("service_type", ["LoadBalancer", "NodePort", "SNI"])
def test_it_takes_the_api_servers_port_and_no_other_service_of_the_namespace(service_type: str) -> None:
    cp = model.ControlPlane(
        "demo", "web", "v1.34.2", service_type=service_type, endpoint_host="10.20.0.7", endpoint_port=31443
    )
    monitor = monitoring.render_service_monitor(cp, MONITORS)
    found = {s["metadata"]["name"]: scraped(monitor, s) for s in services(cp)}
    assert {name: ports for name, ports in found.items() if ports} == {"kube-apiserver": [cp.secure_port]}
    (apiserver,) = [
        c
        for c in render.render_deployment(cp)["spec"]["template"]["spec"]["containers"]
        if c["name"] == "kube-apiserver"
    ]
    assert apiserver["ports"] == [{"name": "https", "containerPort": cp.secure_port, "protocol": "TCP"}]


def test_its_series_carry_the_vdc_and_cluster_from_the_services_labels() -> None:
    monitor = monitoring.render_service_monitor(CP, MONITORS)
    service = render.render_service(CP)
    assert {label: service["metadata"]["labels"][label] for label in monitor["spec"]["targetLabels"]} == {
        "flexplane.io/vdc": "demo",
        "cluster.x-k8s.io/cluster-name": "web",
    }


def test_its_tls_config_names_the_secret_and_a_name_the_serving_certificate_carries(
    files: dict[str, bytes],
) -> None:
    monitor = monitoring.render_service_monitor(CP, MONITORS)
    ca, cert, _, server_name = tls_values(monitor, monitoring.render_scraper_secret(CP, files))
    assert ca == files["ca.crt"]
    assert cert == files["metrics-scraper.crt"]
    assert server_name == "kube-apiserver.fpcp-demo-web.svc"
    dns, _ = pki.san_names(certificate(files["apiserver.crt"]))
    assert server_name in dns


# ------------------------------------------------------------------------------------ the step


def ensure(kube: Kube, files: Mapping[str, bytes], monitors: monitoring.ServiceMonitors = MONITORS) -> bool:
    return steps.ensure_apiserver_metrics(kube, CP, files, monitors)


def ours(kube: Kube) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    return (
        kube.get("monitoring.coreos.com/v1", "ServiceMonitor", "apiserver-metrics", CP_NS),
        kube.get("v1", "Secret", "apiserver-metrics", CP_NS),
    )


def requests_to(server: KubeServer, since: int, plural: str) -> list[str]:
    return [r.method.value for r in list(server.emulator)[since:] if f"/{plural}" in r.url.path]


def test_off_nothing_is_asked_of_a_cluster_without_the_prometheus_operator(
    server: KubeServer, kube: Kube, files: dict[str, bytes]
) -> None:
    kube.ensure(render.render_namespace(CP))
    since = len(list(server.emulator))
    assert ensure(kube, files, monitoring.NO_SERVICE_MONITORS) is False
    assert requests_to(server, since, "servicemonitors") == ["GET"]  # whether one is left to delete
    assert requests_to(server, since, "secrets") == []
    assert kube.get("v1", "Secret", "apiserver-metrics", CP_NS) is None


def test_on_without_the_kind_installed_the_step_says_so_and_writes_nothing(
    kube: Kube, files: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    assert ensure(kube, files) is False
    assert "apiserver-metrics" in caplog.text
    assert "404" in caplog.text
    assert kube.get("v1", "Secret", "apiserver-metrics", CP_NS) is None


def test_on_it_writes_the_service_monitor_and_its_secret(
    server: KubeServer, kube: Kube, files: dict[str, bytes]
) -> None:
    server.install_crds([SERVICE_MONITOR_CRD])
    assert ensure(kube, files) is True
    monitor, secret = ours(kube)
    assert monitor is not None
    assert secret is not None
    assert monitor["spec"] == monitoring.render_service_monitor(CP, MONITORS)["spec"]
    assert secret_files(secret)["tls.crt"] == files["metrics-scraper.crt"]


def test_a_second_pass_writes_nothing(server: KubeServer, kube: Kube, files: dict[str, bytes]) -> None:
    before = server.emulator.revision
    assert ensure(kube, files) is True
    assert server.emulator.revision == before


def test_a_renewed_certificate_reaches_the_secret(kube: Kube, files: dict[str, bytes]) -> None:
    later = certificate(files["metrics-scraper.crt"]).not_valid_after_utc - datetime.timedelta(days=30)
    renewed = pki.ensure_pki(files, CP.names, at=later)
    ensure(kube, renewed)
    _, secret = ours(kube)
    assert secret is not None
    assert secret_files(secret)["tls.crt"] == renewed["metrics-scraper.crt"] != files["metrics-scraper.crt"]


def test_turned_off_it_deletes_both(kube: Kube, files: dict[str, bytes]) -> None:
    assert ensure(kube, files, monitoring.NO_SERVICE_MONITORS) is False
    assert ours(kube) == (None, None)


def test_deleting_the_cluster_takes_them_with_its_namespace(kube: Kube, files: dict[str, bytes]) -> None:
    ensure(kube, files)
    assert ours(kube) != (None, None)
    fcp = {
        "metadata": {
            "name": "web",
            "namespace": "vdc-demo",
            "ownerReferences": [{"kind": "Cluster", "name": "web"}],
        }
    }
    assert steps.delete(kube, fcp, steps.Settings(service_monitors=MONITORS))
    assert ours(kube) == (None, None)
    assert kube.get("v1", "Namespace", CP_NS) is None
    listed = kube.request("GET", path_of("monitoring.coreos.com/v1", "ServiceMonitor", None, CP_NS))
    assert listed is not None
    assert listed["items"] == []


# ------------------------------------------------------------------------------------ a scrape over TLS


class Metrics(http.server.BaseHTTPRequestHandler):
    """An API server's /metrics as far as a scrape sees it: its serving certificate, client certificates of
    its cluster's CA only (the TLS layer refuses any other), then the tenant's RBAC for the certificate's
    user and groups."""

    server: MetricsServer

    def do_GET(self) -> None:
        assert isinstance(self.connection, ssl.SSLSocket)
        der = self.connection.getpeercert(binary_form=True)  # verified against the CA by the handshake
        assert der is not None
        subject = x509.load_der_x509_certificate(der).subject
        user = str(subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)
        groups = [str(o.value) for o in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        groups.append("system:authenticated")
        allowed = any(
            self.path in rule.get("nonResourceURLs", ()) and "get" in rule["verbs"]
            for rule in bound_rules(self.server.tenant, user, groups)
        )
        body = b"apiserver_request_total 1\n" if allowed else b"forbidden\n"
        self.send_response(200 if allowed else 403)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class MetricsServer(http.server.ThreadingHTTPServer):
    """Each connection's TLS handshake on accepting it; why it refused one, told to ``refusals`` (the client
    may see only its connection closed, before the server has said why)."""

    tenant: list[dict[str, Any]]
    refusals: queue.Queue[str]

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, client = super().get_request()
        try:
            connection.do_handshake()  # type: ignore[attr-defined]
        except ssl.SSLError as error:
            self.refusals.put(str(error))
            connection.close()
            raise  # an OSError: socketserver drops the connection and serves on
        return connection, client


@pytest.fixture(scope="module")
def apiserver(files: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsServer]:
    """The API server's TLS as kube-apiserver runs it (--tls-cert-file, --client-ca-file), with the PKI the
    provider made, on an address of this suite's own."""
    where = tmp_path_factory.mktemp("apiserver")
    (where / "apiserver.crt").write_bytes(files["apiserver.crt"])
    (where / "apiserver.key").write_bytes(files["apiserver.key"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(where / "apiserver.crt", where / "apiserver.key")
    context.load_verify_locations(cadata=files["ca.crt"].decode())
    context.verify_mode = ssl.CERT_REQUIRED
    host = addresses.address(addresses.APISERVER_METRICS, 1)
    server = MetricsServer((host, 0), Metrics)
    server.tenant = tenant.tenant_manifests(CP, files["ca.crt"])
    server.refusals = queue.Queue()
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def scrape(
    server: MetricsServer, tls: tuple[bytes, bytes, bytes, str], tmp_path: Path, path: str = "/metrics"
) -> tuple[int, bytes]:
    """A scrape as Prometheus makes it from the tlsConfig's values: to the pod's address, the server
    verified against ``ca`` for ``server_name``, the client certificate presented; (status, body)."""
    ca, cert, key, server_name = tls
    (tmp_path / "client.crt").write_bytes(cert)
    (tmp_path / "client.key").write_bytes(key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the name
    context.load_verify_locations(cadata=ca.decode())
    context.load_cert_chain(tmp_path / "client.crt", tmp_path / "client.key")
    host, port = server.server_address[:2]
    with (
        socket.create_connection((str(host), port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as conn,
    ):
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_the_service_monitors_tls_values_scrape_the_api_servers_metrics(
    apiserver: MetricsServer, files: dict[str, bytes], tmp_path: Path
) -> None:
    monitor = monitoring.render_service_monitor(CP, MONITORS)
    tls = tls_values(monitor, monitoring.render_scraper_secret(CP, files))
    assert scrape(apiserver, tls, tmp_path) == (200, b"apiserver_request_total 1\n")
    assert scrape(apiserver, tls, tmp_path, "/api/v1/secrets")[0] == 403
    assert scrape(apiserver, tls, tmp_path, "/metrics/slis")[0] == 403


def test_another_clusters_metrics_certificate_is_refused(
    apiserver: MetricsServer, files: dict[str, bytes], tmp_path: Path
) -> None:
    other = pki.ensure_pki({}, OTHER.names)
    ca, _, _, server_name = tls_values(
        monitoring.render_service_monitor(CP, MONITORS), monitoring.render_scraper_secret(CP, files)
    )
    with contextlib.suppress(queue.Empty):
        while True:  # what earlier tests' refusals left
            apiserver.refusals.get_nowait()
    # The client sees the server's alert, or only its connection closed, whichever comes first.
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        scrape(
            apiserver, (ca, other["metrics-scraper.crt"], other["metrics-scraper.key"], server_name), tmp_path
        )
    assert "CERTIFICATE_VERIFY_FAILED" in apiserver.refusals.get(timeout=5)
    # The same CA, server name and address with this cluster's certificate: answered.
    tls = tls_values(
        monitoring.render_service_monitor(CP, MONITORS), monitoring.render_scraper_secret(CP, files)
    )
    assert scrape(apiserver, tls, tmp_path)[0] == 200


def test_the_scrape_verifies_the_server_it_reaches(
    apiserver: MetricsServer, files: dict[str, bytes], tmp_path: Path
) -> None:
    """Another cluster's CA does not vouch for this API server, nor does its certificate name any host."""
    other = pki.ensure_pki({}, OTHER.names)
    _, cert, key, server_name = tls_values(
        monitoring.render_service_monitor(CP, MONITORS), monitoring.render_scraper_secret(CP, files)
    )
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        scrape(apiserver, (other["ca.crt"], cert, key, server_name), tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        scrape(apiserver, (files["ca.crt"], cert, key, "kube-apiserver.fpcp-demo-api.svc"), tmp_path)
