"""The kubeadm bootstrap provider's part (CABPK) of the devstack's Cluster API stand-in: test-only.

For a worker's KubeadmConfig (owned by its Machine), once the Cluster's control plane is initialized
(``Cluster.status.initialization.controlPlaneInitialized``) and its endpoint known, as CABPK does:

- a bootstrap token ``<id>.<secret>``, written into the tenant cluster's API server as the Secret
  ``kube-system/bootstrap-token-<id>`` (type ``bootstrap.kubernetes.io/token``, group
  ``system:bootstrappers:kubeadm:default-node-token``, 15 minutes: CABPK's default TTL) through the
  ``<cluster>-kubeconfig`` Secret, and recorded in the KubeadmConfig's
  ``spec.joinConfiguration.discovery.bootstrapToken`` with the ``apiServerEndpoint`` (from
  ``Cluster.spec.controlPlaneEndpoint``) and ``caCertHashes`` (``sha256:`` of the CA's
  SubjectPublicKeyInfo, from ``<cluster>-ca``), so that a restart reuses them;
- the bootstrap data Secret named after the config (key ``value``, ``format: cloud-config``, type
  ``cluster.x-k8s.io/secret``, owned by the config): a ``## template: jinja`` cloud-config that writes
  ``/run/kubeadm/kubeadm-join-config.yaml`` (a ``kubeadm.k8s.io/v1beta4`` JoinConfiguration) and runs
  ``kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml``, with the config's ``files``,
  ``preKubeadmCommands`` and ``postKubeadmCommands``;
- ``status.dataSecretName`` and ``status.initialization.dataSecretCreated``.

Not done: control-plane Machines (init and control-plane join), refreshing or rotating tokens, users,
NTP, disk setup, the ignition format.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import logging
import secrets
import string
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes import client
from kubernetes.config import new_client_from_config_dict

from devstack.capi_kube import BOOTSTRAP_GROUP, Body, Kube, conditions, meta, owner_reference

log = logging.getLogger(__name__)

JOIN_CONFIG_PATH = "/run/kubeadm/kubeadm-join-config.yaml"
SUCCESS_PATH = "/run/cluster-api/bootstrap-success.complete"
TOKEN_TTL = datetime.timedelta(minutes=15)
TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"
TOKEN_ALPHABET = string.ascii_lowercase + string.digits
CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
SECRET_TYPE = "cluster.x-k8s.io/secret"


def reconcile_config(kube: Kube, config: Body, machines: list[Body], clusters: list[Body]) -> None:
    """Write a worker's bootstrap data once its cluster can take joins (see the module)."""
    if meta(config).get("deletionTimestamp") or config.get("status", {}).get("dataSecretName"):
        return
    namespace = meta(config)["namespace"]
    owner = next(
        (ref for ref in meta(config).get("ownerReferences") or [] if ref.get("kind") == "Machine"), None
    )
    machine = next((m for m in machines if owner and meta(m)["uid"] == owner["uid"]), None)
    if machine is None:
        return  # CABPK waits for its owner Machine
    cluster_name = machine["spec"]["clusterName"]
    cluster = next((c for c in clusters if meta(c)["name"] == cluster_name), None)
    if cluster is None or not cluster.get("status", {}).get("initialization", {}).get(
        "controlPlaneInitialized"
    ):
        kube.patch_status(
            config,
            {
                "conditions": conditions(
                    config, DataSecretAvailable=(False, "WaitingForControlPlaneInitialization")
                )
            },
        )
        return
    endpoint = cluster.get("spec", {}).get("controlPlaneEndpoint") or {}
    ca = kube.get_secret(namespace, f"{cluster_name}-ca")
    kubeconfig = kube.get_secret(namespace, f"{cluster_name}-kubeconfig")
    if not endpoint.get("host") or ca is None or kubeconfig is None:
        return

    join = config.get("spec", {}).get("joinConfiguration") or {}
    token_spec = join.get("discovery", {}).get("bootstrapToken") or {}
    if not token_spec.get("token"):
        token = new_token()
        write_token(_decoded(kubeconfig, "value"), token, f"bootstrap token of {meta(config)['name']}")
        token_spec = {
            **token_spec,
            "token": token,
            "apiServerEndpoint": f"{endpoint['host']}:{endpoint['port']}",
            "caCertHashes": [ca_cert_hash(_decoded(ca, "tls.crt"))],
        }
        join = {**join, "discovery": {**join.get("discovery", {}), "bootstrapToken": token_spec}}
        config = kube.patch(
            BOOTSTRAP_GROUP,
            "kubeadmconfigs",
            namespace,
            meta(config)["name"],
            {"spec": {"joinConfiguration": join}},
        )

    name = meta(config)["name"]
    value = cloud_config(config["spec"], join)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {CLUSTER_NAME_LABEL: cluster_name, **kube.filter_labels},
            "ownerReferences": [owner_reference(config, controller=True)],
        },
        "type": SECRET_TYPE,
        "data": {
            "value": base64.b64encode(value.encode()).decode(),
            "format": base64.b64encode(b"cloud-config").decode(),
        },
    }
    try:
        kube.core.create_namespaced_secret(namespace, secret)
    except client.ApiException as error:
        if error.status != 409:
            raise
    kube.patch_status(
        config,
        {
            "dataSecretName": name,
            "initialization": {"dataSecretCreated": True},
            "observedGeneration": meta(config).get("generation"),
            "conditions": conditions(config, Ready=(True, "Ready"), DataSecretAvailable=(True, "Available")),
        },
    )
    log.info("kubeadmconfig %s/%s: bootstrap data in Secret %s", namespace, name, name)


