"""Certificate renewal: before its certificate runs out, the agent gets a new one and serves it at once.

At two thirds of the certificate's life the agent makes a new key and CSR, and posts them to the
orchestrator's ``/enroll/v1/renew`` with its current certificate and a signature made with its
current key (``agentclient.enrollment``): a proof of possession that works behind an ingress that
terminates TLS. The answer is written to ``tls_key`` and ``tls_cert`` as a pair that a crash
cannot split (``agent.certs.store_pair``; the next start finishes an interrupted swap) and
swapped into the running gRPC server: new handshakes get the new certificate, connections
already open keep theirs, nothing restarts.

A failure is logged, recorded in ``AgentStatus.renewal`` (GetInfo shows it) and retried with
exponential backoff, capped; the old certificate keeps serving until it expires. The backoff
scales with the certificate's life: a minute to an hour for 30 days, seconds for a test's.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from agent.certs import (
    CertificateRefused,
    check_issued,
    key_pem,
    make_csr,
    new_key,
    store_pair,
    write_atomically,
)
from agent.config import AgentConfig
from agent.mesh import MeshConfigError, apply_rotation, rotation_for
from agent.release import ReleaseError
from agent.status import AgentStatus
from agent.update.registry import store_renewed
from agentclient.enrollment import RENEW_PATH, SigningKey, renewal_message, sign_proof
from agentclient.wireguard import WireGuardError, public_key

log = logging.getLogger(__name__)

RENEW_AT = 2 / 3  # of the certificate's life
REQUEST_TIMEOUT = 30.0
MAX_ANSWER_BYTES = 256 * 1024


class RenewalFailed(Exception):
    """This attempt did not renew the certificate; the message says why, for the log and GetInfo."""


class ServingCertificate:
    """The certificate, key and CA bundle the gRPC server uses, replaceable while it serves.

    gRPC calls the fetcher on every new TLS handshake, from its own threads: it answers the new
    configuration once after a swap, and None (keep the current one) otherwise.
    """

    def __init__(self, cert: bytes, key: bytes, ca: bytes) -> None:
        self._lock = threading.Lock()
        self._cert, self._key, self._ca = cert, key, ca
        self._swapped = False

    @property
    def cert(self) -> bytes:
        with self._lock:
            return self._cert

    @property
    def key(self) -> bytes:
        with self._lock:
            return self._key

    def credentials(self) -> grpc.ServerCredentials:
        """Server credentials that require a client certificate of the CA and follow every swap."""
        return grpc.dynamic_ssl_server_credentials(
            self._configuration(), self._fetch, require_client_authentication=True
        )

    def swap(self, cert: bytes, key: bytes, ca: bytes) -> None:
        with self._lock:
            self._cert, self._key, self._ca = cert, key, ca
            self._swapped = True

    def _configuration(self) -> Any:
        with self._lock:
            return grpc.ssl_server_certificate_configuration(
                [(self._key, self._cert)], root_certificates=self._ca
            )

    def _fetch(self) -> Any:
        with self._lock:
            if not self._swapped:
                return None
            self._swapped = False
        return self._configuration()


def renew_time(certificate: x509.Certificate) -> float:
    """When to renew (Unix seconds): at two thirds of the certificate's life."""
    start = certificate.not_valid_before_utc.timestamp()
    end = certificate.not_valid_after_utc.timestamp()
    return start + (end - start) * RENEW_AT


def backoff(certificate: x509.Certificate, failures: int) -> float:
    """Seconds before the next attempt after ``failures`` failures: doubling from a hundredth of the
    certificate's life (1 s to 60 s) up to a tenth of it (at most an hour)."""
    life = (certificate.not_valid_after_utc - certificate.not_valid_before_utc).total_seconds()
    base = min(60.0, max(1.0, life / 100))
    cap = min(3600.0, max(base, life / 10))
    return min(cap, base * 2 ** max(0, failures - 1))


def ssl_context(ca_file: Path | None) -> ssl.SSLContext:
    """TLS for talking to the orchestrator: its CA file if given, else the system's trust store."""
    return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)


