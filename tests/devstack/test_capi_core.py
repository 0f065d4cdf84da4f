"""The Cluster API stand-in (devstack/capi_core.py) against the emulator, the providers' part played by hand.

A management cluster and a tenant API server (two emulators on loopback); the test writes what the
providers would (the ProxmoxCluster's and FlexControlPlane's status, the ``<cluster>-ca`` and
``<cluster>-kubeconfig`` Secrets, each ProxmoxMachine's providerID) and checks what core and CABPK do.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes import client
from kubernetes.config import new_client_from_config

from devstack.capi_core import CapiCore
from devstack.kube import KubeServer
from devstack.kube.crds import custom_resource_definition
from devstack.pki import CertificateAuthority
from tests import addresses
from tests.apikit import eventually

T = TypeVar("T")
Body = dict[str, Any]

# A third octet of the worker's world subnet for this suite's two servers (see tests/addresses.py).
CAPI_CORE_SUITE = 216
HOST = addresses.address(CAPI_CORE_SUITE, 1)
TENANT_HOST = addresses.address(CAPI_CORE_SUITE, 2)
INFRA, CP = "infrastructure.flexplane.io", "controlplane.flexplane.io"
CORE, BOOTSTRAP = "cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io"
CONTRACT = {"cluster.x-k8s.io/v1beta2": "v1alpha1"}


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 15.0) -> T:
    return cast(T, eventually(probe, timeout, what))  # a true value: never None


class Mgmt:
    def __init__(self, kubeconfig: Path) -> None:
        self.api = new_client_from_config(config_file=str(kubeconfig))
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.core: Any = client.CoreV1Api(self.api)

    def list(self, group: str, plural: str, ns: str, selector: str = "") -> list[Body]:
        version = "v1beta2" if group in (CORE, BOOTSTRAP) else "v1alpha1"
        items: list[Body] = self.custom.list_namespaced_custom_object(
            group, version, ns, plural, label_selector=selector
        )["items"]
        return items

    def get(self, group: str, plural: str, ns: str, name: str) -> Body | None:
        version = "v1beta2" if group in (CORE, BOOTSTRAP) else "v1alpha1"
        try:
            obj: Body = self.custom.get_namespaced_custom_object(group, version, ns, plural, name)
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return obj

    def create(self, ns: str, body: Body) -> Body:
        group, _, version = body["apiVersion"].rpartition("/")
        plural = body["kind"].lower() + "s"
        obj: Body = self.custom.create_namespaced_custom_object(group, version, ns, plural, body)
        return obj

    def patch(
        self, group: str, plural: str, ns: str, name: str, patch: Body, *, status: bool = False
    ) -> None:
        version = "v1beta2" if group in (CORE, BOOTSTRAP) else "v1alpha1"
        if status:
            self.custom.patch_namespaced_custom_object_status(group, version, ns, plural, name, patch)
        else:
            self.custom.patch_namespaced_custom_object(group, version, ns, plural, name, patch)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KubeServer, KubeServer, Path, Path]]:
    scratch = tmp_path_factory.mktemp("capi-core")
    with KubeServer.start(HOST) as mgmt, KubeServer.start(TENANT_HOST) as tenant:
        yield (
            mgmt,
            tenant,
            mgmt.write_kubeconfig(scratch / "mgmt"),
            tenant.write_kubeconfig(scratch / "tenant"),
        )


@pytest.fixture(scope="module")
def mgmt(servers: tuple[KubeServer, KubeServer, Path, Path]) -> Iterator[Mgmt]:
    kube = Mgmt(servers[2])
    extensions: Any = client.ApiextensionsV1Api(kube.api)
    for group, kind in (
        (INFRA, "ProxmoxCluster"),
        (INFRA, "ProxmoxMachine"),
        (INFRA, "ProxmoxMachineTemplate"),
        (CP, "FlexControlPlane"),
    ):
        extensions.create_custom_resource_definition(
            custom_resource_definition(
                group, kind, kind.lower() + "s", versions=("v1alpha1",), labels=CONTRACT
            )
        )
    core = CapiCore(servers[2]).start()
    yield kube
    core.stop()
    assert not [e for e in core.loop.errors if "Pending" not in e and "404" not in e], core.loop.errors


@pytest.fixture(scope="module")
def tenant(servers: tuple[KubeServer, KubeServer, Path, Path]) -> Mgmt:
    return Mgmt(servers[3])


def cluster_objects(ns: str, name: str, replicas: int) -> list[Body]:
    labels = {"cluster.x-k8s.io/cluster-name": name, "flexplane.io/vdc": "demo"}
    ref = {
        "infrastructureRef": {"apiGroup": INFRA, "kind": "ProxmoxCluster", "name": name},
        "controlPlaneRef": {"apiGroup": CP, "kind": "FlexControlPlane", "name": name},
    }
    pool = f"{name}-pool"
    return [
        {
            "apiVersion": f"{INFRA}/v1alpha1",
            "kind": "ProxmoxCluster",
            "metadata": {"name": name, "labels": labels},
            "spec": {"vdc": "demo", "network": "net-1"},
        },
        {
            "apiVersion": f"{CP}/v1alpha1",
            "kind": "FlexControlPlane",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 2, "version": "v1.34.2"},
        },
        {
            "apiVersion": f"{INFRA}/v1alpha1",
            "kind": "ProxmoxMachineTemplate",
            "metadata": {"name": f"{pool}-a", "labels": labels},
            "spec": {
                "template": {"spec": {"computeProfile": "small", "storageProfile": "fast", "image": "k8s"}}
            },
        },
        {
            "apiVersion": f"{BOOTSTRAP}/v1beta2",
            "kind": "KubeadmConfigTemplate",
            "metadata": {"name": f"{pool}-a", "labels": labels},
            "spec": {
                "template": {
                    "spec": {
                        "joinConfiguration": {
                            "nodeRegistration": {
                                "kubeletExtraArgs": [
                                    {
                                        "name": "provider-id",
                                        "value": "proxmox://{{ ds.meta_data.instance_id }}",
                                    }
                                ]
                            }
                        }
                    }
                }
            },
        },
        {
            "apiVersion": f"{CORE}/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": name, "labels": labels},
            "spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["10.244.0.0/16"]}}, **ref},
        },
        {
            "apiVersion": f"{CORE}/v1beta2",
            "kind": "MachineDeployment",
            "metadata": {"name": pool, "labels": {**labels, "flexplane.io/node-pool": "pool"}},
            "spec": {
                "clusterName": name,
                "replicas": replicas,
                "deletion": {"order": "Newest"},
                "template": {
                    "metadata": {"labels": {"flexplane.io/node-pool": "pool"}},
                    "spec": {
                        "clusterName": name,
                        "version": "v1.34.2",
                        "bootstrap": {
                            "configRef": {
                                "apiGroup": BOOTSTRAP,
                                "kind": "KubeadmConfigTemplate",
                                "name": f"{pool}-a",
                            }
                        },
                        "infrastructureRef": {
                            "apiGroup": INFRA,
                            "kind": "ProxmoxMachineTemplate",
                            "name": f"{pool}-a",
                        },
                    },
                },
            },
        },
    ]


def play_providers(kube: Mgmt, ns: str, name: str, tenant_kubeconfig: Path, ca: CertificateAuthority) -> None:
    """What the infrastructure and control-plane providers would write for the cluster."""
    kube.patch(
        INFRA,
        "proxmoxclusters",
        ns,
        name,
        {
            "status": {
                "initialization": {"provisioned": True},
                "failureDomains": [
                    {"name": "zone-a", "controlPlane": False},
                    {"name": "zone-b", "controlPlane": False},
                ],
            }
        },
        status=True,
    )
    kube.patch(
        CP,
        "flexcontrolplanes",
        ns,
        name,
        {"spec": {"controlPlaneEndpoint": {"host": TENANT_HOST, "port": 6443}}},
    )
    for secret, data in (
        (f"{name}-ca", {"tls.crt": ca.cert_pem.decode(), "tls.key": "unused"}),
        (f"{name}-kubeconfig", {"value": tenant_kubeconfig.read_text()}),
    ):
        kube.core.create_namespaced_secret(
            ns,
            {
                "metadata": {"name": secret, "labels": {"cluster.x-k8s.io/cluster-name": name}},
                "type": "cluster.x-k8s.io/secret",
                "stringData": data,
            },
        )
    kube.patch(
        CP,
        "flexcontrolplanes",
        ns,
        name,
        {"status": {"initialization": {"controlPlaneInitialized": True}, "replicas": 2, "readyReplicas": 2}},
        status=True,
    )


def provision(kube: Mgmt, ns: str) -> None:
    """The infrastructure provider's part for every ProxmoxMachine with bootstrap data: a providerID."""
    for machine in kube.list(CORE, "machines", ns):
        if not machine["spec"]["bootstrap"].get("dataSecretName"):
            continue
        name = machine["metadata"]["name"]
        infra = kube.get(INFRA, "proxmoxmachines", ns, name)
        if infra is None or infra.get("status", {}).get("initialization", {}).get("provisioned"):
            continue
        kube.patch(INFRA, "proxmoxmachines", ns, name, {"spec": {"providerID": f"proxmox://{name}"}})
        kube.patch(
            INFRA,
            "proxmoxmachines",
            ns,
            name,
            {
                "status": {
                    "initialization": {"provisioned": True},
                    "addresses": [
                        {"type": "InternalIP", "address": "10.0.0.9"},
                        {"type": "Hostname", "address": name},
                    ],
                }
            },
            status=True,
        )


