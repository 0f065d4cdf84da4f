"""What the Kubernetes pages' tests share: the management cluster's objects of a tenant cluster, read and
written with the official client as the Cluster API providers would write them.

The world runs no providers here: a test plays them, writing what they write once their work is done (the
control plane's status and endpoint, the CA Secret, each MachineDeployment's replicas), so that the pages
are seen going from Provisioning to Ready without waiting on VMs.
"""

from __future__ import annotations

import base64
import datetime
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client
from kubernetes.config import new_client_from_config

from devstack.world import World
from orchestrator.certificates import key_usage
from orchestrator.models.clusters import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    LISTED,
    MACHINE_DEPLOYMENT,
    PROXMOX_CLUSTER,
    VDC_LABEL,
    Resource,
    namespace_of,
)
from tests.apikit import GraphQL
from tests.orchestrator.clusterkit import NEXT, VERSION, ensure_versions, install_crds

# The Kubernetes versions the tests offer, oldest first: the service's tests' (tests.orchestrator.clusterkit),
# so that a world's catalog holds one set whichever module runs first.
VERSIONS = (VERSION, NEXT)
CREATE_NETWORK = (
    "mutation($input: CreateNetworkInput!) { createNetwork(input: $input) { errors { message } } }"
)
DELETE_NETWORK = "mutation($id: ID!) { deleteNetwork(id: $id) { errors { message } } }"


class Management:
    """The world's management cluster through the official client."""

    def __init__(self, world: World) -> None:
        api = new_client_from_config(config_file=str(world.kubeconfig))
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def objects(self, resource: Resource, vdc: str, cluster: str) -> list[dict[str, Any]]:
        """The cluster's objects of one kind in the VDC's namespace (none of a kind not installed)."""
        try:
            found: dict[str, Any] = self.custom.list_namespaced_custom_object(  # type: ignore[assignment]  # a dict for custom objects
                resource.group,
                resource.version,
                namespace_of(vdc),
                resource.plural,
                label_selector=f"{CLUSTER_NAME_LABEL}={cluster}",
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return []
            raise
        return list(found.get("items") or [])

    def everything(self, vdc: str, cluster: str) -> dict[str, list[dict[str, Any]]]:
        """The cluster's objects of every kind the orchestrator writes, by kind."""
        return {r.kind: self.objects(r, vdc, cluster) for r in LISTED}

    def patch_status(self, resource: Resource, vdc: str, name: str, status: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object_status(
            resource.group, resource.version, namespace_of(vdc), resource.plural, name, {"status": status}
        )

    def patch_spec(self, resource: Resource, vdc: str, name: str, spec: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(
            resource.group, resource.version, namespace_of(vdc), resource.plural, name, {"spec": spec}
        )

    def gone(self, vdc: str, cluster: str) -> None:
        """Whatever is left of the cluster's objects, deleted (the test's own clean-up)."""
        for resource in LISTED:
            for item in self.objects(resource, vdc, cluster):
                name = item["metadata"]["name"]
                if item["metadata"].get("finalizers"):
                    self.custom.patch_namespaced_custom_object(
                        resource.group,
                        resource.version,
                        namespace_of(vdc),
                        resource.plural,
                        name,
                        {"metadata": {"finalizers": None}},
                    )
                try:
                    self.custom.delete_namespaced_custom_object(
                        resource.group, resource.version, namespace_of(vdc), resource.plural, name
                    )
                except client.ApiException as exc:
                    if exc.status != 404:
                        raise
        for secret in (f"{cluster}-ca", f"{cluster}-kubeconfig"):
            try:
                self.core.delete_namespaced_secret(secret, namespace_of(vdc))
            except client.ApiException as exc:
                if exc.status != 404:
                    raise


def self_signed_ca(cluster: str) -> tuple[bytes, bytes]:
    """A cluster CA (certificate, key) in PEM, as the control-plane provider renders one."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{cluster}-ca")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            key_usage(signs_certificates=True),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def control_plane_up(
    management: Management, vdc: str, cluster: str, host: str, ca: bytes, key: bytes
) -> None:
    """What the control-plane provider writes once the cluster's API server answers: its endpoint (on the
    FlexControlPlane and the ProxmoxCluster), its CA Secret, and the FlexControlPlane's status (its health
    too)."""
    endpoint = {"controlPlaneEndpoint": {"host": host, "port": 6443}}
    ns = namespace_of(vdc)
    labels = {CLUSTER_NAME_LABEL: cluster, VDC_LABEL: vdc}
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(name=f"{cluster}-ca", namespace=ns, labels=labels),
        type="cluster.x-k8s.io/secret",
        data={"tls.crt": base64.b64encode(ca).decode(), "tls.key": base64.b64encode(key).decode()},
    )
    try:
        management.core.create_namespaced_secret(ns, secret)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    management.patch_spec(PROXMOX_CLUSTER, vdc, cluster, endpoint)
    management.patch_spec(FLEX_CONTROL_PLANE, vdc, cluster, endpoint)
    management.patch_spec(CLUSTER, vdc, cluster, endpoint)
    management.patch_status(PROXMOX_CLUSTER, vdc, cluster, {"initialization": {"provisioned": True}})
    [plane] = management.objects(FLEX_CONTROL_PLANE, vdc, cluster)
    replicas, version = plane["spec"].get("replicas", 2), plane["spec"]["version"]
    management.patch_status(
        FLEX_CONTROL_PLANE,
        vdc,
        cluster,
        {
            "initialization": {"controlPlaneInitialized": True},
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "upToDateReplicas": replicas,
            "version": version,
            "externalManagedControlPlane": True,
            # Its health as the provider sees it then: the API server ready, etcd's member, no node yet.
            "health": {
                "apiServer": {"ready": True, "reason": "Ready", "message": ""},
                "etcd": {"members": 1, "readyMembers": 1},
                "konnectivity": {"observed": True, "agents": 0, "connectedAgents": 0},
            },
        },
    )


def nodes_up(management: Management, vdc: str, cluster: str) -> None:
    """What Cluster API core reflects once every worker has joined: each MachineDeployment's replicas as
    asked for, all ready and up to date; and what the control-plane provider sees next, each node's
    Konnectivity agent connected."""
    nodes = 0
    for deployment in management.objects(MACHINE_DEPLOYMENT, vdc, cluster):
        count = deployment["spec"].get("replicas", 0)
        nodes += count
        status = {
            "replicas": count,
            "readyReplicas": count,
            "availableReplicas": count,
            "upToDateReplicas": count,
        }
        management.patch_status(MACHINE_DEPLOYMENT, vdc, deployment["metadata"]["name"], status)
    agents = {"observed": True, "agents": nodes, "connectedAgents": nodes}
    management.patch_status(FLEX_CONTROL_PLANE, vdc, cluster, {"health": {"konnectivity": agents}})


def prepare(world: World, api: GraphQL) -> Management:
    """The management cluster as the pages need it: Cluster API core's CRDs and ours (as on a management
    cluster with the providers installed), and the catalog's Kubernetes versions."""
    install_crds(world)
    ensure_versions(api)
    return Management(world)


