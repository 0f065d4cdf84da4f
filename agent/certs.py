"""The node's side of its certificate: keys, CSRs, checking what the orchestrator issued, safe writes.

Shared by the bootstrap (the first certificate) and the renewal loop (every later one).

The certificate and its key are two files, so replacing them cannot be one rename: a crash
between two renames would leave a new key beside the old certificate, and the agent refuses
to start on a mismatched pair. :func:`store_pair` therefore writes both under pending names
first (``<name>.new``) and renames them into place, key first; :func:`finish_swap`, run when
the agent starts, completes a swap a crash interrupted, or discards one that never got whole.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


class CertificateRefused(Exception):
    """What the orchestrator issued is not what was asked for; the message says how."""


def new_key() -> ec.EllipticCurvePrivateKey:
    """A new EC P-256 key: what gRPC serves fastest, and what the orchestrator accepts."""
    return ec.generate_private_key(ec.SECP256R1())


def make_csr(key: ec.EllipticCurvePrivateKey, identity: str) -> str:
    """A CSR naming exactly the host identity (CN and DNS), as the orchestrator requires."""
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, identity)]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(identity)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM).decode("ascii")


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The key as unencrypted PKCS#8 PEM (the file that holds it is the node's root's only)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def check_issued(certificate_pem: str, key: ec.EllipticCurvePrivateKey, identity: str) -> x509.Certificate:
    """The issued certificate, if it is for this key and names this host; CertificateRefused otherwise."""
    try:
        certificate = x509.load_pem_x509_certificate(certificate_pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError) as exc:
        raise CertificateRefused(
            f"the orchestrator answered something that is not a certificate: {exc}"
        ) from None
    if certificate.public_key() != key.public_key():
        raise CertificateRefused("the orchestrator answered a certificate for another key")
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = [n.lower() for n in san.get_values_for_type(x509.DNSName)]
    except x509.ExtensionNotFound:
        names = []
    if identity.lower() not in names:
        raise CertificateRefused(f"the orchestrator answered a certificate that does not name {identity}")
    return certificate


def write_atomically(path: Path, content: bytes, mode: int) -> None:
    """Replace path with content in one rename: a reader sees the old file or the new one, never half."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ------------------------------------------------------------------------------ the pair's swap

PENDING_SUFFIX = ".new"


def pending(path: Path) -> Path:
    """Where the next version of path waits while a pair is swapped: ``<name>.new`` beside it."""
    return path.with_name(path.name + PENDING_SUFFIX)


def _sync_folder(folder: Path) -> None:
    """Make the renames in folder durable before the next step relies on them."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def store_pair(cert_path: Path, key_path: Path, cert: bytes, key: bytes) -> None:
    """Replace the certificate and its key so that, whenever a crash comes, the agent can start.

    Both are written whole under their pending names (the key first: a pending certificate means
    the pending pair is complete), then renamed over the old ones, key first. Interrupted before
    the renames, the old pair stands; between them, :func:`finish_swap` completes the swap.
    """
    write_atomically(pending(key_path), key, 0o600)
    write_atomically(pending(cert_path), cert, 0o644)
    _sync_folder(cert_path.parent)
    pending(key_path).replace(key_path)
    pending(cert_path).replace(cert_path)
    _sync_folder(cert_path.parent)
    if key_path.parent != cert_path.parent:
        _sync_folder(key_path.parent)


def discard_pending(cert_path: Path, key_path: Path) -> None:
    """Forget a swap a crash interrupted (a new pair is being put in place instead)."""
    pending(cert_path).unlink(missing_ok=True)
    pending(key_path).unlink(missing_ok=True)


def _is_pair(cert_path: Path, key_path: Path) -> bool:
    try:
        certificate = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (ValueError, TypeError, OSError):
        return False
    return bool(key.public_key() == certificate.public_key())


def finish_swap(cert_path: Path, key_path: Path) -> str | None:
    """Complete or discard a swap :func:`store_pair` did not finish; what was done, or None if nothing.

    A pending certificate with its key (pending, or already renamed into place) is the renewed
    pair: the swap is completed. Anything else pending is a swap that never got whole, or a
    leftover: it is removed, and the pair in place stands.
    """
    new_cert, new_key = pending(cert_path), pending(key_path)
    if not new_cert.exists():
        if not new_key.exists():
            return None
        new_key.unlink()
        return f"discarded {new_key}: a certificate renewal stopped before its certificate was written"
    key_of_new = new_key if new_key.exists() else key_path
    if not _is_pair(new_cert, key_of_new):
        discard_pending(cert_path, key_path)
        return f"discarded {new_cert}: it is not the certificate of {key_of_new}"
    if new_key.exists():
        new_key.replace(key_path)
    new_cert.replace(cert_path)
    _sync_folder(cert_path.parent)
    return f"finished a certificate renewal a crash interrupted: {cert_path} and {key_path} are the new pair"
