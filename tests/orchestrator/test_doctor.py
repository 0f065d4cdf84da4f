"""``manage.py doctor``: against the devstack's world, dressed as an operator's cluster would be
(cert-manager's CRDs and the platform CA's Issuer, clusterctl's Provider, a default StorageClass, an
IngressClass, a LoadBalancer Service with an address), every check passes from the command line; and
each failure, provoked once in-process on a cluster of the test's own (something removed, a dead
address, a wrong key), is found, says what to do, and blocks or only warns as the module argues.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes import client, config

from devstack import seed
from devstack.kube import KubeServer
from devstack.kube.crds import CLUSTER_API_CORE_CRDS, custom_resource_definition
from devstack.net import free_port
from devstack.world import World
from devstack.world.config import ROOT
from orchestrator.services import doctor
from orchestrator.services.doctor import Finding, Probe, Site, Status
from tests import addresses

HOST = addresses.address(addresses.DOCTOR, 1)
OLD_API_HOST = addresses.address(addresses.DOCTOR, 2)
DEAD = addresses.address(addresses.DOCTOR, 3)  # nothing listens here
LB_NAMESPACE = "doctor-lb"
CAPI_NAMESPACE = "capi-system"
CERT_MANAGER_CRDS = (
    custom_resource_definition("cert-manager.io", "Certificate", "certificates"),
    custom_resource_definition("cert-manager.io", "Issuer", "issuers"),
    custom_resource_definition("cert-manager.io", "ClusterIssuer", "clusterissuers", namespaced=False),
)
CLUSTERCTL_CRD = custom_resource_definition(
    "clusterctl.cluster.x-k8s.io", "Provider", "providers", versions=("v1alpha3",)
)


class OperatorCluster:
    """What an operator's management cluster holds before flex.plane goes in, made through the API as
    ``helm install cert-manager``, ``clusterctl init`` and the distribution (k3s) would have made it."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        # Typed as Any: dict bodies, as kubectl's manifests, which the client takes for its models.
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.crds: Any = client.ApiextensionsV1Api(api)
        self.storage: Any = client.StorageV1Api(api)
        self.networking: Any = client.NetworkingV1Api(api)

    def dress(self, *, capi_version: str = "v1.11.2") -> None:
        for crd in [*CERT_MANAGER_CRDS, CLUSTERCTL_CRD, *CLUSTER_API_CORE_CRDS]:
            self._create(lambda crd=crd: self.crds.create_custom_resource_definition(crd))
        self.namespaces(self.namespace, CAPI_NAMESPACE, LB_NAMESPACE)
        self.issuer("True", "KeyPairVerified")
        self.custom.create_namespaced_custom_object(
            "clusterctl.cluster.x-k8s.io",
            "v1alpha3",
            CAPI_NAMESPACE,
            "providers",
            {
                "apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3",
                "kind": "Provider",
                "metadata": {"name": "cluster-api"},
                "providerName": "cluster-api",
                "type": "CoreProvider",
                "version": capi_version,
            },
        )
        self.storage.create_storage_class(
            {
                "metadata": {
                    "name": "local-path",
                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                },
                "provisioner": "rancher.io/local-path",
            }
        )
        self.networking.create_ingress_class(
            {
                "metadata": {
                    "name": "traefik",
                    "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
                },
                "spec": {"controller": "traefik.io/ingress-controller"},
            }
        )
        self.load_balancer("traefik", "203.0.113.10")

    def namespaces(self, *names: str) -> None:
        for name in names:
            self._create(lambda name=name: self.core.create_namespace({"metadata": {"name": name}}))

    def issuer(self, ready: str | None, reason: str = "", message: str = "") -> None:
        """The platform CA's Issuer (made, or its status set): Ready ``ready`` (None: no condition yet)."""
        body = {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": doctor.DEFAULT_ISSUER},
            "spec": {"ca": {"secretName": doctor.DEFAULT_ISSUER}},
        }
        args = ("cert-manager.io", "v1", self.namespace, "issuers", doctor.DEFAULT_ISSUER)
        self._create(lambda: self.custom.create_namespaced_custom_object(*args[:4], body))
        conditions = (
            []
            if ready is None
            else [{"type": "Ready", "status": ready, "reason": reason, "message": message}]
        )
        self.custom.patch_namespaced_custom_object_status(*args, {"status": {"conditions": conditions}})

    def load_balancer(self, name: str, address: str | None) -> None:
        """A Service of type LoadBalancer, given ``address`` by the implementation (None: waiting)."""
        status = {"loadBalancer": {"ingress": [{"ip": address}]}} if address else {"loadBalancer": {}}
        self.core.create_namespaced_service(
            LB_NAMESPACE,
            {
                "metadata": {"name": name},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]},
                "status": status,
            },
        )

    def undress(self) -> None:
        """Take away what :meth:`dress` made (Cluster API core's CRDs stay: other suites share them)."""
        for crd in [*CERT_MANAGER_CRDS, CLUSTERCTL_CRD]:
            self._gone(lambda crd=crd: self.crds.delete_custom_resource_definition(crd["metadata"]["name"]))
        self._gone(lambda: self.storage.delete_storage_class("local-path", _preload_content=False))
        self._gone(lambda: self.networking.delete_ingress_class("traefik", _preload_content=False))
        for name in (CAPI_NAMESPACE, LB_NAMESPACE):
            self._gone(lambda name=name: self.core.delete_namespace(name))

    @staticmethod
    def _create(make: Any) -> None:
        try:
            make()
        except client.ApiException as exc:
            if exc.status != 409:
                raise

    @staticmethod
    def _gone(delete: Any) -> None:
        try:
            delete()
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def site_of(env: dict[str, str], **changes: Any) -> Site:
    """The doctor's view of an orchestrator's environment (the settings it would read), changed."""
    site = Site(
        kubeconfig=env["FLEXPLANE_KUBECONFIG"],
        namespace=env["FLEXPLANE_NAMESPACE"],
        oidc_issuer=env["FLEXPLANE_OIDC_ISSUER"],
        project_id=env["FLEXPLANE_OIDC_PROJECT_ID"],
        zitadel_url=env["FLEXPLANE_ZITADEL_URL"],
        zitadel_key_file=env["FLEXPLANE_ZITADEL_KEY_FILE"],
        registry=env.get("FLEXPLANE_AGENT_REGISTRY", ""),
        registry_username=env.get("FLEXPLANE_AGENT_REGISTRY_USERNAME", ""),
        registry_password=env.get("FLEXPLANE_AGENT_REGISTRY_PASSWORD", ""),
        registry_ca=env.get("FLEXPLANE_AGENT_REGISTRY_CA", ""),
        releases_dir=env.get("FLEXPLANE_AGENT_RELEASES_DIR", ""),
        names=(("FLEXPLANE_OIDC_ISSUER", doctor.url_host(env["FLEXPLANE_OIDC_ISSUER"]), True),),
    )
    return dataclasses.replace(site, **changes)