def provisioned(kube: Mgmt, ns: str, count: int) -> list[Body] | None:
    provision(kube, ns)
    machines = [m for m in kube.list(CORE, "machines", ns) if not m["metadata"].get("deletionTimestamp")]
    done = [m for m in machines if m.get("status", {}).get("phase") == "Provisioned"]
    return machines if len(machines) == count and len(done) == count else None


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    return CertificateAuthority.create(tmp_path_factory.mktemp("tenant-ca"))


@pytest.fixture
def cluster(
    request: pytest.FixtureRequest, mgmt: Mgmt, servers: Any, ca: CertificateAuthority
) -> tuple[str, str]:
    ns, name = f"vdc-{hashlib.sha256(request.node.name.encode()).hexdigest()[:8]}", "c1"
    mgmt.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    for body in cluster_objects(ns, name, 3):
        mgmt.create(ns, body)
    play_providers(mgmt, ns, name, servers[3], ca)
    return ns, name


def test_a_cluster_owns_its_parts_and_reports_their_status(mgmt: Mgmt, cluster: tuple[str, str]) -> None:
    ns, name = cluster

    def ready() -> Body | None:
        obj = mgmt.get(CORE, "clusters", ns, name)
        init = (obj or {}).get("status", {}).get("initialization", {})
        return obj if init.get("infrastructureProvisioned") and init.get("controlPlaneInitialized") else None

    found = wait_for(ready, "the Cluster's status")
    assert found["spec"]["controlPlaneEndpoint"] == {"host": TENANT_HOST, "port": 6443}
    assert [d["name"] for d in found["status"]["failureDomains"]] == ["zone-a", "zone-b"]
    assert "cluster.cluster.x-k8s.io" in found["metadata"]["finalizers"]
    for group, plural in ((INFRA, "proxmoxclusters"), (CP, "flexcontrolplanes")):
        part = mgmt.get(group, plural, ns, name)
        assert part is not None
        assert [o["uid"] for o in part["metadata"]["ownerReferences"]] == [found["metadata"]["uid"]]