def new_token() -> str:
    """A bootstrap token ``[a-z0-9]{6}.[a-z0-9]{16}``."""
    pick = secrets.choice
    return (
        "".join(pick(TOKEN_ALPHABET) for _ in range(6))
        + "."
        + "".join(pick(TOKEN_ALPHABET) for _ in range(16))
    )


def token_secret(token: str, description: str, *, now: datetime.datetime | None = None) -> Body:
    """The Secret that makes a bootstrap token valid in a cluster (kube-system/bootstrap-token-<id>)."""
    token_id, token_secret_value = token.split(".")
    expiration = (now or datetime.datetime.now(datetime.UTC)) + TOKEN_TTL
    data = {
        "token-id": token_id,
        "token-secret": token_secret_value,
        "usage-bootstrap-authentication": "true",
        "usage-bootstrap-signing": "true",
        "auth-extra-groups": TOKEN_GROUP,
        "expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "description": description,
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


def write_token(kubeconfig_text: str, token: str, description: str) -> None:
    """Write the token's Secret into the tenant cluster, with the admin kubeconfig CABPK reads too."""
    api = new_client_from_config_dict(yaml.safe_load(kubeconfig_text))
    try:
        core: Any = client.CoreV1Api(api)
        core.create_namespaced_secret("kube-system", token_secret(token, description))
    finally:
        api.close()


def ca_cert_hash(ca_pem: str) -> str:
    """kubeadm's CA pin: ``sha256:`` and the hex SHA-256 of the CA certificate's SubjectPublicKeyInfo."""
    certificate = x509.load_pem_x509_certificate(ca_pem.encode())
    spki = certificate.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def join_configuration(join: Body) -> Body:
    """kubeadm's v1beta4 JoinConfiguration from the KubeadmConfig's ``spec.joinConfiguration``."""
    registration = dict(join.get("nodeRegistration") or {})
    extra = registration.get("kubeletExtraArgs")
    if isinstance(extra, dict):  # v1beta1's map; v1beta2 and kubeadm's v1beta4 take a list of name/value
        registration["kubeletExtraArgs"] = [{"name": k, "value": str(v)} for k, v in sorted(extra.items())]
    token = join["discovery"]["bootstrapToken"]
    document: Body = {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "JoinConfiguration",
        "discovery": {
            "bootstrapToken": {
                "apiServerEndpoint": token["apiServerEndpoint"],
                "caCertHashes": list(token["caCertHashes"]),
                "token": token["token"],
            }
        },
        "nodeRegistration": registration,
    }
    return document


def cloud_config(spec: Body, join: Body) -> str:
    """A worker's cloud-init user data: a ``## template: jinja`` cloud-config that runs ``kubeadm join``."""
    files: list[Body] = [
        {
            "path": JOIN_CONFIG_PATH,
            "owner": "root:root",
            "permissions": "0640",
            "content": "---\n" + yaml.safe_dump(join_configuration(join), sort_keys=False),
        },
        {
            "path": "/run/cluster-api/placeholder",
            "owner": "root:root",
            "permissions": "0640",
            "content": "This placeholder file is used to create the /run/cluster-api sub directory",
        },
    ]
    for extra in spec.get("files") or []:
        files.append(
            {k: extra[k] for k in ("path", "owner", "permissions", "content", "encoding") if k in extra}
        )
    commands: list[Any] = [
        *(spec.get("preKubeadmCommands") or []),
        f"kubeadm join --config {JOIN_CONFIG_PATH} && echo success > {SUCCESS_PATH}",
        *(spec.get("postKubeadmCommands") or []),
    ]
    body = yaml.safe_dump({"write_files": files, "runcmd": commands}, sort_keys=False, width=1000)
    return "## template: jinja\n#cloud-config\n\n" + body


def _decoded(secret: Body, key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()