@pytest.fixture(scope="module")
def world_env(world: World) -> Iterator[dict[str, str]]:
    """The world's orchestrator environment, its cluster dressed as an operator's (undressed after)."""
    assert world.kubeconfig is not None
    api = config.new_client_from_config(config_file=str(world.kubeconfig))
    cluster = OperatorCluster(api, seed.NAMESPACE)
    try:
        cluster.dress()
        yield world.orchestrator_env()
    finally:
        cluster.undress()
        api.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OperatorCluster]:
    """A management cluster of the test's own, dressed as an operator's: each test takes one part away."""
    with KubeServer.start(host=HOST, port=0) as server:
        api = config.new_client_from_config(config_file=str(server.write_kubeconfig(tmp_path / "kubeconfig")))
        dressed = OperatorCluster(api, seed.NAMESPACE)
        dressed.dress()
        try:
            yield dressed
        finally:
            api.close()


def check(cluster: OperatorCluster, name: str, site: Site | None = None) -> Finding:
    """One check's finding on the test's cluster."""
    functions = dict(doctor.CHECKS)
    return doctor.run_one(name, functions[name], Probe(site or Site(namespace=seed.NAMESPACE), cluster.api))


def doctor_command(env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "doctor", *options],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---------------------------------------------------------------------------------- end to end


def test_a_ready_site_passes_every_check_from_the_command_line(world_env: dict[str, str]) -> None:
    ran = doctor_command(world_env, "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    said = json.loads(ran.stdout)
    assert {f["check"]: f["status"] for f in said["findings"]} == {name: "ok" for name, _ in doctor.CHECKS}
    assert said["blockers"] == 0
    found = {f["check"]: f["found"] for f in said["findings"]}
    assert found["kubernetes"].startswith("v1.37.0")
    assert found["cluster-api"].startswith("Cluster API v1.11.2, serves v1beta2")
    assert f"Issuer {seed.NAMESPACE}/flexplane-agent-ca is Ready" in found["cert-manager"]
    assert "default StorageClass local-path" in found["storage"]
    assert f"reads project {seed.PROJECT_ID}" in found["zitadel"]
    assert "as nodes:" in found["agent-registry"]


def test_a_blocker_fails_the_command_and_says_what_to_do(world_env: dict[str, str]) -> None:
    ran = doctor_command(world_env, "--cluster-issuer", "letsencrypt")
    assert ran.returncode == 1
    assert "1 blocker(s): cert-manager" in ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].split() == ["CHECK", "STATUS", "FOUND"]
    row = next(i for i, line in enumerate(lines) if line.startswith("cert-manager"))
    assert "BLOCKER" in lines[row]
    assert "no ClusterIssuer letsencrypt" in lines[row]
    assert "do: make the ClusterIssuer letsencrypt" in lines[row + 1]