@contextmanager
def vdc_network(api: GraphQL, vdc: str = "demo", zone: str = "zone-a") -> Iterator[str]:
    """A network of the VDC for the clusters' nodes, ``<zone>/<name>``, deleted afterwards."""
    suffix = uuid.uuid4().bytes
    name = f"kn{suffix.hex()[:8]}"
    network = {"name": name, "zone": zone, "cidr": f"10.{150 + suffix[0] % 50}.{suffix[1]}.0/24"}
    made = api(CREATE_NETWORK, user="alice", vdc=vdc, variables={"input": network})
    assert made.data["createNetwork"]["errors"] == [], made.body
    try:
        yield f"{zone}/{name}"
    finally:
        api(DELETE_NETWORK, user="alice", vdc=vdc, variables={"id": f"{zone}/{name}"})


def create_form(name: str, network: str, fields: dict[str, str] | None = None) -> dict[str, str]:
    """The create form as alice fills it in: one pool of 3 small nodes on the VDC's network."""
    values = {
        "name": name,
        "version": VERSIONS[0],
        "control_plane_replicas": "2",
        "network": network,
        "network_plugin": "cilium",
        "pools": "1",
        "pools-0-name": "workers",
        "pools-0-compute_profile": "small",
        "pools-0-storage_profile": "standard",
        "pools-0-count": "3",
        "pools-0-network": "",
    }
    values.update(fields or {})
    return values


def create_in_portal(
    world: World, session: requests.Session, name: str, network: str, vdc: str = "demo"
) -> requests.Response:
    """The create form sent as the browser sends it (after the page that sets the CSRF cookie)."""
    page = f"{world.url}/vdc/{vdc}/kubernetes/new/"
    session.get(page, timeout=60)
    token = session.cookies.get("csrftoken", domain=world.cfg.orchestrator_host)
    return session.post(
        page,
        data={"csrfmiddlewaretoken": token, **create_form(name, network)},
        headers={"Referer": page},
        allow_redirects=False,
        timeout=60,
    )


@contextmanager
def cleaned(management: Management, vdc: str, cluster: str) -> Iterator[str]:
    """The cluster's name, its objects deleted afterwards whatever the test did."""
    try:
        yield cluster
    finally:
        management.gone(vdc, cluster)
