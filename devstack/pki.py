"""A small development PKI on trustme: one CA that signs agent, client and server certificates.

The devstack installs it as the platform CA (the Secret the orchestrator signs agents'
certificates with at enrollment, :meth:`CertificateAuthority.tls_secret_data`), and issues from
it the orchestrator's client certificate (whose common name the agents check) and the
certificate of the orchestrator's HTTPS endpoint. Agent-only tests issue agent certificates
directly (:meth:`CertificateAuthority.issue_agent`), naming the host as
:func:`agentclient.identity.host_identity` does.

trustme makes the CA and the certificates that name hosts (agents, HTTPS servers). Every trustme
leaf is a server *and* a client certificate (and a code-signing one) with a critical subject
alternative name, empty when no host is named; the platform's client certificates are client-auth
only and name no host, and the mTLS tests need certificates of one usage each (a server-only one the
agent must refuse as a client): those few go through :meth:`CertificateAuthority.sign`.

Keys are EC P-256 and are written owner-only (0600).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from orchestrator.certificates import key_usage

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

LEAF_VALIDITY = datetime.timedelta(days=30)
# Accept certificates right away even when clocks of two machines differ a little.
BACKDATE = datetime.timedelta(minutes=5)

CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"


def generate_key() -> ec.EllipticCurvePrivateKey:
    """A new EC P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def write_key(path: Path, key: ec.EllipticCurvePrivateKey | bytes) -> None:
    """Write a private key (a key, or its PEM) unencrypted, readable by its owner only."""
    pem = key if isinstance(key, bytes) else _pkcs8(key)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(out.fileno(), 0o600)  # the file may have existed with a wider mode
        out.write(pem)


def write_certificate(path: Path, certificate: x509.Certificate) -> None:
    """Write a certificate as PEM."""
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def _pkcs8(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass(frozen=True)
class CertificateAuthority:
    """A trustme CA, written to ``cert_path`` (and ``ca.key`` beside it), able to issue leaves."""

    authority: trustme.CA
    cert_path: Path

    @classmethod
    def create(cls, directory: Path | str, common_name: str = "flex.plane dev CA") -> CertificateAuthority:
        """Create a self-signed CA and write ``ca.crt`` and ``ca.key`` (0600) into directory."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        authority = trustme.CA(organization_unit_name=common_name)
        write_key(directory / CA_KEY_FILE, authority.private_key_pem.bytes())
        authority.cert_pem.write_to_path(directory / CA_CERT_FILE)
        return cls(authority, directory / CA_CERT_FILE)

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate as PEM, e.g. as the trust root of a gRPC channel."""
        return self.authority.cert_pem.bytes()

    @cached_property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @cached_property
    def key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.authority.private_key_pem.bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)  # trustme's default key type
        return key

    def sign(
        self,
        public_key: ec.EllipticCurvePublicKey,
        *,
        common_name: str,
        dns_names: Sequence[str] = (),
        ip_addresses: Iterable[str | IPAddress] = (),
        usages: Sequence[x509.ObjectIdentifier],
        validity: datetime.timedelta = LEAF_VALIDITY,
    ) -> x509.Certificate:
        """Sign a leaf certificate for public_key with exactly these names and extended key usages."""
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.certificate.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + validity)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(key_usage(), critical=True)
            .add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )
        alt_names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
        alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        return builder.sign(self.key, hashes.SHA256())

    def issue_agent(
        self,
        identity: str,
        ip_addresses: Iterable[str | IPAddress],
        directory: Path | str,
        basename: str,
    ) -> tuple[Path, Path]:
        """Issue an agent's certificate: SAN DNSName identity and the IPs, server and client auth.

        Writes ``<basename>.crt`` and ``<basename>.key`` (0600) into directory and
        returns their paths.
        """
        return self._issue([identity, *map(str, ip_addresses)], identity, Path(directory), basename)

    def issue_server(
        self, ip_addresses: Iterable[str | IPAddress], directory: Path | str, basename: str
    ) -> tuple[Path, Path]:
        """Issue an HTTPS server certificate naming these IP addresses.

        Writes ``<basename>.crt`` and ``<basename>.key`` (0600) into directory and
        returns their paths.
        """
        addresses = [str(ip) for ip in ip_addresses]
        return self._issue(addresses, addresses[0], Path(directory), basename)

    def tls_secret_data(self) -> dict[str, bytes]:
        """The CA as the data of a ``kubernetes.io/tls`` Secret: what a chart install would create."""
        return {"tls.crt": self.cert_pem, "tls.key": _pkcs8(self.key)}

    def issue_client(self, common_name: str, directory: Path | str, basename: str) -> tuple[Path, Path]:
        """Issue a client certificate (client auth only) whose common name is the caller's name.

        Writes ``<basename>.crt`` and ``<basename>.key`` (0600) into directory and
        returns their paths.
        """
        key = generate_key()
        certificate = self.sign(
            key.public_key(), common_name=common_name, usages=[ExtendedKeyUsageOID.CLIENT_AUTH]
        )
        return self._write_leaf(
            certificate.public_bytes(serialization.Encoding.PEM), _pkcs8(key), directory, basename
        )

    def _issue(self, names: list[str], common_name: str, directory: Path, basename: str) -> tuple[Path, Path]:
        """A trustme leaf naming these hosts, valid for LEAF_VALIDITY as the platform's own are."""
        now = datetime.datetime.now(datetime.UTC)
        leaf = self.authority.issue_cert(
            *names, common_name=common_name, not_before=now - BACKDATE, not_after=now + LEAF_VALIDITY
        )
        return self._write_leaf(
            leaf.cert_chain_pems[0].bytes(), leaf.private_key_pem.bytes(), directory, basename
        )

    @staticmethod
    def _write_leaf(
        certificate: bytes, key: bytes, directory: Path | str, basename: str
    ) -> tuple[Path, Path]:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        cert_path = directory / f"{basename}.crt"
        key_path = directory / f"{basename}.key"
        write_key(key_path, key)
        cert_path.write_bytes(certificate)
        return cert_path, key_path