# ---------------------------------------------------------------------------- each failure once


def test_a_dressed_cluster_of_its_own_passes_the_cluster_checks(cluster: OperatorCluster) -> None:
    names = ("kubernetes", "cluster-api", "cert-manager", "load-balancer", "ingress-class", "storage")
    assert {name: check(cluster, name).status for name in names} == dict.fromkeys(names, Status.OK)


class OldApiServer(http.server.BaseHTTPRequestHandler):
    """An API server of Kubernetes 1.29: it answers /version, and nothing else is asked of it."""

    def do_GET(self) -> None:
        body = json.dumps({"major": "1", "minor": "29", "gitVersion": "v1.29.4+k3s1"}).encode()
        self.send_response(200 if self.path.rstrip("/") == "/version" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def test_kubernetes_older_than_1_30_blocks() -> None:
    server = http.server.ThreadingHTTPServer((OLD_API_HOST, 0), OldApiServer)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        api = client.ApiClient(client.Configuration(host=f"http://{OLD_API_HOST}:{server.server_port}"))
        found = doctor.run_one("kubernetes", doctor.kubernetes, Probe(Site(), api))
    finally:
        server.shutdown()
        server.server_close()
    assert found.status is Status.BLOCKER
    assert "v1.29.4+k3s1: older than 1.30" in found.found
    assert "ValidatingAdmissionPolicy" in found.found
    assert found.todo == "upgrade the management cluster to Kubernetes 1.30 or newer"


def test_without_a_cluster_every_cluster_check_blocks_and_says_why(tmp_path: Path) -> None:
    probe = Probe.connect(Site(kubeconfig=str(tmp_path / "missing-kubeconfig")))
    names = ("kubernetes", "cluster-api", "cert-manager", "load-balancer", "ingress-class", "storage")
    findings = doctor.examine(probe, [c for c in doctor.CHECKS if c[0] in names], deadline=10)
    assert {f.check: f.status for f in findings} == dict.fromkeys(names, Status.BLOCKER)
    assert "no client for the management cluster: ConfigException" in findings[0].found
    assert "FLEXPLANE_KUBECONFIG" in findings[0].todo
    assert {f.found for f in findings[1:]} == {"not checked: no client for the management cluster"}
    assert {f.todo for f in findings[1:]} == {"see the kubernetes check"}


def test_cluster_api_core_not_serving_v1beta2_blocks(cluster: OperatorCluster) -> None:
    old = custom_resource_definition("cluster.x-k8s.io", "Machine", "machines", versions=("v1beta1",))
    cluster.crds.delete_custom_resource_definition("machines.cluster.x-k8s.io")
    cluster.crds.create_custom_resource_definition(old)
    found = check(cluster, "cluster-api")
    assert found.status is Status.BLOCKER
    assert "does not serve v1beta2" in found.found
    assert "machines serves v1beta1" in found.found
    assert "clusterctl upgrade apply" in found.todo


def test_cluster_api_core_older_than_1_11_blocks(cluster: OperatorCluster) -> None:
    cluster.custom.patch_namespaced_custom_object(
        "clusterctl.cluster.x-k8s.io",
        "v1alpha3",
        CAPI_NAMESPACE,
        "providers",
        "cluster-api",
        {"version": "v1.10.5"},
    )
    found = check(cluster, "cluster-api")
    assert found.status is Status.BLOCKER
    assert "Cluster API core is v1.10.5, older than 1.11" in found.found


def test_cluster_api_missing_altogether_only_warns(cluster: OperatorCluster) -> None:
    for crd in CLUSTER_API_CORE_CRDS:
        cluster.crds.delete_custom_resource_definition(crd["metadata"]["name"])
    found = check(cluster, "cluster-api")
    assert found.status is Status.WARNING
    assert "clusterctl init" in found.todo


def test_cert_manager_missing_blocks(cluster: OperatorCluster) -> None:
    cluster.crds.delete_custom_resource_definition("issuers.cert-manager.io")
    found = check(cluster, "cert-manager")
    assert found.status is Status.BLOCKER
    assert "cert-manager is not installed (no CRD for issuers)" in found.found
    assert "helm install cert-manager" in found.todo


def test_an_issuer_not_ready_blocks_and_one_not_made_yet_warns(cluster: OperatorCluster) -> None:
    cluster.issuer("False", "ErrGetKeyPair", 'secret "flexplane-agent-ca" not found')
    found = check(cluster, "cert-manager")
    assert found.status is Status.BLOCKER
    assert 'is not Ready: secret "flexplane-agent-ca" not found' in found.found
    cluster.custom.delete_namespaced_custom_object(
        "cert-manager.io", "v1", seed.NAMESPACE, "issuers", doctor.DEFAULT_ISSUER
    )
    found = check(cluster, "cert-manager")
    assert found.status is Status.WARNING
    assert "step 5 of docs/install.md" in found.todo


def test_load_balancer_services_without_an_address_block(cluster: OperatorCluster) -> None:
    cluster.core.delete_namespaced_service("traefik", LB_NAMESPACE, _preload_content=False)
    assert check(cluster, "load-balancer").status is Status.WARNING  # none to judge by
    cluster.load_balancer("flextenant-mesh", None)
    found = check(cluster, "load-balancer")
    assert found.status is Status.BLOCKER
    assert f"{LB_NAMESPACE}/flextenant-mesh wait" in found.found
    assert "NodePort" in found.todo
    chose_node_ports = Site(namespace=seed.NAMESPACE, load_balancer=False)
    assert check(cluster, "load-balancer", chose_node_ports).status is Status.OK


def test_no_ingress_class_warns(cluster: OperatorCluster) -> None:
    cluster.networking.delete_ingress_class("traefik")
    found = check(cluster, "ingress-class")
    assert found.status is Status.WARNING
    assert "no IngressClass" in found.found


def test_no_default_storage_class_blocks(cluster: OperatorCluster) -> None:
    cluster.storage.patch_storage_class(
        "local-path", {"metadata": {"annotations": {"storageclass.kubernetes.io/is-default-class": "false"}}}
    )
    found = check(cluster, "storage")
    assert found.status is Status.BLOCKER
    assert "no default StorageClass (classes: local-path)" in found.found
    assert "is-default-class=true" in found.todo


def test_a_name_that_does_not_resolve_blocks_when_the_orchestrator_dials_it() -> None:
    found = doctor.dns(Probe(Site(names=(("FLEXPLANE_OIDC_ISSUER", "id.doctor.invalid", True),))))
    assert found.status is Status.BLOCKER
    assert "id.doctor.invalid (FLEXPLANE_OIDC_ISSUER)" in found.found
    names = (
        ("FLEXPLANE_ALLOWED_HOSTS", "cloud.doctor.invalid", False),
        ("FLEXPLANE_ZITADEL_URL", HOST, True),
    )
    assert doctor.dns(Probe(Site(names=names))).status is Status.WARNING


def test_an_issuer_that_does_not_answer_blocks(world_env: dict[str, str]) -> None:
    found = doctor.oidc_issuer(Probe(site_of(world_env, oidc_issuer=f"http://{DEAD}:{free_port(DEAD)}/o")))
    assert found.status is Status.BLOCKER
    assert "did not answer" in found.found
    assert "/readyz waits for it" in found.found


def test_zitadel_refusing_the_key_blocks(world_env: dict[str, str], tmp_path: Path) -> None:
    real = json.loads(Path(world_env["FLEXPLANE_ZITADEL_KEY_FILE"]).read_text())
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    wrong = tmp_path / "key.json"
    wrong.write_text(json.dumps({**real, "key": pem}))
    found = doctor.zitadel(Probe(site_of(world_env, zitadel_key_file=str(wrong))))
    assert found.status is Status.BLOCKER
    assert "unauthenticated" in found.found
    assert "the key was refused" in found.todo


def test_zitadel_not_answering_blocks(world_env: dict[str, str]) -> None:
    found = doctor.zitadel(
        Probe(site_of(world_env, zitadel_url=f"http://{DEAD}:{free_port(DEAD)}", zitadel_timeout=2))
    )
    assert found.status is Status.BLOCKER
    assert "Zitadel" in found.found
    assert "config.zitadel.url" in found.todo


def test_the_registry_refusing_the_pull_account_blocks(world_env: dict[str, str]) -> None:
    found = doctor.agent_registry(Probe(site_of(world_env, registry_password="not-the-password")))
    assert found.status is Status.BLOCKER
    assert "as nodes:" in found.found
    assert "401" in found.found
    assert "pull account" in found.todo


def test_a_check_past_its_deadline_blocks_and_the_others_are_not_held_up() -> None:
    def slow(probe: Probe) -> Finding:
        time.sleep(3)
        return doctor.ok("slow", "late")

    def quick(probe: Probe) -> Finding:
        return doctor.ok("quick", "at once")

    started = time.monotonic()
    findings = doctor.examine(Probe(Site()), [("slow", slow), ("quick", quick)], deadline=0.5)
    assert time.monotonic() - started < 2
    assert [(f.check, f.status) for f in findings] == [("slow", Status.BLOCKER), ("quick", Status.OK)]
    assert findings[0].found == "no answer within 0.5 s"
