"""What tenant-cluster tests share: the CRDs the management cluster serves, installed in the world's
emulator as ``clusterctl init`` and the providers' chart would have (idempotent: ``kubectl apply``)."""

from __future__ import annotations

import base64
import contextlib
import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client, config

from devstack.kube.crds import CLUSTER_API_CORE_CRDS
from devstack.world import World
from orchestrator.models.clusters import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    PROXMOX_CLUSTER,
    WRITTEN,
    namespace_of,
)
from providers.common.crds import load_crds
from tests.apikit import AsUser, GraphQL, vdc_namespace


def install_crds(world: World) -> None:
    """Cluster API core's CRDs and the providers' (from their chart, their source of truth)."""
    world.kube.install_crds([*CLUSTER_API_CORE_CRDS, *load_crds()])


# ------------------------------------------------------------------------------- through the API

VERSION, NEXT = "v1.33.4", "v1.34.2"
VERSION_IMAGES = {VERSION: "debian-12", NEXT: "ubuntu-24.04"}
CLUSTER_FIELDS = """name vdc version phase endpoint network networkPlugin createdAt
  controlPlane { replicas readyReplicas version desiredVersion initialized exposure }
  nodePools { name computeProfile storageProfile network count ready version }
  conditions { object type status reason message lastTransitionTime }"""
CREATE_CLUSTER = f"""mutation($input: CreateKubernetesClusterInput!) {{
  createKubernetesCluster(input: $input) {{ kubernetesCluster {{ {CLUSTER_FIELDS} }}
  errors {{ field message code }} }} }}"""
CREATE_VERSION = """mutation($input: KubernetesVersionInput!) { createKubernetesVersion(input: $input) {
  kubernetesVersion { version image } errors { field message code } } }"""
CREATE_NETWORK = """mutation($input: CreateNetworkInput!) { createNetwork(input: $input) {
  network { id } errors { field message code } } }"""


def ensure_versions(api: AsUser) -> None:
    """The test versions in the catalog (as ADMIN; one made already is fine)."""
    for version, image in VERSION_IMAGES.items():
        answer = api(CREATE_VERSION, user="admin", variables={"input": {"version": version, "image": image}})
        errors = answer.data["createKubernetesVersion"]["errors"]
        assert [e["code"] for e in errors] in ([], ["CONFLICT"]), errors


def ensure_default_network(api: AsUser, vdc: str, zone: str = "zone-a") -> str:
    """The id of the VDC's default network in ``zone`` (made as a VM create would, if it has none)."""
    values = {"name": "default", "zone": zone, "cidr": "10.0.0.0/24"}
    answer = api(CREATE_NETWORK, user="admin", vdc=vdc, variables={"input": values})
    payload = answer.data["createNetwork"]
    assert payload["errors"] == [], payload
    ident: str = payload["network"]["id"]
    return ident


def prepare(world: World, api: GraphQL) -> dict[str, str]:
    """CRDs, versions and the default networks of VDCs demo and other: their network ids by VDC."""
    install_crds(world)
    ensure_versions(api)
    return {vdc: ensure_default_network(api, vdc) for vdc in ("demo", "other")}


def cluster_input(name: str, network: str, count: int = 2, **changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "name": name,
        "version": VERSION,
        "network": network,
        "controlPlane": {"replicas": 2},
        "nodePools": [
            {"name": "workers", "computeProfile": "small", "storageProfile": "standard", "count": count}
        ],
    }
    values.update(changes)
    return values


def delete_all(world: World, vdc: str) -> None:
    """Every cluster object of the VDC's namespace gone (what a test made)."""
    custom = client.CustomObjectsApi(config.new_client_from_config(config_file=str(world.kubeconfig)))
    try:
        for r in WRITTEN:
            answer: Any = custom.list_namespaced_custom_object(
                r.group, r.version, namespace_of(vdc), r.plural
            )
            for item in answer["items"]:
                custom.delete_namespaced_custom_object(
                    r.group, r.version, namespace_of(vdc), r.plural, item["metadata"]["name"]
                )
    finally:
        custom.api_client.close()


def staged_cluster(world: World, vdc: str, name: str) -> str:
    """A cluster of ``vdc`` as a create and the providers would have left it, without node pools (so it
    holds none of the VDC's quota): its Cluster, FlexControlPlane and ProxmoxCluster, an endpoint, and
    its CA Secret. Idempotent; answers its name."""
    from orchestrator.services.clusters import objects

    install_crds(world)
    plan = objects.ClusterPlan(vdc, name, VERSION, "debian-12", "zone-a/none", 1, ())
    api_client = config.new_client_from_config(config_file=str(world.kubeconfig))
    custom, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    namespace = namespace_of(vdc)
    try:
        vdc_namespace(core, vdc)  # as the VDC's first cluster makes it
        plane = objects.proxmox_cluster(plan)
        plane["spec"]["controlPlaneEndpoint"] = {"host": "192.0.2.10", "port": 6443}
        for resource, body in (
            (PROXMOX_CLUSTER, plane),
            (FLEX_CONTROL_PLANE, objects.control_plane(plan)),
            (CLUSTER, objects.cluster(plan)),
        ):
            with contextlib.suppress(client.ApiException):  # made already
                custom.create_namespaced_custom_object(
                    resource.group, resource.version, namespace, resource.plural, body
                )
        with contextlib.suppress(client.ApiException):
            core.create_namespaced_secret(namespace, ca_secret(name))
    finally:
        api_client.close()
    return name


def ca_secret(cluster: str) -> client.V1Secret:
    """A ``<cluster>-ca`` Secret as the control-plane provider writes it, of a new CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return client.V1Secret(
        metadata=client.V1ObjectMeta(name=f"{cluster}-ca", labels={CLUSTER_NAME_LABEL: cluster}),
        type="cluster.x-k8s.io/secret",
        data={"tls.crt": base64.b64encode(pem).decode(), "tls.key": base64.b64encode(key_pem).decode()},
    )
