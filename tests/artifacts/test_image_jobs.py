"""The charts' Jobs and CronJobs that run flex.plane's image, started from it as the charts render them
(tests/artifacts/image.py says how), each run to its end: the flextenant chart's backup CronJob into an
S3 bucket and its preflight Job, and the identity chart's handover and bootstrap of a new Zitadel and
the sealing half of its database backup.

Their neighbours are stand-ins on loopback: moto's S3 server, the devstack's Kubernetes emulator (over
HTTPS with a ServiceAccount's files where the job reads them in-cluster) and identity provider, and
Zitadel's management API (tests/charts/fakezitadel.py) behind an HTTP server. Zitadel's own jobs (``init``,
``setup``) run Zitadel's image, which is not built here.
"""

from __future__ import annotations

import base64
import http.server
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes import client
from kubernetes.config import new_client_from_config
from moto.server import ThreadedMotoServer

from devstack.identity.process import IdentityProvider
from devstack.kube.server import KubeServer
from devstack.pki import CertificateAuthority
from orchestrator.services.backup import DUMP_SUFFIX, S3Settings, S3Store, fetch_dump
from orchestrator.services.backup.sealed import unseal
from tests.addresses import address
from tests.artifacts.image import (
    FLEXTENANT,
    IDENTITY,
    IMAGE_SUITE,
    SECRETS,
    START_TIMEOUT,
    USER,
    chart_container,
    image_path,
    image_process,
    k3s_values,
    output,
    rendered_env,
)
from tests.charts import kit
from tests.charts.fakezitadel import API, FakeZitadel

BACKUP_KEY = bytes(range(32))
BUCKET = "flexplane-backups"
IDENTITY_VALUES = IDENTITY / "ci" / "k3s-values.yaml"
# The identity chart's jobs run as Zitadel's user (identity.jobPodSecurityContext).
JOB_USER = "1000:1000"


def finished(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    """The job's exit status and what it printed, once it ends (START_TIMEOUT at most)."""
    try:
        out, _ = process.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the job did not end:\n{output(process)}")
    return process.returncode, out.decode(errors="replace")


# ---------------------------------------------------------------------------------- flextenant's jobs


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address=address(IMAGE_SUITE, 7), port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def test_the_image_runs_the_backup_cronjob_as_the_chart_does_into_the_bucket(
    oci_config: dict,
    rootfs: Path,
    neighbours: tuple[KubeServer, IdentityProvider, Path],
    s3_endpoint: str,
    tmp_path: Path,
) -> None:
    """The CronJob's command, arguments and environment as the chart renders them with backups on: the
    image's boto3 (pruned to S3's and STS's models) puts one sealed backup of this platform in the bucket,
    which the operator's key opens."""
    _kube, _identity, config_dir = neighbours
    s3 = S3Settings(s3_endpoint, access_key="test", secret_key="test").client()
    s3.create_bucket(Bucket=BUCKET)
    values = kit.merged(
        k3s_values(),
        {
            "backup": {
                "enabled": True,
                "s3": {
                    "url": f"s3://{BUCKET}/platform",
                    "endpoint": s3_endpoint,
                    "credentialsSecret": "flexplane-backup-s3",
                },
            }
        },
    )
    container = chart_container(FLEXTENANT, values, "backup")
    key_dir = tmp_path / "backup-key"
    key_dir.mkdir()
    (key_dir / "key").write_text(base64.b64encode(BACKUP_KEY).decode())
    (key_dir / "key").chmod(0o444)  # the Secret's 0400, for the image's user (a pod's fsGroup owns it)
    (mount,) = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == "backup-key"]
    references = {
        **SECRETS,
        "FLEXPLANE_BACKUP_S3_ACCESS_KEY": "test",
        "FLEXPLANE_BACKUP_S3_SECRET_KEY": "test",
    }
    env = [*rendered_env(container, references), "FLEXPLANE_KUBECONFIG=/run/kubeconfig"]
    command = ["/usr/bin/env", "-i", *env, image_path(oci_config), *container["command"], *container["args"]]

    with image_process(rootfs, config_dir, USER, command, {key_dir: mount}) as process:
        status, said = finished(process)

    assert status == 0, said
    store = S3Store(f"s3://{BUCKET}/platform", s3)
    name, blob = store.get()
    header, document = unseal(blob, BACKUP_KEY)
    assert name in said, said
    assert header.platform, header
    assert document, header


def test_the_image_runs_the_preflight_job_as_the_chart_does_and_it_reports_every_check(
    oci_config: dict, rootfs: Path, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> None:
    """The doctor Job (helm test) from the image, against a cluster with no cert-manager: every check
    reports, the missing issuer is a blocker, and the Job fails as the chart's test should."""
    _kube, _identity, config_dir = neighbours
    values = kit.merged(k3s_values(), {"doctor": {"enabled": True}})
    container = chart_container(FLEXTENANT, values, "doctor")
    env = [*rendered_env(container, SECRETS), "FLEXPLANE_KUBECONFIG=/run/kubeconfig"]
    command = [
        "/usr/bin/env",
        "-i",
        *env,
        image_path(oci_config),
        *container["command"],
        *container["args"],
        "--json",
    ]

    with image_process(rootfs, config_dir, USER, command) as process:
        status, said = finished(process)

    assert status == 1, said
    report, _end = json.JSONDecoder().raw_decode(said[said.index("{") :])
    statuses = {finding["check"]: finding["status"] for finding in report["findings"]}
    assert statuses["kubernetes"] == "ok", statuses
    assert statuses["cert-manager"] == "blocker", statuses
    assert f"{report['blockers']} blocker(s): " in said, said


# ---------------------------------------------------------------------------------- identity's jobs


class ZitadelServer(http.server.ThreadingHTTPServer):
    """Zitadel's management API (the in-memory fake) over HTTP, where the chart's jobs call it."""

    def __init__(self, host: str, zitadel: FakeZitadel) -> None:
        self.zitadel = zitadel
        super().__init__((host, 0), _ZitadelHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _ZitadelHandler(http.server.BaseHTTPRequestHandler):
    server: ZitadelServer

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        status, answer = self.server.zitadel(self.command, API + self.path, dict(self.headers), body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def service_user_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def zitadel(service_user_key: rsa.RSAPrivateKey) -> Iterator[tuple[FakeZitadel, str]]:
    fake = FakeZitadel(service_user_key.public_key())
    server = ZitadelServer(address(IMAGE_SUITE, 8), fake)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, server.url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def in_cluster(
    tmp_path_factory: pytest.TempPathFactory, neighbours: tuple[KubeServer, IdentityProvider, Path]
) -> Iterator[tuple[KubeServer, client.CoreV1Api]]:
    """A management cluster served over HTTPS, and what a pod's ServiceAccount volume holds for it, at
    /var/run/secrets/kubernetes.io/serviceaccount: /var/run is /run in the image, which is the test's
    folder of the neighbours (tests/artifacts/image.py's RUN)."""
    config_dir = neighbours[2]
    scratch = tmp_path_factory.mktemp("in-cluster")
    host = address(IMAGE_SUITE, 9)
    ca = CertificateAuthority.create(scratch / "ca")
    cert, key = ca.issue_server([host], scratch, "kube")
    kube = KubeServer.start(host=host, port=0, tls=(cert, key))
    account = config_dir / "secrets" / "kubernetes.io" / "serviceaccount"
    account.mkdir(parents=True)
    (account / "token").write_text("job-token")
    (account / "ca.crt").write_bytes(ca.cert_pem)
    for file in account.iterdir():
        file.chmod(0o444)
    kubeconfig = kube.write_kubeconfig(scratch / "kubeconfig", certificate_authority=ca.cert_path)
    core = client.CoreV1Api(new_client_from_config(config_file=str(kubeconfig)))
    for namespace in ("flexplane", "identity"):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        yield kube, core
    finally:
        kube.stop()


def identity_job(container: dict, zitadel_url: str, kube: KubeServer) -> list[str]:
    """The job container's environment as rendered, its Zitadel the test's, and the Kubernetes Service
    variables the kubelet gives every pod (this cluster's API server)."""
    env = rendered_env(container, {})
    settings = json.loads(next(e for e in env if e.startswith("IDENTITY_BOOTSTRAP=")).partition("=")[2])
    settings["apiURL"] = zitadel_url
    host, _, port = kube.url.removeprefix("https://").rpartition(":")
    return [
        *(e for e in env if not e.startswith("IDENTITY_BOOTSTRAP=")),
        f"IDENTITY_BOOTSTRAP={json.dumps(settings)}",
        f"KUBERNETES_SERVICE_HOST={host}",
        f"KUBERNETES_SERVICE_PORT={port}",
    ]


def test_the_image_runs_the_identity_charts_handover_and_bootstrap_as_the_chart_does(
    oci_config: dict,
    rootfs: Path,
    neighbours: tuple[KubeServer, IdentityProvider, Path],
    zitadel: tuple[FakeZitadel, str],
    in_cluster: tuple[KubeServer, client.CoreV1Api],
    service_user_key: rsa.RSAPrivateKey,
    tmp_path: Path,
) -> None:
    """The setup job's handover (the service user's key Zitadel wrote, into a Secret) and the bootstrap
    job (as that service user: the project, its roles, the admin's grant, the portal's client), each with
    its command, environment and mounts as the README's identity values render them, from the image as
    Zitadel's user with the root read-only."""
    _kube, _identity, config_dir = neighbours
    fake, zitadel_url = zitadel
    kube, core = in_cluster
    values = kit.merged(
        yaml.safe_load(IDENTITY_VALUES.read_text(encoding="utf-8")),
        {"portal": {"url": "https://cloud.example.com"}, "external": {"domain": "id.example.com"}},
    )
    scripts = tmp_path / "config"
    scripts.mkdir()
    (scripts / "zitadel_bootstrap.py").write_text((IDENTITY / "files" / "zitadel_bootstrap.py").read_text())
    machinekey = tmp_path / "machinekey"
    machinekey.mkdir()
    pem = service_user_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    # As Zitadel's setup writes the service user's key.
    key = {"type": "serviceaccount", "keyId": "300000000000000042", "key": pem, "userId": "2000000000000002"}
    (machinekey / "key.json").write_text(json.dumps(key))
    for folder in (scripts, machinekey):
        folder.chmod(0o755)
        for file in folder.iterdir():
            file.chmod(0o444)
    mounts = {
        scripts: "/etc/zitadel/config",
        machinekey: "/machinekey",
    }

    for name in ("handover", "bootstrap"):
        container = chart_container(IDENTITY, values, name)
        env = identity_job(container, zitadel_url, kube)
        command = ["/usr/bin/env", "-i", *env, image_path(oci_config), *container["command"]]
        with image_process(rootfs, config_dir, JOB_USER, command, mounts) as process:
            status, said = finished(process)
        assert status == 0, f"{name}:\n{said}"

    service_user = core.read_namespaced_secret("flexplane-zitadel-service-user", "flexplane").data or {}
    assert json.loads(base64.b64decode(service_user["key.json"]))["keyId"] == key["keyId"]
    ((project_id, project),) = fake.projects.items()
    assert project["name"] == "flexplane"
    assert base64.b64decode(service_user["project-id"]).decode() == project_id
    portal = core.read_namespaced_secret("flexplane-portal-oidc", "flexplane").data or {}
    assert base64.b64decode(portal["client-id"]).decode().endswith("@flexplane")


def test_the_image_seals_the_identity_databases_dump_into_the_bucket_as_the_chart_does(
    oci_config: dict,
    rootfs: Path,
    neighbours: tuple[KubeServer, IdentityProvider, Path],
    s3_endpoint: str,
    tmp_path: Path,
) -> None:
    """The identity chart's backup CronJob's second step (the first is pg_dump, from PostgreSQL's image):
    its command and environment as rendered, from flex.plane's image as Zitadel's user, the dump in the
    scratch volume the two steps share; what lands in the bucket opens to the same bytes."""
    _kube, _identity, config_dir = neighbours
    bucket = "identity-dumps"
    s3 = S3Settings(s3_endpoint, access_key="test", secret_key="test").client()
    s3.create_bucket(Bucket=bucket)
    values = kit.merged(
        yaml.safe_load(IDENTITY_VALUES.read_text(encoding="utf-8")),
        {
            "portal": {"url": "https://cloud.example.com"},
            "backup": {
                "enabled": True,
                "s3": {
                    "url": f"s3://{bucket}/platform",
                    "endpoint": s3_endpoint,
                    "credentialsSecret": "flexplane-backup-s3",
                },
            },
        },
    )
    container = chart_container(IDENTITY, values, "seal")
    scratch = tmp_path / "dump"
    scratch.mkdir()
    scratch.chmod(0o777)  # the pod's emptyDir, writable by the job's user
    dump = bytes(range(256)) * 8192  # 2 MiB: more than one of the sealed file's chunks
    (scratch / "zitadel.dump").write_bytes(dump)
    key_dir = tmp_path / "backup-key"
    key_dir.mkdir()
    (key_dir / "key").write_text(base64.b64encode(BACKUP_KEY).decode())
    (key_dir / "key").chmod(0o444)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    references = {"FLEXPLANE_BACKUP_S3_ACCESS_KEY": "test", "FLEXPLANE_BACKUP_S3_SECRET_KEY": "test"}
    env = rendered_env(container, references)
    command = ["/usr/bin/env", "-i", *env, image_path(oci_config), *container["command"], *container["args"]]

    with image_process(
        rootfs, config_dir, JOB_USER, command, {key_dir: mounts["backup-key"]}, {scratch: mounts["dump"]}
    ) as process:
        status, said = finished(process)

    assert status == 0, said
    store = S3Store(f"s3://{bucket}/platform/identity", s3, suffix=DUMP_SUFFIX)
    found, _header, size = fetch_dump(store, tmp_path / "opened.dump", BACKUP_KEY)
    assert size == len(dump)
    assert (tmp_path / "opened.dump").read_bytes() == dump
    assert found.endswith(DUMP_SUFFIX), found
