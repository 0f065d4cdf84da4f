"""``python -m providers`` serves Prometheus' /metrics on FLEXPLANE_METRICS_LISTEN (issue 32): the expiry of
its client certificate for the agents and of the platform CA, as the files hold them (their real
notAfter), looked at again at each scrape, so that a renewal cert-manager writes shows at the next scrape
and one that cannot be read is counted. The process runs as the chart runs it, against the Kubernetes
emulator with Cluster API core's CRDs and ours, its certificate a mounted Secret's layout (the files
symlinks through ``..data``, swapped all at once as the kubelet does)."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from agentclient.credentials import CHECK_INTERVAL
from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.net import free_port
from devstack.pki import CertificateAuthority, generate_key, write_key
from providers.common.crds import load_crds
from tests.addresses import PROVIDERS_METRICS, address
from tests.apikit import eventually
from tests.metricskit import sample

ROOT = Path(__file__).resolve().parents[2]
HOST = address(PROVIDERS_METRICS, 1)
EXPIRY = "flexplane_certificate_expiry_timestamp_seconds"
RELOADS = "flexplane_certificate_reloads_total"
# Long enough for the process to start and a renewal to be looked at (CHECK_INTERVAL) more than once.
WAIT = 60.0


class MountedSecret:
    """The agent TLS Secret as the kubelet mounts it: ca.crt, tls.crt and tls.key are symlinks through
    ``..data``, which points at one directory of the three files and is swapped to a new one at once."""

    def __init__(self, root: Path, ca: CertificateAuthority) -> None:
        self.root = root
        self.ca = ca
        self.versions = 0
        root.mkdir(parents=True)
        for name in ("ca.crt", "tls.crt", "tls.key"):
            (root / name).symlink_to(Path("..data") / name)

    def path(self, name: str) -> Path:
        return self.root / name

    def write(self, validity: datetime.timedelta, *, key_of_another: bool = False) -> x509.Certificate:
        """A new client certificate of ``validity`` (with a key that is not its own, if asked), swapped in."""
        key = generate_key()
        certificate = self.ca.sign(
            key.public_key(),
            common_name="flexplane-capi",
            usages=[ExtendedKeyUsageOID.CLIENT_AUTH],
            validity=validity,
        )
        self.versions += 1
        version = self.root / f"..v{self.versions}"
        version.mkdir()
        (version / "ca.crt").write_bytes(self.ca.cert_pem)
        (version / "tls.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        write_key(version / "tls.key", generate_key() if key_of_another else key)
        swap = self.root / "..data_tmp"
        swap.symlink_to(version.name)
        swap.replace(self.root / "..data")
        return certificate


@pytest.fixture
def secret(tmp_path: Path) -> MountedSecret:
    return MountedSecret(tmp_path / "agent-tls", CertificateAuthority.create(tmp_path / "ca"))


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    with KubeServer.start(HOST) as server:
        server.install_crds([*load_crds(), *CLUSTER_API_CORE_CRDS])
        yield server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def served(kubeconfig: Path, secret: MountedSecret, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``python -m providers`` running, its client certificate valid for 17 days: its (metrics, probes)
    addresses."""
    secret.write(datetime.timedelta(days=17))
    metrics, probes = f"{HOST}:{free_port(HOST)}", f"{HOST}:{free_port(HOST)}"
    env = {
        **os.environ,
        "FLEXPLANE_KUBECONFIG": str(kubeconfig),
        "FLEXPLANE_NAMESPACE": "flexplane",
        "FLEXPLANE_LOG_FORMAT": "plain",
        "FLEXPLANE_AGENT_CA": str(secret.path("ca.crt")),
        "FLEXPLANE_AGENT_CERT": str(secret.path("tls.crt")),
        "FLEXPLANE_AGENT_KEY": str(secret.path("tls.key")),
        "FLEXPLANE_METRICS_LISTEN": metrics,
        "FLEXPLANE_PROBES_LISTEN": probes,
        "FLEXPLANE_PROVIDERS_LEADER_TTL": "2",
    }
    log = (tmp_path / "providers.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "providers"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        yield metrics, probes
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()


def scrape(address: str) -> str | None:
    try:
        answer = requests.get(f"http://{address}/metrics", timeout=5)
    except requests.ConnectionError:
        return None  # not serving yet: the process is still checking Cluster API core
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"].startswith("text/plain")
    return answer.text


def expiry_of(certificate: x509.Certificate) -> float:
    return certificate.not_valid_after_utc.timestamp()


def test_the_providers_serve_their_certificates_expiry_and_read_a_renewal_at_the_next_scrape(
    served: tuple[str, str], secret: MountedSecret
) -> None:
    metrics, probes = served
    first = x509.load_pem_x509_certificate(secret.path("tls.crt").read_bytes())

    text = eventually(lambda: scrape(metrics), WAIT, "the providers' /metrics answering")
    assert text is not None
    assert sample(text, EXPIRY, certificate="client") == expiry_of(first)
    assert sample(text, EXPIRY, certificate="ca") == expiry_of(secret.ca.certificate)

    renewed = secret.write(datetime.timedelta(days=90))

    def renewal_read() -> str | None:
        text = scrape(metrics)
        return text if text and sample(text, EXPIRY, certificate="client") == expiry_of(renewed) else None

    text = eventually(renewal_read, WAIT, "the renewed certificate's expiry on /metrics")
    assert text is not None
    assert sample(text, RELOADS, outcome="ok") == 1
    assert sample(text, RELOADS, outcome="failed") == 0
    # The metrics port serves the metrics only; the probes port no metrics.
    assert requests.get(f"http://{metrics}/healthz", timeout=5).status_code == 404
    assert requests.get(f"http://{probes}/metrics", timeout=5).status_code == 404


def test_a_renewal_that_cannot_be_used_is_counted_and_the_expiry_stays_the_certificate_in_use(
    served: tuple[str, str], secret: MountedSecret
) -> None:
    metrics, _ = served
    in_use = x509.load_pem_x509_certificate(secret.path("tls.crt").read_bytes())
    eventually(lambda: scrape(metrics), WAIT, "the providers' /metrics answering")

    secret.write(datetime.timedelta(days=90), key_of_another=True)

    def refused() -> str | None:
        text = scrape(metrics)
        return text if text and sample(text, RELOADS, outcome="failed") >= 1 else None

    text = eventually(refused, WAIT + CHECK_INTERVAL, "the broken renewal counted as failed")
    assert text is not None
    assert sample(text, EXPIRY, certificate="client") == expiry_of(in_use)
    assert sample(text, RELOADS, outcome="ok") == 0
