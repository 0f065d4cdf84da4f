"""The hosted control plane's PKI: every certificate, key and kubeconfig kubeadm would have made.

The files are kubeadm's, under kubeadm's names (``/etc/kubernetes/pki`` and ``/etc/kubernetes/*.conf``),
so an operator who knows kubeadm finds them where they expect; they live in two Secrets of the
control plane's namespace (:func:`pki_secret_data`, :func:`kubeconfig_secret_data`) and are made once:
:func:`ensure_pki` keeps every key and certificate it is given and only fills in what is missing, or
reissues a serving certificate whose names no longer cover the endpoint (the endpoint is learnt after
the Service is created, and a new LoadBalancer address would otherwise leave it unreachable).

Keys are ECDSA P-256 (kubeadm's ``encryptionAlgorithm: ECDSA-P256``): every component, Konnectivity
and the service-account token signer accept them, and one takes microseconds to make where an RSA
key takes tens of milliseconds, which counts at a hundred clusters. Validity is kubeadm's: CAs ten
years, leaves one year; a leaf is reissued 60 days before it expires (the Deployment's pods carry the
PKI's digest, so they roll onto it). The CAs are not renewed: a CA's rotation (every node's trust
changes) is out of scope.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from orchestrator.certificates import key_usage

CA_VALIDITY = datetime.timedelta(days=3650)
LEAF_VALIDITY = datetime.timedelta(days=365)
# A leaf this close to its expiry is reissued on the next reconcile (and the pods roll to it).
RENEW_BEFORE = datetime.timedelta(days=60)
# Certificates are valid from a little before they are made: clocks of the nodes drift.
BACKDATE = datetime.timedelta(minutes=5)

SERVER = "server"
CLIENT = "client"
PEER = "peer"  # etcd's peer certificates serve and connect with the same pair

# The in-cluster names of the API server, as kubeadm puts them in its serving certificate.
KUBERNETES_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"

# Identities (CN, O) as kubeadm and apiserver-network-proxy name them.
ADMIN = ("kubernetes-admin", ("system:masters",))
CONTROLLER_MANAGER = ("system:kube-controller-manager", ())
SCHEDULER = ("system:kube-scheduler", ())
# No group: the tenant binds this user to system:kubelet-api-admin only (kubeadm puts it in a group
# bound to cluster-admin, more than logs, exec and metrics need).
KUBELET_CLIENT = ("kube-apiserver-kubelet-client", ())
FRONT_PROXY_CLIENT = ("front-proxy-client", ())
ETCD_CLIENT = ("kube-apiserver-etcd-client", ())
KONNECTIVITY_CLIENT = ("system:konnectivity-server", ())
# The cloud controller (providers.cloud): no group; the tenant binds this user to a ClusterRole of the Nodes
# and Services it initializes and serves (tenant.cloud_controller_rbac), nothing more.
CLOUD_CONTROLLER = ("flexplane:cloud-controller", ())
# The CSI driver's controller's sidecars (providers.csi, providers.controlplane.storage): no group; the tenant
# binds this user to a ClusterRole of the volumes, claims, attachments and what they read (storage.rbac).
CSI_CONTROLLER = ("flexplane:csi-controller", ())
# The Prometheus Operator's scrapes of the API server's /metrics (providers.controlplane.monitoring): no
# group; the tenant binds this user to a ClusterRole of ``get`` on /metrics only (tenant.metrics_rbac).
METRICS_SCRAPER = ("flexplane:metrics", ())

# The files of the ``pki`` Secret: (key, certificate) pairs by kubeadm's base names.
CAS = ("ca", "front-proxy-ca", "etcd-ca")
LEAVES = (
    "apiserver",
    "apiserver-kubelet-client",
    "apiserver-etcd-client",
    "front-proxy-client",
    "etcd-server",
    "etcd-peer",
    "konnectivity-server",
    "konnectivity-client",
    "admin",
    "controller-manager",
    "scheduler",
    "cloud-controller",
    "csi-controller",
    "metrics-scraper",
)
KUBECONFIGS = {
    # file name in the kubeconfigs Secret: the leaf whose credentials it carries
    "admin.conf": "admin",
    "controller-manager.conf": "controller-manager",
    "scheduler.conf": "scheduler",
    "konnectivity-server.conf": "konnectivity-client",
}
# Inside the pod every component reaches the API server on loopback (the serving cert names it).
LOCAL_SERVER = "https://127.0.0.1:6443"


@dataclass(frozen=True)
class Names:
    """Who the control plane is and where it is reached: what the serving certificates must name."""

    cluster: str
    namespace: str  # the control plane's namespace on the management cluster
    endpoint_host: str
    service_cidr: str = DEFAULT_SERVICE_CIDR
    etcd_members: int = 1
    konnectivity_host: str = ""  # the Konnectivity server's own name, when it has one (the SNI mode)

    @property
    def service_names(self) -> tuple[str, ...]:
        """The API server's Service as pods of the management cluster reach it."""
        base = "kube-apiserver"
        return (
            base,
            f"{base}.{self.namespace}",
            f"{base}.{self.namespace}.svc",
            f"{base}.{self.namespace}.svc.cluster.local",
        )

    @property
    def etcd_names(self) -> tuple[str, ...]:
        """Every name an etcd member answers to: the headless Service's and each member's."""
        names = [
            "localhost",
            "etcd",
            f"etcd.{self.namespace}.svc",
            f"etcd.{self.namespace}.svc.cluster.local",
        ]
        for member in range(self.etcd_members):
            names.append(f"etcd-{member}.etcd.{self.namespace}.svc")
            names.append(f"etcd-{member}.etcd.{self.namespace}.svc.cluster.local")
        return tuple(names)


