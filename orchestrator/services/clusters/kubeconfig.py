"""A tenant's kubeconfig: a short-lived client certificate of the user, signed with the cluster's CA.

Why this and not the cluster's admin kubeconfig, nor OIDC:

- The admin kubeconfig (``<cluster>-kubeconfig``) is one key for everyone, forever (until the CA is
  rotated): a download that leaks is a cluster lost, a member who leaves the VDC keeps it, and the
  tenant cluster's audit log says ``kubernetes-admin`` for whoever did what.
- OIDC against the platform's identity provider would be best for people, but needs the hosted API
  server to reach and trust the issuer, and every client a login plugin (``kubectl oidc-login``); the
  official Python client and CI jobs then need a refresh flow of their own.
- A client certificate per download works with every client as is. It names the user (CN: their email,
  else their subject: the tenant cluster's audit log says who), carries the group
  ``flexplane:vdc:<vdc>`` (O), which the control-plane provider binds to ``cluster-admin`` in the
  tenant cluster, and expires after ``VALIDITY`` (8 hours). Kubernetes cannot revoke a client
  certificate, so the short life is the revocation: a member removed from the VDC loses access within
  8 hours at most, and a leaked file is dead by then. Its key is made here for this download, never
  stored; each issuance is audited (the GraphQL field and the portal's download record it).

Reads: the cluster (five lists) and its CA Secret ``<cluster>-ca`` (one read).
"""

from __future__ import annotations

import base64
import datetime

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from orchestrator.certificates import key_usage
from orchestrator.errors import Conflict, UpstreamFailure
from orchestrator.models.clusters import Kubeconfig, namespace_of
from orchestrator.services.clusters.reads import acting_vdc, get_cluster
from orchestrator.services.context import Context

VALIDITY = datetime.timedelta(hours=8)
# Clocks of the tenant's API server and ours may differ a little.
BACKDATE = datetime.timedelta(minutes=5)
GROUP_PREFIX = "flexplane:vdc:"


def group_of(vdc: str) -> str:
    """The tenant cluster's group of the VDC's members (bound to cluster-admin there)."""
    return f"{GROUP_PREFIX}{vdc}"


def _ca(ctx: Context, vdc: str, cluster: str) -> tuple[x509.Certificate, bytes, object]:
    secret = ctx.clusterapi.secret(namespace_of(vdc), f"{cluster}-ca")
    if secret is None or not secret.data.get("tls.crt") or not secret.data.get("tls.key"):
        raise Conflict(
            f"Kubernetes cluster {cluster} has no certificate authority yet: it is still being made"
        )
    pem = secret.data["tls.crt"]
    try:
        certificate = x509.load_pem_x509_certificates(pem)[0]
        key = serialization.load_pem_private_key(secret.data["tls.key"], password=None)
    except (ValueError, IndexError, TypeError) as exc:
        raise UpstreamFailure("management cluster", f"Secret {cluster}-ca does not hold a CA: {exc}") from exc
    return certificate, pem, key


def issue(
    ca_certificate: x509.Certificate, ca_key: object, user: str, group: str, now: datetime.datetime
) -> tuple[bytes, bytes, datetime.datetime]:
    """A client certificate (PEM) and its new key (PEM) for ``user`` in ``group``, and its expiry."""
    key = ec.generate_private_key(ec.SECP256R1())
    expires = now + VALIDITY
    builder = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, group),
                    x509.NameAttribute(NameOID.COMMON_NAME, user),
                ]
            )
        )
        .issuer_name(ca_certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(expires)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            key_usage(),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    )
    algorithm = (
        None if isinstance(ca_key, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey) else hashes.SHA256()
    )
    certificate = builder.sign(ca_key, algorithm)  # type: ignore[arg-type]  # any CA key type the Secret holds
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem, expires


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def render(cluster: str, server: str, ca_pem: bytes, user: str, cert_pem: bytes, key_pem: bytes) -> str:
    """The kubeconfig file: one cluster, one user, one context (current)."""
    entry = f"{user}@{cluster}"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}
        ],
        "users": [
            {
                "name": entry,
                "user": {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)},
            }
        ],
        "contexts": [{"name": entry, "context": {"cluster": cluster, "user": entry}}],
        "current-context": entry,
        "preferences": {},
    }
    return yaml.safe_dump(document, sort_keys=False)


def kubeconfig(ctx: Context, cluster: str) -> Kubeconfig:
    """A kubeconfig of the caller for a cluster of the request's VDC (USER of it, or ADMIN), valid 8 h.

    ``Conflict`` while the cluster has no endpoint or CA yet."""
    vdc = acting_vdc(ctx)
    found = get_cluster(ctx, cluster)
    if found.endpoint is None:
        raise Conflict(f"Kubernetes cluster {cluster} has no API endpoint yet: it is still being made")
    certificate, ca_pem, ca_key = _ca(ctx, vdc.id, found.name)
    user = ctx.principal.email or ctx.principal.subject
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)  # what a certificate can say
    cert_pem, key_pem, expires = issue(certificate, ca_key, user, group_of(vdc.id), now)
    text = render(found.name, found.endpoint, ca_pem, user, cert_pem, key_pem)
    return Kubeconfig(text=text, expires_at=expires, cluster=found.name, endpoint=found.endpoint)