class Renewer:
    """Renews the agent's certificate on schedule, for as long as the agent serves."""

    def __init__(
        self,
        config: AgentConfig,
        status: AgentStatus,
        serving: ServingCertificate,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not config.orchestrator_url:
            raise ValueError("renewal needs orchestrator_url")
        self.config = config
        self.status = status
        self.serving = serving
        self.clock = clock
        self.url = config.orchestrator_url + RENEW_PATH

    def current(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.serving.cert)

    def next_delay(self) -> float:
        """Seconds until the next attempt: the renewal time, or the backoff after failures."""
        certificate = self.current()
        failures = self.status.renewal.failures
        if failures:
            return backoff(certificate, failures)
        return max(0.0, renew_time(certificate) - self.clock())

    async def run(self) -> None:
        """Renew at each renewal time, retrying failures, until cancelled."""
        while True:
            delay = self.next_delay()
            self.status.renewal.next_attempt = self.clock() + delay
            await asyncio.sleep(delay)
            try:
                await self.renew_once()
            except RenewalFailed as exc:
                self._failed(str(exc))
            except Exception as exc:  # a bug must not end renewals for the agent's lifetime
                log.exception("certificate renewal failed unexpectedly")
                self._failed(f"unexpected {type(exc).__name__}: {exc}")

    def _failed(self, reason: str) -> None:
        renewal = self.status.renewal
        renewal.failures += 1
        renewal.last_error = reason
        certificate = self.current()
        expires = certificate.not_valid_after_utc
        retry = backoff(certificate, renewal.failures)
        left = expires - datetime.datetime.now(datetime.UTC)
        if left.total_seconds() > 0:
            log.warning(
                "certificate renewal failed (%d in a row): %s; retrying in %.0f s; the current certificate "
                "serves until %s",
                renewal.failures,
                reason,
                retry,
                f"{expires:%Y-%m-%d %H:%M:%S} UTC",
            )
        else:
            log.error(
                "certificate renewal failed: %s; the certificate expired at %s UTC: callers refuse this "
                "agent now; enroll the node again (flexplane-agent bootstrap with a new join token)",
                reason,
                f"{expires:%Y-%m-%d %H:%M:%S}",
            )

    async def renew_once(self) -> x509.Certificate:
        """One renewal: new key and CSR, the orchestrator signs, the files and the server switch to it."""
        config = self.config
        key = new_key()
        csr = make_csr(key, config.identity)
        current_key = serialization.load_pem_private_key(self.serving.key, password=None)
        if not isinstance(current_key, SigningKey):
            raise RenewalFailed(f"tls_key {config.tls_key} is neither an EC nor an RSA key")
        timestamp = int(self.clock())
        body = {
            "csr": csr,
            "certificate": self.serving.cert.decode("ascii"),
            "timestamp": timestamp,
            "signature": sign_proof(current_key, renewal_message(timestamp, csr)),
        }
        rotation = rotation_for(config.tls_cert)  # on a mesh, its WireGuard key is renewed too
        if rotation is not None:
            body["mesh_public_key"] = public_key(rotation[1])
        answer = await self._post(body)
        try:
            certificate = check_issued(str(answer.get("certificate", "")), key, config.identity)
        except CertificateRefused as exc:
            raise RenewalFailed(str(exc)) from None
        cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
        ca = str(answer.get("ca") or "").encode("ascii") or config.ca.read_bytes()
        try:
            x509.load_pem_x509_certificates(ca)
        except ValueError:
            raise RenewalFailed(
                "the orchestrator answered a CA bundle that is not PEM certificates"
            ) from None
        await asyncio.to_thread(self._store, cert_pem, key_pem(key), ca)
        self.serving.swap(cert_pem, key_pem(key), ca)
        if rotation is not None and isinstance((answer.get("settings") or {}).get("mesh"), dict):
            try:
                await asyncio.to_thread(apply_rotation, *rotation)
            except (OSError, MeshConfigError, WireGuardError) as exc:
                raise RenewalFailed(
                    f"the new certificate serves, but the new mesh key is not in use: {exc}"
                ) from None
        if config.update is not None:  # the registry's read-only credentials renew with the certificate
            try:
                store_renewed(config.update.registry_credentials, answer.get("settings"))
            except (ReleaseError, OSError) as exc:
                raise RenewalFailed(f"the new certificate serves, not the registry access: {exc}") from None
        renewal = self.status.renewal
        renewal.failures, renewal.last_error, renewal.last_success = 0, "", self.clock()
        self.status.certificate_not_after = certificate.not_valid_after_utc.timestamp()
        log.info(
            "renewed the certificate of %s: valid until %s UTC",
            config.identity,
            f"{certificate.not_valid_after_utc:%Y-%m-%d %H:%M:%S}",
        )
        return certificate

    def _store(self, cert: bytes, key: bytes, ca: bytes) -> None:
        """The new pair (crash-safe, see agent.certs), then the CA bundle if it changed."""
        config = self.config
        try:
            store_pair(config.tls_cert, config.tls_key, cert, key)
            if ca != config.ca.read_bytes():
                write_atomically(config.ca, ca, 0o644)
        except OSError as exc:
            raise RenewalFailed(f"cannot write the new certificate: {exc}") from None

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
        connector = aiohttp.TCPConnector(ssl=ssl_context(self.config.orchestrator_ca))
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout, connector=connector) as session,
                session.post(self.url, json=body, allow_redirects=False) as response,
            ):
                raw = await response.content.read(MAX_ANSWER_BYTES)
                status = response.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RenewalFailed(
                f"the orchestrator at {self.url} did not answer: {exc or type(exc).__name__}"
            ) from None
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if status != 200 or not isinstance(answer, dict):
            error = answer.get("error") if isinstance(answer, dict) else None
            message = (
                error.get("message") if isinstance(error, dict) else raw[:200].decode("utf-8", "replace")
            )
            raise RenewalFailed(f"the orchestrator refused the renewal ({status}): {message}")
        return answer


def start_renewal(
    config: AgentConfig, status: AgentStatus, serving: ServingCertificate
) -> asyncio.Task[None] | None:
    """The renewal loop as a task of the running loop, or None when orchestrator_url is not set."""
    if not config.orchestrator_url:
        log.info("certificate renewal is off: no orchestrator_url in the configuration")
        return None
    return asyncio.create_task(Renewer(config, status, serving).run(), name="certificate-renewal")