def first_service_ip(service_cidr: str) -> str:
    """The ``kubernetes`` Service's ClusterIP: the first address of the service CIDR."""
    return str(ipaddress.ip_network(service_cidr, strict=False).network_address + 1)


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


# ------------------------------------------------------------------------------------ primitives


@dataclass(frozen=True)
class Pair:
    """A certificate and its private key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return private_key_pem(self.key)


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _subject(common_name: str, organizations: Iterable[str] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def new_ca(common_name: str, *, at: datetime.datetime | None = None) -> Pair:
    """A self-signed CA, as kubeadm makes ``ca``, ``front-proxy-ca`` and ``etcd/ca``."""
    at = at or now()
    key = new_key()
    name = _subject(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(at - BACKDATE)
        .not_valid_after(at + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            key_usage(signs_certificates=True),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Pair(cert, key)


def issue(
    ca: Pair,
    common_name: str,
    *,
    usage: str,
    organizations: Sequence[str] = (),
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = (),
    at: datetime.datetime | None = None,
) -> Pair:
    """A leaf certificate signed by ``ca``: serverAuth, clientAuth, or both for an etcd peer."""
    at = at or now()
    key = new_key()
    usages = {
        SERVER: [ExtendedKeyUsageOID.SERVER_AUTH],
        CLIENT: [ExtendedKeyUsageOID.CLIENT_AUTH],
        PEER: [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
    }[usage]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_subject(common_name, organizations))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(at - BACKDATE)
        .not_valid_after(min(at + LEAF_VALIDITY, ca.cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            key_usage(),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dict.fromkeys(dns_names)]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in dict.fromkeys(ip_addresses)]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return Pair(builder.sign(ca.key, hashes.SHA256()), key)


def ca_cert_hash(ca_cert_pem: bytes) -> str:
    """kubeadm's ``caCertHashes`` entry: ``sha256:`` + the hex SHA-256 of the CA's SubjectPublicKeyInfo."""
    cert = x509.load_pem_x509_certificate(ca_cert_pem)
    spki = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def _split_host(host: str) -> tuple[list[str], list[str]]:
    """``host`` as (DNS names, IP addresses) for a certificate."""
    try:
        return [], [str(ipaddress.ip_address(host))]
    except ValueError:
        return [host], []


def san_names(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    """A certificate's DNS names and IP addresses (as strings)."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    return set(san.get_values_for_type(x509.DNSName)), {
        str(ip) for ip in san.get_values_for_type(x509.IPAddress)
    }


