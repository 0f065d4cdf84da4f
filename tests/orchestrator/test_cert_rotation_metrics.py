"""The orchestrator's /metrics carries the expiry of its client certificate for the agents from the first
scrape on, looked at again on each scrape (issue 32, item 5); the rotation itself is tested in
tests/agentclient/test_cert_rotation.py."""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from django.test import RequestFactory, override_settings

from devstack.pki import CertificateAuthority
from orchestrator.metrics_http import metrics
from orchestrator.sources.proxmox import client_tls
from tests.metricskit import sample

EXPIRY = "flexplane_certificate_expiry_timestamp_seconds"


def test_a_scrape_reports_when_the_client_certificate_and_the_platform_ca_expire(tmp_path: Path) -> None:
    ca = CertificateAuthority.create(tmp_path / "ca")
    cert, key = ca.issue_client("flexplane-orchestrator", tmp_path, "orchestrator")
    paths = {"FLEXPLANE_AGENT_CA": str(ca.cert_path), "FLEXPLANE_AGENT_CERT": str(cert)}

    with override_settings(FLEXPLANE_METRICS_PORT=None, FLEXPLANE_AGENT_KEY=str(key), **paths):
        text = metrics(RequestFactory().get("/metrics")).content.decode()
        reader = client_tls()

    client_expiry = x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_after_utc.timestamp()
    assert sample(text, EXPIRY, certificate="client") == client_expiry
    assert sample(text, EXPIRY, certificate="ca") == ca.certificate.not_valid_after_utc.timestamp()
    assert reader.paths == (ca.cert_path, cert, key)
