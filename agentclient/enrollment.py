"""The enrollment contract between a node and the orchestrator: paths, join tokens, proofs of possession.

Enrollment is HTTPS, not gRPC: a node that has no certificate yet cannot speak mTLS, and the
renewal must work behind an ingress that terminates TLS. Both sides import this module, so what
one signs is what the other checks.

- ``POST /enroll/v1/join`` ``{token, csr, endpoint}`` -> ``{certificate, ca, settings}``
- ``POST /enroll/v1/renew`` ``{csr, certificate, timestamp, signature}`` -> the same answer.
  ``signature`` is base64 of the agent's current key signing :func:`renewal_message`: it proves that
  the caller holds the key of the certificate it presents, without a TLS client certificate.

Failures answer ``{"error": {"code", "message", "field"}}`` with a 4xx or 5xx status.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from agentclient.identity import LOWER_DNS_LABEL

JOIN_PATH = "/enroll/v1/join"
RENEW_PATH = "/enroll/v1/renew"

# <zone>.<host>.<expiry, Unix seconds>.<id>.<secret>. The node reads from it which host it becomes and
# until when the token works, without asking; the id names the stored token; only the secret's
# hash is stored, and the orchestrator checks the rest against what it stored.
_LABEL = LOWER_DNS_LABEL
_TOKEN = re.compile(
    rf"(?P<zone>{_LABEL})\.(?P<host>{_LABEL})\.(?P<expires>[0-9]{{1,12}})"
    r"\.(?P<id>[0-9a-f]{16})\.(?P<secret>[A-Za-z0-9_-]{32,128})"
)

_RENEWAL_DOMAIN = b"flexplane-renew-v1\n"

SigningKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class JoinTokenParts:
    """A join token's parts: the host it enrolls, its expiry, the stored token's id and the secret."""

    zone: str
    host: str
    expires: int
    ident: str
    secret: str

    @property
    def expires_at(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.expires, datetime.UTC)

    def __str__(self) -> str:
        return f"{self.zone}.{self.host}.{self.expires}.{self.ident}.{self.secret}"


def parse_join_token(token: str) -> JoinTokenParts:
    """The parts of a join token; ValueError if it is not one (mistyped, cut short, quoted)."""
    match = _TOKEN.fullmatch(token.strip()) if isinstance(token, str) else None
    if match is None:
        raise ValueError(
            "this is not a flex.plane join token (<zone>.<host>.<expiry>.<id>.<secret>, "
            "as createHostJoinToken gave it)"
        )
    return JoinTokenParts(match["zone"], match["host"], int(match["expires"]), match["id"], match["secret"])


def renewal_message(timestamp: int, csr_pem: str) -> bytes:
    """What a renewal's signature covers: the request's time and the CSR it asks to have signed."""
    return _RENEWAL_DOMAIN + str(int(timestamp)).encode("ascii") + b"\n" + csr_pem.encode("utf-8")


def sign_proof(key: SigningKey, message: bytes) -> str:
    """The base64 signature of message with key (ECDSA or RSA PKCS#1 v1.5, both over SHA-256)."""
    if isinstance(key, rsa.RSAPrivateKey):
        signature = key.sign(message, padding.PKCS1v15(), hashes.SHA256())
    else:
        signature = key.sign(message, ec.ECDSA(hashes.SHA256()))
    return base64.b64encode(signature).decode("ascii")


def verify_proof(public_key: object, message: bytes, signature: str) -> bool:
    """Whether signature (base64) is public_key's signature of message, as :func:`sign_proof` makes it."""
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError, TypeError):
        return False
    try:
        if isinstance(public_key, rsa.RSAPublicKey):
            public_key.verify(raw, message, padding.PKCS1v15(), hashes.SHA256())
        elif isinstance(public_key, ec.EllipticCurvePublicKey):
            public_key.verify(raw, message, ec.ECDSA(hashes.SHA256()))
        else:
            return False
    except InvalidSignature:
        return False
    return True