# ------------------------------------------------------------------------------------ the set


def _wanted_names(leaf: str, names: Names) -> tuple[list[str], list[str]]:
    """The DNS names and IPs a serving leaf must carry (empty for client certificates)."""
    endpoint_dns, endpoint_ips = _split_host(names.endpoint_host)
    if leaf == "apiserver":
        dns = [*endpoint_dns, *KUBERNETES_NAMES, *names.service_names, "localhost"]
        return dns, [*endpoint_ips, first_service_ip(names.service_cidr), "127.0.0.1"]
    if leaf == "konnectivity-server":
        own_dns, own_ips = _split_host(names.konnectivity_host) if names.konnectivity_host else ([], [])
        dns = [*own_dns, *endpoint_dns, *names.service_names, "localhost"]
        return dns, [*own_ips, *endpoint_ips, "127.0.0.1"]
    if leaf in ("etcd-server", "etcd-peer"):
        return list(names.etcd_names), ["127.0.0.1"]
    return [], []


def _leaf_spec(leaf: str) -> tuple[str, str, tuple[str, ...], str]:
    """(issuing CA, CN, O, usage) of a leaf."""
    specs: dict[str, tuple[str, tuple[str, tuple[str, ...]], str]] = {
        "apiserver": ("ca", ("kube-apiserver", ()), SERVER),
        "apiserver-kubelet-client": ("ca", KUBELET_CLIENT, CLIENT),
        "apiserver-etcd-client": ("etcd-ca", ETCD_CLIENT, CLIENT),
        "front-proxy-client": ("front-proxy-ca", FRONT_PROXY_CLIENT, CLIENT),
        "etcd-server": ("etcd-ca", ("etcd-server", ()), PEER),
        "etcd-peer": ("etcd-ca", ("etcd-peer", ()), PEER),
        "konnectivity-server": ("ca", ("konnectivity-server", ()), SERVER),
        "konnectivity-client": ("ca", KONNECTIVITY_CLIENT, CLIENT),
        "admin": ("ca", ADMIN, CLIENT),
        "controller-manager": ("ca", CONTROLLER_MANAGER, CLIENT),
        "scheduler": ("ca", SCHEDULER, CLIENT),
        "cloud-controller": ("ca", CLOUD_CONTROLLER, CLIENT),
        "csi-controller": ("ca", CSI_CONTROLLER, CLIENT),
        "metrics-scraper": ("ca", METRICS_SCRAPER, CLIENT),
    }
    ca, (cn, orgs), usage = specs[leaf]
    return ca, cn, orgs, usage


def _load(files: Mapping[str, bytes], base: str) -> Pair | None:
    cert_pem, key_pem = files.get(f"{base}.crt"), files.get(f"{base}.key")
    if not cert_pem or not key_pem:
        return None
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{base}.key is not an ECDSA key")
    return Pair(x509.load_pem_x509_certificate(cert_pem), key)


def _covers(pair: Pair, ca: Pair, dns: Sequence[str], ips: Sequence[str], at: datetime.datetime) -> bool:
    """Whether a kept leaf still fits: signed by this CA, not about to expire, naming what it must."""
    try:
        pair.cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    if pair.cert.not_valid_after_utc - at < RENEW_BEFORE:
        return False
    have_dns, have_ips = san_names(pair.cert)
    return set(dns) <= have_dns and set(ips) <= have_ips