def test_a_machine_deployment_makes_machines_with_cabpk_bootstrap_data(
    mgmt: Mgmt, tenant: Mgmt, cluster: tuple[str, str], ca: CertificateAuthority
) -> None:
    ns, name = cluster
    machines = wait_for(lambda: provisioned(mgmt, ns, 3), "three provisioned Machines")
    deployment = mgmt.get(CORE, "machinedeployments", ns, f"{name}-pool")
    assert deployment is not None
    assert sorted(m["spec"]["failureDomain"] for m in machines) == ["zone-a", "zone-a", "zone-b"]
    for machine in machines:
        machine_name = machine["metadata"]["name"]
        assert machine_name.startswith(f"{name}-pool-")
        assert len(machine_name) == len(f"{name}-pool-") + 5
        assert machine["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == name
        assert machine["metadata"]["labels"]["cluster.x-k8s.io/deployment-name"] == f"{name}-pool"
        assert machine["metadata"]["labels"]["flexplane.io/vdc"] == "demo"
        assert machine["metadata"]["ownerReferences"][0]["uid"] == deployment["metadata"]["uid"]
        assert machine["spec"]["providerID"] == f"proxmox://{machine_name}"
        assert machine["status"]["addresses"][1] == {"type": "Hostname", "address": machine_name}
        infra = mgmt.get(INFRA, "proxmoxmachines", ns, machine_name)
        assert infra is not None
        assert infra["metadata"]["annotations"]["cluster.x-k8s.io/cloned-from-name"] == f"{name}-pool-a"
        assert infra["metadata"]["annotations"]["cluster.x-k8s.io/cloned-from-groupkind"] == (
            "ProxmoxMachineTemplate.infrastructure.flexplane.io"
        )
        assert infra["metadata"]["ownerReferences"][0]["uid"] == machine["metadata"]["uid"]
        assert infra["spec"]["computeProfile"] == "small"
        assert machine["spec"]["bootstrap"]["dataSecretName"] == machine_name

        secret = mgmt.core.read_namespaced_secret(machine_name, ns)
        assert secret.type == "cluster.x-k8s.io/secret"
        assert base64.b64decode(secret.data["format"]) == b"cloud-config"
        value = base64.b64decode(secret.data["value"]).decode()
        assert value.startswith("## template: jinja\n#cloud-config\n")
        cloud = yaml.safe_load(value)
        assert cloud["runcmd"][0].startswith("kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml")
        join = yaml.safe_load(cloud["write_files"][0]["content"])
        assert cloud["write_files"][0]["path"] == "/run/kubeadm/kubeadm-join-config.yaml"
        assert join["apiVersion"] == "kubeadm.k8s.io/v1beta4"
        assert join["kind"] == "JoinConfiguration"
        discovery = join["discovery"]["bootstrapToken"]
        assert discovery["apiServerEndpoint"] == f"{TENANT_HOST}:6443"
        spki = ca.certificate.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        assert discovery["caCertHashes"] == ["sha256:" + hashlib.sha256(spki).hexdigest()]
        assert join["nodeRegistration"]["kubeletExtraArgs"] == [
            {"name": "provider-id", "value": "proxmox://{{ ds.meta_data.instance_id }}"}
        ]
        token_id, token_secret = discovery["token"].split(".")
        token = tenant.core.read_namespaced_secret(f"bootstrap-token-{token_id}", "kube-system")
        assert token.type == "bootstrap.kubernetes.io/token"
        assert base64.b64decode(token.data["token-secret"]).decode() == token_secret
        assert base64.b64decode(token.data["auth-extra-groups"]) == (
            b"system:bootstrappers:kubeadm:default-node-token"
        )
    assert x509.load_pem_x509_certificate(ca.cert_pem)  # the hash above is of this CA's key


def test_scaling_down_removes_the_marked_machine_then_the_newest(
    mgmt: Mgmt, cluster: tuple[str, str]
) -> None:
    ns, name = cluster
    first = wait_for(lambda: provisioned(mgmt, ns, 3), "three provisioned Machines")
    mgmt.patch(CORE, "machinedeployments", ns, f"{name}-pool", {"spec": {"replicas": 5}})
    five = wait_for(lambda: provisioned(mgmt, ns, 5), "five provisioned Machines")
    original = {m["metadata"]["name"] for m in first}
    added = {m["metadata"]["name"] for m in five} - original
    marked = sorted(original)[0]
    mgmt.patch(
        CORE, "machines", ns, marked, {"metadata": {"annotations": {"cluster.x-k8s.io/delete-machine": ""}}}
    )
    mgmt.patch(CORE, "machinedeployments", ns, f"{name}-pool", {"spec": {"replicas": 2}})
    two = wait_for(lambda: provisioned(mgmt, ns, 2), "two Machines left")
    left = {m["metadata"]["name"] for m in two}
    assert left == original - {marked}
    assert not added & left

    def children_gone() -> bool:
        gone = added | {marked}
        return not any(
            mgmt.get(group, plural, ns, machine) is not None
            for machine in gone
            for group, plural in ((INFRA, "proxmoxmachines"), (BOOTSTRAP, "kubeadmconfigs"))
        )

    wait_for(children_gone, "the removed Machines' ProxmoxMachines and KubeadmConfigs to go")


def test_a_paused_cluster_is_left_alone_until_it_is_unpaused(mgmt: Mgmt, cluster: tuple[str, str]) -> None:
    ns, name = cluster
    wait_for(lambda: provisioned(mgmt, ns, 3), "three provisioned Machines")
    mgmt.patch(CORE, "clusters", ns, name, {"spec": {"paused": True}})
    mgmt.patch(CORE, "machinedeployments", ns, f"{name}-pool", {"spec": {"replicas": 4}})
    with pytest.raises(AssertionError):  # no fourth Machine while paused (the change wakes a pass at once)
        wait_for(lambda: len(mgmt.list(CORE, "machines", ns)) == 4 or None, "a fourth Machine", timeout=2.0)

    mgmt.patch(CORE, "clusters", ns, name, {"spec": {"paused": None}})
    wait_for(lambda: provisioned(mgmt, ns, 4), "four provisioned Machines, once unpaused")


def test_a_version_change_rolls_the_machines_one_at_a_time(mgmt: Mgmt, cluster: tuple[str, str]) -> None:
    ns, name = cluster
    before = {m["metadata"]["name"] for m in wait_for(lambda: provisioned(mgmt, ns, 3), "three Machines")}
    mgmt.patch(
        CORE,
        "machinedeployments",
        ns,
        f"{name}-pool",
        {"spec": {"template": {"spec": {"version": "v1.35.0"}}}},
    )
    most = 0

    def rolled() -> list[Body] | None:
        nonlocal most
        provision(mgmt, ns)
        machines = [m for m in mgmt.list(CORE, "machines", ns) if not m["metadata"].get("deletionTimestamp")]
        most = max(most, len(machines))
        done = provisioned(mgmt, ns, 3)
        return done if done and not {m["metadata"]["name"] for m in done} & before else None

    after = wait_for(rolled, "the rollout")
    assert {m["spec"]["version"] for m in after} == {"v1.35.0"}
    assert most <= 4  # one surge Machine at a time


def test_deleting_a_cluster_deletes_everything_it_owns(mgmt: Mgmt, cluster: tuple[str, str]) -> None:
    ns, name = cluster
    wait_for(lambda: provisioned(mgmt, ns, 3), "three Machines")
    mgmt.custom.delete_namespaced_custom_object(CORE, "v1beta2", ns, "clusters", name)

    def empty() -> bool:
        left = [
            (plural, len(mgmt.list(group, plural, ns)))
            for group, plural in (
                (CORE, "clusters"),
                (CORE, "machinedeployments"),
                (CORE, "machines"),
                (BOOTSTRAP, "kubeadmconfigs"),
                (INFRA, "proxmoxmachines"),
                (INFRA, "proxmoxclusters"),
                (CP, "flexcontrolplanes"),
            )
        ]
        return all(count == 0 for _, count in left)

    wait_for(empty, "every Cluster API object to go")
    secrets = mgmt.core.list_namespaced_secret(ns, field_selector="type=cluster.x-k8s.io/secret").items
    assert sorted(s.metadata.name for s in secrets) == [
        f"{name}-ca",
        f"{name}-kubeconfig",
    ]  # the providers' own
