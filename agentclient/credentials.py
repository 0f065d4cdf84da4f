"""The caller's TLS material for the agents' gRPC: fixed (:class:`ClientTLS`), or read from files that a
renewer replaces while the process runs (:class:`ClientTLSFiles`).

In Kubernetes the client certificate is a Secret that cert-manager renews at two thirds of its life;
the kubelet updates the mounted files by swapping the volume's ``..data`` symlink to a new directory,
all files at once. A process that read them once keeps presenting the old certificate until it
expires, and every agent call fails from then on. :class:`ClientTLSFiles` looks at the files' stat
(device, inode, size, mtime; through the symlinks) at most every ``check_interval`` seconds, on the
call path, and reads them again when it changed. A new certificate whose key does not match (a
renewer that writes files one by one, seen half-way) is not taken: the previous material stays until
the next look finds a matching pair. Only our own certificate is cached here, never anything of
Proxmox's.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from agentclient import metrics

log = logging.getLogger(__name__)

# How often the files' stat is looked at (seconds): a renewal is taken within this much of the kubelet
# writing it (itself up to a minute after cert-manager), long before the old certificate expires.
CHECK_INTERVAL = 5.0


class ClientTLSError(ValueError):
    """The client TLS files cannot be used: unreadable, not PEM, or a key that is not the certificate's."""


@dataclass(frozen=True)
class ClientTLS:
    """The caller's TLS material, all PEM: the platform CA, our certificate and its key."""

    ca: bytes
    cert: bytes
    key: bytes = field(repr=False)

    @classmethod
    def from_files(cls, ca: str | Path, cert: str | Path, key: str | Path) -> ClientTLS:
        """Read the three PEM files."""
        return cls(Path(ca).read_bytes(), Path(cert).read_bytes(), Path(key).read_bytes())

    def current(self) -> ClientTLS:
        """This material: fixed material never changes (see :meth:`ClientTLSFiles.current`)."""
        return self

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials presenting our certificate and trusting only the platform CA."""
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert
        )


def _certificate(pem: bytes, what: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError as exc:
        raise ClientTLSError(f"the {what} is not a PEM certificate ({exc})") from None


def not_after(pem: bytes, what: str) -> datetime.datetime:
    """When the first certificate of pem expires (UTC); ClientTLSError naming what when it is not one."""
    return _certificate(pem, what).not_valid_after_utc


def check_pair(tls: ClientTLS) -> None:
    """ClientTLSError unless both certificates parse and the key is the client certificate's."""
    _certificate(tls.ca, "platform CA")
    certificate = _certificate(tls.cert, "client certificate")
    try:
        key = serialization.load_pem_private_key(tls.key, password=None)
    except (ValueError, TypeError) as exc:
        raise ClientTLSError(f"the client key is not an unencrypted PEM private key ({exc})") from None
    der = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*der) != certificate.public_key().public_bytes(*der):
        raise ClientTLSError("the client key does not match the client certificate")


Stamp = tuple[tuple[int, int, int, int], ...]


class ClientTLSFiles:
    """The client TLS material of three PEM files, read again when they change (thread-safe).

    The first read happens here and raises (OSError, ClientTLSError) as a process that cannot reach any
    agent should fail at start. Later failures keep the material read last and are logged and counted
    (``flexplane_certificate_reloads{outcome="failed"}``); the next look tries again.
    """

    def __init__(
        self,
        ca: str | Path,
        cert: str | Path,
        key: str | Path,
        *,
        check_interval: float = CHECK_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.paths = (Path(ca), Path(cert), Path(key))
        self.check_interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._tls = self._read()
        self._checked = clock()
        metrics.certificates_read(
            not_after(self._tls.cert, "client certificate"), not_after(self._tls.ca, "platform CA")
        )

    def current(self) -> ClientTLS:
        """The material as the files hold it now, looked at no more often than every check_interval.

        A new ClientTLS object means new material: callers compare by identity to know when to build
        new channel credentials.
        """
        with self._lock:
            now = self._clock()
            if now - self._checked < self.check_interval:
                return self._tls
            self._checked = now
            try:
                stamp = self._stat()
                if stamp == self._stamp:
                    return self._tls
                tls = self._read()
            except (OSError, ClientTLSError) as exc:
                log.warning("keeping the client certificate read before: %s", exc)
                metrics.CERTIFICATE_RELOADS.labels("failed").inc()
                return self._tls
            self._stamp, self._tls = stamp, tls
        expiry = not_after(tls.cert, "client certificate")
        metrics.certificates_read(expiry, not_after(tls.ca, "platform CA"))
        metrics.CERTIFICATE_RELOADS.labels("ok").inc()
        log.info("read the renewed client certificate %s (valid until %s)", self.paths[1], expiry.isoformat())
        return tls

    def _stat(self) -> Stamp:
        """The files' identity and age, through the symlinks a mounted Secret is made of."""
        stamps = []
        for path in self.paths:
            stat = path.stat()
            stamps.append((stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(stamps)

    def _read(self) -> ClientTLS:
        tls = ClientTLS.from_files(*self.paths)
        check_pair(tls)
        return tls
