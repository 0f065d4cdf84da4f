"""The hosted control plane's runtime stand-in (devstack/hosted_control_plane.py) against the emulator, the
control-plane provider's part played by hand: a LoadBalancer Service, the serving certificate's Secret, a
Deployment whose kube-apiserver container mounts it, the etcd snapshots' CronJob and Secret (with moto's S3
server as the bucket), an etcd restore's Job."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import requests
from kubernetes import client
from kubernetes.config import new_client_from_config
from moto.server import ThreadedMotoServer

from devstack.hosted_control_plane import HostedControlPlanes
from devstack.kube import KubeServer
from devstack.pki import CertificateAuthority
from orchestrator.services.backup.stores import S3Settings
from providers.controlplane.model import ControlPlane, EtcdBackup
from providers.controlplane.render import render_etcd_backup, render_etcd_restore_job
from tests import addresses
from tests.apikit import eventually

T = TypeVar("T")

# Third octets of the worker's world subnet: the management emulator's, and the LoadBalancer's addresses.
SUITE = 217
LOAD_BALANCERS = 218
HOST = addresses.address(SUITE, 1)
NS = "fpcp-demo-hosted"


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 10.0) -> T:
    return cast(T, eventually(probe, timeout, what))  # a true value: never None


def apiserver_address(core: Any, namespace: str, timeout: float = 10.0) -> str:
    """The control plane's ``kube-apiserver`` LoadBalancer Service made in ``namespace``, as the provider
    makes it: the address the stand-in's load balancer gives it."""
    core.create_namespaced_service(
        namespace,
        {"metadata": {"name": "kube-apiserver"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 6443}]}},
    )

    def address() -> str | None:
        status = core.read_namespaced_service("kube-apiserver", namespace).status
        ingress = status.load_balancer.ingress if status and status.load_balancer else None
        return ingress[0].ip if ingress else None

    return wait_for(address, "the LoadBalancer's address", timeout)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any, HostedControlPlanes]]:
    with KubeServer.start(HOST) as server:
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("hosted") / "kubeconfig")
        hosted = HostedControlPlanes(kubeconfig, addresses.address(LOAD_BALANCERS, 0)[:-1]).start()
        api = new_client_from_config(config_file=str(kubeconfig))
        try:
            yield client.CoreV1Api(api), client.AppsV1Api(api), hosted
        finally:
            hosted.stop()
            api.close()


def deployment(image: str) -> dict[str, Any]:
    pki = "/etc/kubernetes/pki"
    return {
        "metadata": {"name": "control-plane"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "cp"}},
            "template": {
                "metadata": {"labels": {"app": "cp"}},
                "spec": {
                    "containers": [
                        {
                            "name": "kube-apiserver",
                            "image": image,
                            "args": [
                                f"--tls-cert-file={pki}/apiserver.crt",
                                f"--tls-private-key-file={pki}/apiserver.key",
                            ],
                            "volumeMounts": [{"name": "pki", "mountPath": pki, "readOnly": True}],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "pki",
                            "secret": {
                                "secretName": "pki",
                                "items": [
                                    {"key": "apiserver.crt", "path": "apiserver.crt"},
                                    {"key": "apiserver.key", "path": "apiserver.key"},
                                ],
                            },
                        }
                    ],
                },
            },
        },
    }


def test_a_control_plane_gets_an_address_an_https_api_server_and_a_rolling_status(
    kube: tuple[Any, Any, HostedControlPlanes], tmp_path: Path
) -> None:
    core, apps, hosted = kube
    core.create_namespace({"metadata": {"name": NS}})
    ip = apiserver_address(core, NS)
    assert ip == addresses.address(LOAD_BALANCERS, 1)

    ca = CertificateAuthority.create(tmp_path / "ca")
    cert, key = ca.issue_server([ip], tmp_path, "apiserver")
    data = {"apiserver.crt": cert.read_bytes(), "apiserver.key": key.read_bytes()}
    core.create_namespaced_secret(
        NS, {"metadata": {"name": "pki"}, "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
    )
    apps.create_namespaced_deployment(NS, deployment("registry.k8s.io/kube-apiserver:v1.34.2"))

    def ready() -> Any:
        status = apps.read_namespaced_deployment("control-plane", NS).status
        return status if status and status.ready_replicas == 2 and status.updated_replicas == 2 else None

    wait_for(ready, "the Deployment's pods ready")
    # The tenant's API server answers over HTTPS, with the certificate from the Secret (verified by its CA).
    answer = requests.get(f"https://{ip}:6443/version", verify=str(ca.cert_path), timeout=5)
    assert answer.json()["major"] == "1"

    # A new image rolls: one more pod, then the updated ones one by one, the API server staying up.
    seen: list[tuple[int, int]] = []
    upgraded = deployment("registry.k8s.io/kube-apiserver:v1.35.0")
    # A merge patch replaces lists whole: the containers, as the provider renders them, with the new image.
    apps.patch_namespaced_deployment("control-plane", NS, {"spec": upgraded["spec"]})

    def rolled() -> bool:
        status = apps.read_namespaced_deployment("control-plane", NS).status
        if status is None:
            return False
        seen.append((status.replicas, status.updated_replicas or 0))
        return status.observed_generation == 2 and status.updated_replicas == 2 and status.replicas == 2

    wait_for(rolled, "the rollout")
    assert (3, 0) in seen or (3, 1) in seen  # a surge pod was reported on the way
    assert requests.get(f"https://{ip}:6443/version", verify=str(ca.cert_path), timeout=5).ok

    # The namespace deleted: its API server stops.
    core.delete_namespace(NS)
    wait_for(lambda: hosted.server(NS) is None, "the API server stopped")
    # Refused, or (a socket not yet closed as the server's loop ends) never answered.
    with pytest.raises((requests.ConnectionError, requests.Timeout)):
        requests.get(f"https://{ip}:6443/version", verify=str(ca.cert_path), timeout=2)


def test_the_datastores_statefulset_reports_every_member_ready(
    kube: tuple[Any, Any, HostedControlPlanes],
) -> None:
    core, apps, _ = kube
    namespace = "fpcp-demo-members"
    core.create_namespace({"metadata": {"name": namespace}})
    labels = {"app": "etcd"}
    apps.create_namespaced_stateful_set(
        namespace,
        {
            "metadata": {"name": "etcd"},
            "spec": {
                "replicas": 3,
                "serviceName": "etcd",
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.6.5-0"}]},
                },
            },
        },
    )

    def members() -> Any:
        status = apps.read_namespaced_stateful_set("etcd", namespace).status
        return status if status and status.ready_replicas == 3 else None

    status = wait_for(members, "the members ready")
    assert (status.replicas, status.updated_replicas, status.observed_generation) == (3, 3, 1)
    core.delete_namespace(namespace)


@pytest.fixture(scope="module")
def bucket() -> Iterator[EtcdBackup]:
    """moto's S3 server on the module's loopback subnet, with a bucket: the providers' etcd snapshots'."""
    server = ThreadedMotoServer(ip_address=addresses.address(SUITE, 3), port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        endpoint = f"http://{host}:{port}"
        S3Settings(endpoint, access_key="test", secret_key="test").client().create_bucket(Bucket="snapshots")
        yield EtcdBackup(
            s3_url="s3://snapshots/flexplane",
            endpoint=endpoint,
            key=base64.b64encode(bytes(range(32))).decode(),
            access_key="test",
            secret_key="test",
        )
    finally:
        server.stop()


def serve_tenant(core: Any, apps: Any, namespace: str, tmp_path: Path) -> tuple[str, CertificateAuthority]:
    """The control plane's Service, serving certificate and Deployment, as the provider makes them: the
    tenant's API server's address once its pods run, and the CA that verifies it."""
    ip = apiserver_address(core, namespace)
    ca = CertificateAuthority.create(tmp_path / "ca")
    cert, key = ca.issue_server([ip], tmp_path, "apiserver")
    data = {"apiserver.crt": cert.read_bytes(), "apiserver.key": key.read_bytes()}
    core.create_namespaced_secret(
        namespace,
        {"metadata": {"name": "pki"}, "data": {k: base64.b64encode(v).decode() for k, v in data.items()}},
    )
    apps.create_namespaced_deployment(namespace, deployment("registry.k8s.io/kube-apiserver:v1.34.2"))
    return ip, ca


def config_maps(ip: str, ca: CertificateAuthority) -> list[str]:
    """The tenant's ConfigMaps of ``default`` (none while its API server is not up yet)."""
    try:
        answer = requests.get(
            f"https://{ip}:6443/api/v1/namespaces/default/configmaps", verify=str(ca.cert_path), timeout=5
        )
    except requests.ConnectionError:
        return []
    return [item["metadata"]["name"] for item in answer.json()["items"]] if answer.ok else []


def test_a_snapshot_then_a_restore_job_bring_a_new_tenant_api_server_up_with_the_objects_it_had(
    kube: tuple[Any, Any, HostedControlPlanes], bucket: EtcdBackup, tmp_path: Path
) -> None:
    core, apps, hosted = kube
    batch: Any = client.BatchV1Api(core.api_client)
    cp = ControlPlane(vdc="demo", cluster="restored", version="", registry="registry.example.org")
    core.create_namespace({"metadata": {"name": cp.namespace}})
    secret, cronjob = render_etcd_backup(cp, bucket)
    core.create_namespaced_secret(cp.namespace, secret)
    batch.create_namespaced_cron_job(cp.namespace, cronjob)
    ip, ca = serve_tenant(core, apps, cp.namespace, tmp_path / "first")
    wait_for(lambda: hosted.server(cp.namespace), "the tenant's API server")
    tenant = f"https://{ip}:6443/api/v1/namespaces/default/configmaps"
    made = requests.post(tenant, json={"metadata": {"name": "kept"}}, verify=str(ca.cert_path), timeout=5)
    assert made.status_code == 201

    where = hosted.snapshot(cp.namespace)  # the CronJob's run
    assert where.startswith("s3://snapshots/flexplane/etcd-demo-restored/")
    core.delete_namespace(cp.namespace)  # lost, with its API server and the objects it held
    wait_for(lambda: hosted.server(cp.namespace) is None, "the API server stopped")

    core.create_namespace({"metadata": {"name": cp.namespace}})
    core.create_namespaced_secret(cp.namespace, secret)
    batch.create_namespaced_job(cp.namespace, render_etcd_restore_job(cp, bucket, 0))
    other: Any = {
        "metadata": {"name": "other"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "example.org/c:1"}]}
            }
        },
    }
    batch.create_namespaced_job(cp.namespace, other)

    def completed() -> Any:
        status = batch.read_namespaced_job("etcd-restore-0", cp.namespace).status
        return status if status and status.succeeded == 1 else None

    status = wait_for(completed, "the restore Job complete")
    assert {c.type: c.status for c in status.conditions} == {"SuccessCriteriaMet": "True", "Complete": "True"}
    assert status.completion_time is not None
    untouched = batch.read_namespaced_job("other", cp.namespace).status
    assert not (untouched and untouched.succeeded)

    ip, ca = serve_tenant(core, apps, cp.namespace, tmp_path / "second")  # started on the restored data
    assert wait_for(lambda: "kept" in config_maps(ip, ca), "the tenant's ConfigMap back")
    core.delete_namespace(cp.namespace)


def test_a_restore_job_whose_snapshot_is_not_there_fails_saying_why(
    kube: tuple[Any, Any, HostedControlPlanes], bucket: EtcdBackup
) -> None:
    core, _, _ = kube
    batch: Any = client.BatchV1Api(core.api_client)
    cp = ControlPlane(vdc="demo", cluster="never", version="", registry="registry.example.org")
    core.create_namespace({"metadata": {"name": cp.namespace}})
    core.create_namespaced_secret(cp.namespace, render_etcd_backup(cp, bucket)[0])
    batch.create_namespaced_job(cp.namespace, render_etcd_restore_job(cp, bucket, 0))

    def failed() -> Any:
        status = batch.read_namespaced_job("etcd-restore-0", cp.namespace).status
        return status if status and status.failed == 1 else None

    status = wait_for(failed, "the restore Job failed")
    [condition] = status.conditions
    assert (condition.type, condition.status) == ("Failed", "True")
    assert "etcd-demo-never" in condition.message
    core.delete_namespace(cp.namespace)