def ensure_pki(
    files: Mapping[str, bytes], names: Names, *, at: datetime.datetime | None = None
) -> dict[str, bytes]:
    """The PKI's files: ``files`` (what the Secret holds) kept, anything missing or unfit made.

    A CA is never replaced while its key is there. A leaf is made again only when it is missing, its
    CA changed, it expires within :data:`RENEW_BEFORE`, or (for serving certificates) it does not
    name the endpoint or the in-cluster names.
    """
    at = at or now()
    result = dict(files)
    cas: dict[str, Pair] = {}
    for base, cn in zip(CAS, ("kubernetes", "front-proxy-ca", "etcd-ca"), strict=True):
        pair = _load(result, base)
        if pair is None:
            pair = new_ca(cn, at=at)
            result[f"{base}.crt"], result[f"{base}.key"] = pair.cert_pem, pair.key_pem
        cas[base] = pair
    for leaf in LEAVES:
        ca_name, cn, orgs, usage = _leaf_spec(leaf)
        dns, ips = _wanted_names(leaf, names)
        kept = _load(result, leaf)
        if kept is not None and _covers(kept, cas[ca_name], dns, ips, at):
            continue
        pair = issue(
            cas[ca_name], cn, usage=usage, organizations=orgs, dns_names=dns, ip_addresses=ips, at=at
        )
        result[f"{leaf}.crt"], result[f"{leaf}.key"] = pair.cert_pem, pair.key_pem
    if not result.get("sa.key"):
        key = new_key()
        result["sa.key"], result["sa.pub"] = private_key_pem(key), public_key_pem(key)
    return result


# ------------------------------------------------------------------------------------ kubeconfigs


def digest(files: Mapping[str, bytes]) -> str:
    """A short digest of the PKI's files: it changes whenever a key or certificate does."""
    hashed = hashlib.sha256()
    for name in sorted(files):
        hashed.update(name.encode() + b"\0" + files[name] + b"\0")
    return hashed.hexdigest()[:16]


def kubeconfig(
    *,
    cluster: str,
    server: str,
    ca_pem: bytes,
    user: str,
    cert_pem: bytes | None = None,
    key_pem: bytes | None = None,
) -> dict[str, Any]:
    """A kubeconfig (as a dict) with the CA inline and, unless none is given, a client certificate."""
    credentials: dict[str, str] = {}
    if cert_pem is not None and key_pem is not None:
        credentials = {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)}
    context = f"{user}@{cluster}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
        "current-context": context,
        "preferences": {},
    }


def kubeconfig_files(
    files: Mapping[str, bytes], *, cluster: str, server: str = LOCAL_SERVER
) -> dict[str, bytes]:
    """kubeadm's ``/etc/kubernetes/*.conf`` for the components in the pod (they reach the API on loopback)."""
    result = {}
    for name, leaf in KUBECONFIGS.items():
        cert = x509.load_pem_x509_certificate(files[f"{leaf}.crt"])
        user = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        config = kubeconfig(
            cluster=cluster,
            server=server,
            ca_pem=files["ca.crt"],
            user=str(user),
            cert_pem=files[f"{leaf}.crt"],
            key_pem=files[f"{leaf}.key"],
        )
        result[name] = dump(config)
    return result


def admin_kubeconfig(files: Mapping[str, bytes], *, cluster: str, server: str) -> bytes:
    """Cluster API's ``<cluster>-kubeconfig`` value: the admin's credentials, the endpoint's URL."""
    config = kubeconfig(
        cluster=cluster,
        server=server,
        ca_pem=files["ca.crt"],
        user=f"{cluster}-admin",
        cert_pem=files["admin.crt"],
        key_pem=files["admin.key"],
    )
    return dump(config)


def cloud_controller_kubeconfig(files: Mapping[str, bytes], *, cluster: str, server: str) -> bytes:
    """The cloud controller's kubeconfig: its own credentials (:data:`CLOUD_CONTROLLER`), ``server``."""
    return leaf_kubeconfig(files, "cloud-controller", CLOUD_CONTROLLER[0], cluster=cluster, server=server)


def leaf_kubeconfig(files: Mapping[str, bytes], leaf: str, user: str, *, cluster: str, server: str) -> bytes:
    """A kubeconfig of ``server`` with the credentials of the PKI's ``leaf`` (its user ``user``)."""
    config = kubeconfig(
        cluster=cluster,
        server=server,
        ca_pem=files["ca.crt"],
        user=user,
        cert_pem=files[f"{leaf}.crt"],
        key_pem=files[f"{leaf}.key"],
    )
    return dump(config)


def dump(config: Mapping[str, Any]) -> bytes:
    return yaml.safe_dump(dict(config), sort_keys=False).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def server_url(host: str, port: int) -> str:
    """``https://host:port`` with an IPv6 host bracketed."""
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{port}"
