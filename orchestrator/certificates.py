"""What every certificate flex.plane issues says about its key's use (X.509 key usage), in one place: the
platform CA's agent certificates, tenants' kubeconfigs, the hosted control planes' PKI and the devstack's."""

from __future__ import annotations

from cryptography import x509


def key_usage(*, signs_certificates: bool = False, key_encipherment: bool = False) -> x509.KeyUsage:
    """Digital signatures always; certificate and CRL signing for a CA; key encipherment for an RSA leaf
    whose TLS key exchange may need it."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )
