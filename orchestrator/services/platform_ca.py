"""The platform CA of host enrollment: read from its Secret, checking what nodes send (CSRs, their
current certificate), and signing agents' certificates (see ``orchestrator.services.enrollment``)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.conf import settings

from agentclient.identity import AGENTS_DOMAIN
from orchestrator.certificates import key_usage
from orchestrator.errors import Unauthenticated, Unavailable, ValidationFailed
from orchestrator.sources.protocols import KubeApi

# Accept certificates at once even when the node's clock is a little behind (by at most a tenth of
# the certificate's life, so that the agent's "renew at two thirds" stays in the future).
BACKDATE = datetime.timedelta(minutes=5)
MAX_CSR_BYTES = 16 * 1024
MAX_CERTIFICATE_BYTES = 16 * 1024
# What gRPC's TLS stack (BoringSSL) serves and checks: EC P-256/P-384, RSA of 2048 bits or more.
EC_CURVES = {ec.SECP256R1.name: "P-256", ec.SECP384R1.name: "P-384"}
RSA_MIN_BITS = 2048
RSA_MAX_BITS = 8192
CA_WHERE = "platform CA"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class PlatformCA:
    """The CA certificate (first of ``tls.crt``), its key, and the bundle agents trust callers by."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
    bundle: str


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def utc_text(moment: datetime.datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def platform_ca(source: KubeApi) -> PlatformCA:
    """The platform CA, read from its Secret now; ``Unavailable`` when it is missing or unusable."""
    name = settings.FLEXPLANE_AGENT_CA_SECRET
    entry = source.get_secret(name)
    if entry is None:
        raise Unavailable(
            CA_WHERE,
            f"the platform CA Secret {settings.FLEXPLANE_NAMESPACE}/{name} does not exist: "
            "install it (a kubernetes.io/tls Secret) before enrolling hosts",
        )
    try:
        chain = x509.load_pem_x509_certificates(entry.data.get("tls.crt", b""))
        key = serialization.load_pem_private_key(entry.data.get("tls.key", b""), password=None)
    except (ValueError, TypeError) as exc:
        raise Unavailable(
            CA_WHERE, f"the platform CA Secret {name} is not a usable tls.crt/tls.key pair: {exc}"
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise Unavailable(
            CA_WHERE, f"the platform CA Secret {name} holds a {type(key).__name__}, not EC or RSA"
        )
    if key.public_key() != chain[0].public_key():
        raise Unavailable(CA_WHERE, f"the platform CA Secret {name}: tls.key is not the key of tls.crt")
    bundle = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    bundle += entry.data.get("ca.crt", b"")
    return PlatformCA(chain[0], key, bundle.decode("ascii"))


def sign(ca: PlatformCA, csr: x509.CertificateSigningRequest, identity: str, ips: list[IPAddress]) -> str:
    """A certificate for the CSR's key naming identity (DNS) and ips, for FLEXPLANE_AGENT_CERT_LIFETIME."""
    now = utc_now()
    public_key = csr.public_key()
    assert isinstance(public_key, ec.EllipticCurvePublicKey | rsa.RSAPublicKey)  # check_csr made sure
    names: list[x509.GeneralName] = [x509.DNSName(identity), *(x509.IPAddress(ip) for ip in ips)]
    lifetime = datetime.timedelta(seconds=settings.FLEXPLANE_AGENT_CERT_LIFETIME)
    backdate = min(BACKDATE, lifetime / 10)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, identity)]))
        .issuer_name(ca.certificate.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - backdate)
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            key_usage(key_encipherment=isinstance(public_key, rsa.RSAPublicKey)),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
        .sign(ca.key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")


def check_csr(pem: Any, identity: str) -> x509.CertificateSigningRequest:
    """The CSR, if it is well-formed, self-signed, carries a strong key and names exactly ``identity``."""
    if not isinstance(pem, str) or not pem.strip():
        raise ValidationFailed("csr", "csr is required: a PEM certificate signing request")
    if len(pem) > MAX_CSR_BYTES:
        raise ValidationFailed("csr", f"csr is larger than {MAX_CSR_BYTES} bytes")
    try:
        csr = x509.load_pem_x509_csr(pem.encode("utf-8"))
    except ValueError:
        raise ValidationFailed("csr", "csr is not a PEM certificate signing request") from None
    if not csr.is_signature_valid:
        raise ValidationFailed(
            "csr", "the CSR's signature does not verify: it was not signed with the key it carries"
        )
    _check_key(csr.public_key())
    _check_names(csr, identity)
    return csr


def _check_key(key: object) -> None:
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in EC_CURVES:
            raise ValidationFailed(
                "csr",
                f"the CSR's key is on curve {key.curve.name}: use EC P-256 or P-384 (or RSA >= 2048 bits)",
            )
    elif isinstance(key, rsa.RSAPublicKey):
        if key.key_size < RSA_MIN_BITS:
            raise ValidationFailed(
                "csr", f"the CSR's RSA key has {key.key_size} bits, too weak: use at least {RSA_MIN_BITS}"
            )
        if key.key_size > RSA_MAX_BITS:
            raise ValidationFailed("csr", f"the CSR's RSA key has more than {RSA_MAX_BITS} bits")
    else:
        raise ValidationFailed(
            "csr",
            f"the CSR's key is {type(key).__name__}: use EC P-256 or P-384, or RSA >= {RSA_MIN_BITS} bits",
        )


def _csr_names(csr: x509.CertificateSigningRequest) -> list[str]:
    """Every name a CSR asks for: its subject's attributes and its subject alternative names."""
    names = [attribute.rfc4514_string() for attribute in csr.subject]
    try:
        san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return names
    except ValueError:
        raise ValidationFailed("csr", "the CSR's extensions do not parse") from None
    for general in san:
        names.append(f"{type(general).__name__}:{general.value}")
    return names


def _check_names(csr: x509.CertificateSigningRequest, identity: str) -> None:
    """The CSR must ask for exactly CN=identity, and at most DNS:identity besides."""
    allowed = ({f"CN={identity}", f"DNSName:{identity}"}, {f"CN={identity}"})
    names = _csr_names(csr)
    if f"CN={identity}" not in names or set(names) not in allowed or len(names) != len(set(names)):
        raise ValidationFailed(
            "csr",
            f"the CSR names {', '.join(names) or 'nothing'}, but this host is {identity}: "
            f"ask for CN={identity} (and DNS:{identity}) only",
        )


def presented(certificate_pem: Any, ca: PlatformCA) -> tuple[x509.Certificate, str, str]:
    """The caller's current certificate, if the platform CA issued it and it is valid: (it, zone, node)."""
    if not isinstance(certificate_pem, str) or len(certificate_pem) > MAX_CERTIFICATE_BYTES:
        raise Unauthenticated("certificate is required: the agent's current certificate, PEM")
    try:
        certificate = x509.load_pem_x509_certificate(certificate_pem.encode("utf-8"))
        certificate.verify_directly_issued_by(ca.certificate)
    except (ValueError, TypeError, InvalidSignature):
        raise Unauthenticated("the certificate was not issued by the platform CA") from None
    now = utc_now()
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        raise Unauthenticated(
            f"the certificate is valid from {utc_text(certificate.not_valid_before_utc)} to "
            f"{utc_text(certificate.not_valid_after_utc)}, not now: "
            "enroll the node again with a new join token"
        )
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = san.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    hosts = [
        n for n in names if n.endswith(f".{AGENTS_DOMAIN}") and n.count(".") == AGENTS_DOMAIN.count(".") + 2
    ]
    if len(hosts) != 1:
        raise Unauthenticated("the certificate does not name one host (<node>.<zone>.agents.flexplane)")
    node, zone = hosts[0].split(".")[:2]
    return certificate, zone, node


def ip_names(certificate: x509.Certificate) -> list[IPAddress]:
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [
        ip
        for ip in san.get_values_for_type(x509.IPAddress)
        if isinstance(ip, ipaddress.IPv4Address | ipaddress.IPv6Address)
    ]
